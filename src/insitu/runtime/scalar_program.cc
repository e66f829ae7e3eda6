// Scalar programs on typed registers: a sort comparator or reduce combiner made only of
// compare, select, and/or/xor/not, add/subtract/multiply/divide/remainder/power/maximum/minimum,
// negate, abs, sign, converts, the floating-point functions (exp, log, log1p, tanh, ...:
// with_float_unary's) and same-width bitcasts (XLA's total-order comparators: f32 -> s32) over
// f32, f64, s32, s64 and pred runs as a straight list of register operations, one switch per op
// and no memory but its registers. (Anything else in the computation keeps the loop-fusion
// planner's one-element path in fusion_kernels.cc.)
//
// Each op computes exactly what the native elementwise kernel computes for one element, with the
// same element functions (element_arithmetic.h, element_compute.h), so results stay bit for bit
// the evaluator's; tests/runtime/program_kernels_test.cc checks sorts and reduces end to end.
#include <cstring>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

union Register {
  float f32;
  double f64;
  int32_t s32;
  int64_t s64;
  bool pred;
  uint64_t bits;
};

enum class Kind : uint8_t { kF32, kF64, kS32, kS64, kPred };

bool kind_of(PrimitiveType type, Kind& kind) {
  switch (type) {
    case PrimitiveType::kF32: kind = Kind::kF32; return true;
    case PrimitiveType::kF64: kind = Kind::kF64; return true;
    case PrimitiveType::kS32: kind = Kind::kS32; return true;
    case PrimitiveType::kS64: kind = Kind::kS64; return true;
    case PrimitiveType::kPred: kind = Kind::kPred; return true;
    default: return false;
  }
}

int64_t width_of(Kind kind) {
  switch (kind) {
    case Kind::kF32: case Kind::kS32: return 4;
    case Kind::kF64: case Kind::kS64: return 8;
    case Kind::kPred: return 1;
  }
  return 0;
}

struct Op {
  Opcode opcode = Opcode::kParameter;
  Kind kind = Kind::kF32;           // the result's (for compare: the operands')
  Kind from = Kind::kF32;           // kConvert: the operand's
  int a = -1, b = -1, c = -1;       // operand registers
  int64_t parameter = -1;           // kParameter: the argument it reads
  ComparisonDirection direction = ComparisonDirection::kEq;
  bool total_order = false;
  // A floating-point unary function (exp, log, tanh, ...: with_float_unary's, the kernels' own).
  float (*unary_f32)(float) = nullptr;
  double (*unary_f64)(double) = nullptr;
};

struct RegisterProgram final : KernelPlan {
  bool is_register_program() const override { return true; }
  std::vector<Op> ops;               // one per register, in order
  std::vector<Register> constants;   // initial register values (constants; others unused)
  std::vector<int> outputs;          // registers of the root's leaves
};

template <typename T>
T& as(Register& r) {
  if constexpr (std::is_same_v<T, float>) return r.f32;
  else if constexpr (std::is_same_v<T, double>) return r.f64;
  else if constexpr (std::is_same_v<T, int32_t>) return r.s32;
  else if constexpr (std::is_same_v<T, int64_t>) return r.s64;
  else return r.pred;
}

template <typename Fn>
void with_type(Kind kind, Fn&& fn) {
  switch (kind) {
    case Kind::kF32: fn(float{}); break;
    case Kind::kF64: fn(double{}); break;
    case Kind::kS32: fn(int32_t{}); break;
    case Kind::kS64: fn(int64_t{}); break;
    case Kind::kPred: fn(bool{}); break;
  }
}

