#include "insitu/ir/replica_groups.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>

#include "insitu/support/str.h"

namespace insitu {

Status AttributeReader::error(std::string_view expected) const {
  return invalid_argument(str_cat(opcode_name(instruction_.opcode()), " %", instruction_.name(), ": ", key_, "=", text_,
                                  ": expected ", expected, " at offset ", at_),
                          instruction_.location());
}

namespace {

const RawAttribute* find_attribute(const Instruction& instruction, std::string_view key) {
  for (const RawAttribute& attribute : instruction.extra_attributes)
    if (attribute.key == key) return &attribute;
  return nullptr;
}

Status bad_instruction(const Instruction& instruction, std::string_view message) {
  return invalid_argument(str_cat(opcode_name(instruction.opcode()), " %", instruction.name(), ": ", message),
                          instruction.location());
}

// 0..n-1 shaped as `dimensions`, transposed by `permutation`, flattened.
std::vector<int64_t> iota_transposed(const std::vector<int64_t>& dimensions, const std::vector<int64_t>& permutation) {
  const int64_t rank = static_cast<int64_t>(dimensions.size());
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dimensions[d + 1];
  const int64_t count = std::accumulate(dimensions.begin(), dimensions.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> out;
  out.reserve(count);
  std::vector<int64_t> index(rank, 0);  // over the transposed dimensions
  for (int64_t n = 0; n < count; ++n) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d) linear += index[d] * strides[permutation[d]];
    out.push_back(linear);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dimensions[permutation[d]]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> chunk(const std::vector<int64_t>& ids, int64_t size) {
  std::vector<std::vector<int64_t>> groups;
  for (size_t at = 0; at + size <= ids.size(); at += size) groups.emplace_back(ids.begin() + at, ids.begin() + at + size);
  return groups;
}

// replica_groups as written: a list of groups of ids (empty: not written or {}).
}  // namespace

StatusOr<std::vector<std::vector<int64_t>>> read_replica_groups(const Instruction& instruction) {
  const RawAttribute* attribute = find_attribute(instruction, "replica_groups");
  if (attribute == nullptr) return std::vector<std::vector<int64_t>>{};
  AttributeReader reader(instruction, "replica_groups", attribute->value);
  std::vector<std::vector<int64_t>> groups;
  if (reader.peek() == '{') {  // {{0,1},{2,3}} or {}
    reader.eat('{');
    if (reader.eat('}')) return groups;
    do {
      INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> group, reader.integers('{', '}'));
      groups.push_back(std::move(group));
    } while (reader.eat(','));
    if (!reader.eat('}') || !reader.done()) return reader.error("'}' closing the groups");
    return groups;
  }
  if (reader.peek() == '[') {  // [G,S]<=[dims] or [G,S]<=[dims]T(perm)
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, reader.integers('[', ']'));
    if (shape.size() != 2 || !reader.eat("<=")) return reader.error("[groups,size]<=[dims]");
    INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> dimensions, reader.integers('[', ']'));
    std::vector<int64_t> permutation(dimensions.size());
    std::iota(permutation.begin(), permutation.end(), 0);
    if (reader.eat('T')) {
      INSITU_ASSIGN_OR_RETURN(permutation, reader.integers('(', ')'));
      std::vector<int64_t> sorted = permutation;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d)
        if (sorted[d] != static_cast<int64_t>(d) || sorted.size() != dimensions.size())
          return reader.error("a permutation of the iota dimensions");
    }
    if (!reader.done()) return reader.error("the end");
    const int64_t count = std::accumulate(dimensions.begin(), dimensions.end(), int64_t{1}, std::multiplies<>());
    if (shape[0] < 0 || shape[1] <= 0 || shape[0] * shape[1] != count)
      return reader.error(str_cat("groups x size = ", count, " ids"));
    return chunk(iota_transposed(dimensions, permutation), shape[1]);
  }
  if (reader.eat("mesh")) {  // mesh['x'=2,'y'=2] {'y'}: devices varying over the named axes
    std::vector<std::string> names;
    std::vector<int64_t> sizes;
    if (!reader.eat('[')) return reader.error("'[' after mesh");
    if (!reader.eat(']')) {
      do {
        if (reader.eat("device_ids"))
          return bad_instruction(instruction, str_cat("replica_groups=", attribute->value,
                                                      ": a mesh with device_ids is not supported yet (only the iota mesh)"));
        INSITU_ASSIGN_OR_RETURN(std::string name, reader.quoted());
        if (!reader.eat('=')) return reader.error("'=' after the axis name");
        INSITU_ASSIGN_OR_RETURN(int64_t size, reader.integer());
        names.push_back(std::move(name));
        sizes.push_back(size);
      } while (reader.eat(','));
      if (!reader.eat(']')) return reader.error("']' closing the mesh");
    }
    if (reader.peek() == ',')
      return bad_instruction(instruction, str_cat("replica_groups=", attribute->value,
                                                  ": a mesh with device_ids is not supported yet (only the iota mesh)"));
    std::vector<int64_t> grouped;
    if (!reader.eat('{')) return reader.error("'{' opening the axes");
    if (!reader.eat('}')) {
      do {
        INSITU_ASSIGN_OR_RETURN(std::string name, reader.quoted());
        if (reader.peek() == ':')
          return bad_instruction(instruction, str_cat("replica_groups=", attribute->value,
                                                      ": sub-axes (", name, ":(k)n) are not supported yet"));
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) return reader.error(str_cat("an axis of the mesh, not '", name, "'"));
        grouped.push_back(it - names.begin());
      } while (reader.eat(','));
      if (!reader.eat('}')) return reader.error("'}' closing the axes");
    }
    if (!reader.done()) return reader.error("the end");
    std::vector<int64_t> permutation;
    int64_t size = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d)
      if (std::find(grouped.begin(), grouped.end(), d) == grouped.end()) permutation.push_back(d);
    for (int64_t d : grouped) {
      permutation.push_back(d);
      size *= sizes[d];
    }
    return chunk(iota_transposed(sizes, permutation), size);
  }
  return reader.error("{{...}}, [g,s]<=[...] or mesh[...]");
}

}  // namespace insitu
