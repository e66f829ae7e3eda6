// The attribute table: every instruction attribute insitu's parser accepts, on which opcodes,
// and what insitu does with it. One place, so that no attribute is read and then ignored.
//
// The parser looks every `name=value` up here before reading it (with the opcode): a name not
// in the table, or not for that opcode, is a located error (as in XLA's parser, which rejects
// attributes an opcode does not take). Each rule says how the value is used:
//   - kModelled: read into an Instruction field that the verifier, the evaluator and the
//     runtime honour;
//   - kMetadataOnly: cannot change any value insitu computes (why: `note`); kept, printed back;
//   - kKernelInput: a custom-call's; kept verbatim for the kernel its target names;
//   - kOwn: kept verbatim (extra_attributes) for the opcode's own evaluator function, which
//     reads and checks it (a bad value is a located error there) and which the runtime's kernel
//     shares: topk's k, linalg.h's lower/left_side/..., the collectives' replica_groups and
//     dimensions (collectives.h); an opcode insitu does not run yet keeps its own attributes so
//     that fmt and explain work, and running it is a located "unsupported opcode" error. Making such an
//     opcode runnable changes nothing here: its function starts reading what is kept.
// tests/ir/attribute_table_test.cc walks the table and checks each claim.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "insitu/ir/opcode.h"

namespace insitu {

enum class AttributeUse : uint8_t { kModelled, kMetadataOnly, kKernelInput, kOwn };

struct AttributeRule {
  std::string_view name;
  AttributeUse use;
  std::vector<Opcode> opcodes;  // empty: every opcode
  std::string_view note;        // why metadata-only, or where a modelled value is read
};

std::span<const AttributeRule> attribute_rules();

// The rule for `name` on `opcode`, or nullptr when insitu does not accept it there.
const AttributeRule* find_attribute_rule(Opcode opcode, std::string_view name);

// The opcodes `name` is accepted on (for an error message), empty when it is unknown.
std::vector<Opcode> opcodes_taking_attribute(std::string_view name);


}  // namespace insitu
