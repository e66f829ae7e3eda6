#include "insitu/ir/opcode.h"

#include <array>
#include <string_view>

namespace insitu {
namespace {

struct OpcodeRow {
  std::string_view name;
  OpcodeKind kind;
  RuntimeFamily family;
  bool side_effect;
  OperandTypes types;
};

constexpr bool kPure = false;
constexpr bool kEffect = true;

constexpr OpcodeRow kOpcodes[] = {
#define INSITU_OPCODE(name, text, kind, family, effect, types) \
  {text, OpcodeKind::kind, RuntimeFamily::family, effect, OperandTypes::types},
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
};

}  // namespace

std::string_view opcode_name(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].name; }
OpcodeKind opcode_kind(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].kind; }
OperandTypes operand_types(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].types; }
RuntimeFamily runtime_family(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].family; }
bool opcode_has_side_effect(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].side_effect; }

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (size_t i = 0; i < std::size(kOpcodes); ++i)
    if (kOpcodes[i].name == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

}  // namespace insitu
