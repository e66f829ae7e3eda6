#include "insitu/ir/opcode.h"

#include <array>
#include <string_view>
#include <vector>

namespace insitu {
namespace {

struct OpcodeRow {
  std::string_view name;
  OpcodeKind kind;
  OpFamily family;
  bool side_effect;
  OperandTypes types;
  OperandCount count;
  std::string_view attributes;  // space-separated
};

constexpr OperandCount Exactly0{0, 0}, Exactly1{1, 1}, Exactly2{2, 2}, Exactly3{3, 3}, Exactly5{5, 5};
constexpr OperandCount AtLeast1{1, -1}, AtLeast2{2, -1}, AtLeast3{3, -1}, AnyCount{0, -1};

constexpr bool kPure = false;
constexpr bool kEffect = true;

constexpr OpcodeRow kOpcodes[] = {
#define INSITU_OPCODE(name, text, kind, family, effect, types, count, attributes) \
  {text, OpcodeKind::kind, OpFamily::family, effect, OperandTypes::types, count, attributes},
#include "insitu/ir/opcode.def"
#undef INSITU_OPCODE
};

}  // namespace

std::string_view opcode_name(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].name; }
OpcodeKind opcode_kind(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].kind; }
OperandTypes operand_types(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].types; }
OpFamily op_family(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].family; }
bool opcode_has_side_effect(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].side_effect; }
OperandCount operand_count(Opcode opcode) { return kOpcodes[static_cast<size_t>(opcode)].count; }

std::span<const std::string_view> required_attributes(Opcode opcode) {
  // Split once: the rows' lists as views, per opcode.
  static const std::vector<std::vector<std::string_view>> split = [] {
    std::vector<std::vector<std::string_view>> lists;
    for (const OpcodeRow& row : kOpcodes) {
      std::vector<std::string_view>& names = lists.emplace_back();
      for (std::string_view rest = row.attributes; !rest.empty();) {
        const size_t space = rest.find(' ');
        names.push_back(rest.substr(0, space));
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      }
    }
    return lists;
  }();
  return split[static_cast<size_t>(opcode)];
}

std::optional<Opcode> parse_opcode(std::string_view name) {
  for (size_t i = 0; i < std::size(kOpcodes); ++i)
    if (kOpcodes[i].name == name) return static_cast<Opcode>(i);
  return std::nullopt;
}

}  // namespace insitu