void execute(const Op& op, Register* regs, Register& out) {
  if (op.opcode == Opcode::kBitcastConvert || op.opcode == Opcode::kBitcast) {
    out = regs[op.a];  // same width (checked when planned): the bits, read as the result's type
    return;
  }
  if (op.unary_f32 != nullptr) {
    out.f32 = op.unary_f32(regs[op.a].f32);
    return;
  }
  if (op.unary_f64 != nullptr) {
    out.f64 = op.unary_f64(regs[op.a].f64);
    return;
  }
  if (op.opcode == Opcode::kConvert) {
    with_type(op.from, [&](auto from) {
      with_type(op.kind, [&](auto to) {
        using From = decltype(from);
        using To = decltype(to);
        as<To>(out) = convert_value<To>(as<From>(regs[op.a]));
      });
    });
    return;
  }
  with_type(op.kind, [&](auto tag) {
    using T = decltype(tag);
    switch (op.opcode) {
      case Opcode::kCompare: {
        const T x = as<T>(regs[op.a]), y = as<T>(regs[op.b]);
        if constexpr (std::is_floating_point_v<T>) {
          out.pred = op.total_order ? compare_keys(op.direction, total_order_key(x), total_order_key(y))
                                    : compare_keys(op.direction, x, y);
        } else {
          out.pred = compare_keys(op.direction, x, y);
        }
        return;
      }
      case Opcode::kSelect: as<T>(out) = regs[op.a].pred ? as<T>(regs[op.b]) : as<T>(regs[op.c]); return;
      default: break;
    }
    const T x = as<T>(regs[op.a]);
    if constexpr (std::is_same_v<T, bool>) {
      switch (op.opcode) {
        case Opcode::kAnd: out.pred = x & regs[op.b].pred; return;
        case Opcode::kOr: out.pred = x | regs[op.b].pred; return;
        case Opcode::kXor: out.pred = x ^ regs[op.b].pred; return;
        default: out.pred = !x; return;  // kNot
      }
    } else {
      switch (op.opcode) {
        case Opcode::kAnd:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(x & as<T>(regs[op.b]));
          return;
        case Opcode::kOr:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(x | as<T>(regs[op.b]));
          return;
        case Opcode::kXor:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(x ^ as<T>(regs[op.b]));
          return;
        case Opcode::kNot:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(~x);
          return;
        case Opcode::kAdd:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(as_unsigned(x) + as_unsigned(as<T>(regs[op.b])));
          else as<T>(out) = x + as<T>(regs[op.b]);
          return;
        case Opcode::kSubtract:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(as_unsigned(x) - as_unsigned(as<T>(regs[op.b])));
          else as<T>(out) = x - as<T>(regs[op.b]);
          return;
        case Opcode::kMultiply:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(as_unsigned(x) * as_unsigned(as<T>(regs[op.b])));
          else as<T>(out) = x * as<T>(regs[op.b]);
          return;
        case Opcode::kDivide: as<T>(out) = divide_value(x, as<T>(regs[op.b])); return;
        case Opcode::kRemainder: as<T>(out) = remainder_value(x, as<T>(regs[op.b])); return;
        case Opcode::kPower: as<T>(out) = power_value(x, as<T>(regs[op.b])); return;
        case Opcode::kSign: as<T>(out) = sign_value(x); return;
        case Opcode::kMaximum: as<T>(out) = maximum_value(x, as<T>(regs[op.b])); return;
        case Opcode::kMinimum: as<T>(out) = minimum_value(x, as<T>(regs[op.b])); return;
        case Opcode::kNegate:
          if constexpr (std::is_integral_v<T>) as<T>(out) = static_cast<T>(0u - as_unsigned(x));
          else as<T>(out) = -x;
          return;
        case Opcode::kAbs:
          if constexpr (std::is_integral_v<T>) as<T>(out) = x < 0 ? static_cast<T>(0u - as_unsigned(x)) : x;
          else as<T>(out) = std::abs(x);
          return;
        default: return;
      }
    }
  });
}

bool supported(const Instruction& instruction, Kind kind) {
  switch (instruction.opcode()) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kNot: return kind == Kind::kPred || kind == Kind::kS32 || kind == Kind::kS64;
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kNegate:
    case Opcode::kAbs:
    case Opcode::kDivide:
    case Opcode::kRemainder:
    case Opcode::kPower:
    case Opcode::kSign: return kind != Kind::kPred;
    case Opcode::kSelect: return true;
    case Opcode::kConvert: {
      Kind from;
      return kind_of(instruction.operand(0)->shape().element_type(), from);
    }
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert: {
      Kind from;
      return kind != Kind::kPred && kind_of(instruction.operand(0)->shape().element_type(), from) &&
             from != Kind::kPred && width_of(from) == width_of(kind);
    }
    case Opcode::kCompare: {
      const ComparisonType type = instruction.comparison_type;
      if (kind == Kind::kPred) return false;
      if (kind == Kind::kS32 || kind == Kind::kS64) return type == ComparisonType::kDefault || type == ComparisonType::kSigned;
      return type == ComparisonType::kDefault || type == ComparisonType::kFloat || type == ComparisonType::kTotalOrder;
    }
    default: return false;
  }
}

}  // namespace

