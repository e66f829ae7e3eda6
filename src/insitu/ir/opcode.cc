#include "insitu/ir/opcode.h"

#include <array>
#include <string_view>

namespace insitu {
namespace {

constexpr std::string_view kOpcodeNames[] = {
#define INSITU_OPCODE(name, text) text,
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
};

}  // namespace

std::string_view opcode_name(Opcode opcode) { return kOpcodeNames[static_cast<size_t>(opcode)]; }

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (size_t i = 0; i < std::size(kOpcodeNames); ++i)
    if (kOpcodeNames[i] == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

bool is_elementwise_unary(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAbs: case Opcode::kAcos: case Opcode::kAcosh: case Opcode::kAsin:
    case Opcode::kAsinh: case Opcode::kAtan: case Opcode::kAtanh: case Opcode::kCbrt:
    case Opcode::kCeil: case Opcode::kClz: case Opcode::kCos: case Opcode::kCosh:
    case Opcode::kErf: case Opcode::kExp: case Opcode::kExpm1: case Opcode::kFloor:
    case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic: case Opcode::kNegate:
    case Opcode::kNot: case Opcode::kPopulationCount: case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven: case Opcode::kRsqrt: case Opcode::kSign: case Opcode::kSin:
    case Opcode::kSinh: case Opcode::kSqrt: case Opcode::kTan: case Opcode::kTanh:
      return true;
    default:
      return false;
  }
}

bool is_elementwise_binary(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd: case Opcode::kAnd: case Opcode::kAtan2: case Opcode::kCompare:
    case Opcode::kDivide: case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kMulhi:
    case Opcode::kMultiply: case Opcode::kOr: case Opcode::kPower: case Opcode::kRemainder:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic: case Opcode::kShiftRightLogical:
    case Opcode::kSubtract: case Opcode::kXor: case Opcode::kComplex:
      return true;
    default:
      return false;
  }
}

bool is_elementwise(Opcode opcode) {
  if (is_elementwise_unary(opcode) || is_elementwise_binary(opcode)) return true;
  switch (opcode) {
    case Opcode::kSelect: case Opcode::kClamp: case Opcode::kConvert: case Opcode::kReal:
    case Opcode::kImag: case Opcode::kIsFinite: case Opcode::kReducePrecision: case Opcode::kMap:
      return true;
    default:
      return false;
  }
}

}  // namespace insitu