KernelPlanPtr plan_register_program(const Computation& computation) {
  auto program = std::make_unique<RegisterProgram>();
  std::vector<std::pair<const Instruction*, int>> registers;
  auto register_of = [&](const Instruction* instruction) {
    for (const auto& [key, value] : registers)
      if (key == instruction) return value;
    return -1;
  };
  for (const Instruction* instruction : computation.instructions()) {
    if (instruction == computation.root() && instruction->opcode() == Opcode::kTuple) {
      for (const Instruction* operand : instruction->operands()) {
        const int source = register_of(operand);
        if (source < 0) return nullptr;
        program->outputs.push_back(source);
      }
      break;
    }
    const Shape& shape = instruction->shape();
    if (!shape.is_array() || shape.rank() != 0) return nullptr;
    Op op;
    op.opcode = instruction->opcode();
    Register constant{};
    if (!kind_of(shape.element_type(), op.kind)) return nullptr;
    if (op.opcode == Opcode::kParameter) {
      op.parameter = instruction->parameter_number;
    } else if (op.opcode == Opcode::kConstant) {
      std::memcpy(&constant, instruction->literal.untyped_data(), static_cast<size_t>(width_of(op.kind)));
    } else {
      std::vector<int> sources;
      for (const Instruction* operand : instruction->operands()) {
        sources.push_back(register_of(operand));
        if (sources.back() < 0) return nullptr;
      }
      if (op.opcode == Opcode::kCompare || op.opcode == Opcode::kSelect) {
        // compare works on its operands' type; select on its result's, with a pred first
        Kind operand_kind;
        const Instruction* typed = instruction->operand(op.opcode == Opcode::kCompare ? 0 : 1);
        if (!kind_of(typed->shape().element_type(), operand_kind)) return nullptr;
        if (op.opcode == Opcode::kCompare) op.kind = operand_kind;
      }
      const bool float_unary = (op.kind == Kind::kF32 || op.kind == Kind::kF64) &&
                               with_float_unary(op.opcode, [&](auto function, auto) {
                                 using Function = decltype(function);
                                 op.unary_f32 = [](float v) { return Function{}(v); };
                                 op.unary_f64 = [](double v) { return Function{}(v); };
                               });
      if (float_unary && op.kind == Kind::kF32) op.unary_f64 = nullptr;  // one of the two, by type
      if (float_unary && op.kind == Kind::kF64) op.unary_f32 = nullptr;
      if (!float_unary && !supported(*instruction, op.kind)) return nullptr;
      if (op.opcode == Opcode::kConvert) kind_of(instruction->operand(0)->shape().element_type(), op.from);
      const bool unary = float_unary || op.opcode == Opcode::kNot || op.opcode == Opcode::kNegate ||
                         op.opcode == Opcode::kAbs || op.opcode == Opcode::kSign || op.opcode == Opcode::kConvert ||
                         op.opcode == Opcode::kBitcast || op.opcode == Opcode::kBitcastConvert;
      const size_t arity = op.opcode == Opcode::kSelect ? 3 : unary ? 1 : 2;
      if (sources.size() != arity) return nullptr;
      op.a = sources[0];
      if (arity > 1) op.b = sources[1];
      if (arity > 2) op.c = sources[2];
      op.direction = instruction->comparison_direction;
      op.total_order = instruction->comparison_type == ComparisonType::kTotalOrder;
    }
    registers.emplace_back(instruction, static_cast<int>(program->ops.size()));
    program->ops.push_back(op);
    program->constants.push_back(constant);
  }
  if (program->outputs.empty()) {
    if (program->ops.empty() || computation.root() == nullptr || computation.root()->opcode() == Opcode::kTuple)
      return program->ops.empty() ? nullptr : std::move(program);
    program->outputs.push_back(static_cast<int>(program->ops.size()) - 1);
  }
  return program;
}

bool run_register_program(const KernelPlan& plan, std::span<const uint8_t* const> arguments,
                          std::span<uint8_t* const> results) {
  if (!plan.is_register_program()) return false;
  const RegisterProgram& program = static_cast<const RegisterProgram&>(plan);
  constexpr size_t kInline = 64;
  Register inline_registers[kInline];
  std::vector<Register> heap;
  Register* regs = inline_registers;
  if (program.ops.size() > kInline) {
    heap.resize(program.ops.size());
    regs = heap.data();
  }
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.opcode == Opcode::kParameter) {
      regs[i].bits = 0;
      std::memcpy(&regs[i], arguments[static_cast<size_t>(op.parameter)], static_cast<size_t>(width_of(op.kind)));
    } else if (op.opcode == Opcode::kConstant) {
      regs[i] = program.constants[i];
    } else {
      execute(op, regs, regs[i]);
    }
  }
  for (size_t i = 0; i < program.outputs.size() && i < results.size(); ++i) {
    const Op& op = program.ops[program.outputs[i]];
    const Kind kind = op.opcode == Opcode::kCompare ? Kind::kPred : op.kind;
    std::memcpy(results[i], &regs[program.outputs[i]], static_cast<size_t>(width_of(kind)));
  }
  return true;
}

}  // namespace insitu
