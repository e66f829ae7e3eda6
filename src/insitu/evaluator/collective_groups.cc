// Reading the collectives' own attributes (collectives.h): replica groups in every spelling and
// XLA's four group modes, dimensions={d}, source_target_pairs.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/collectives.h"
#include "insitu/support/str.h"

namespace insitu {

using eval::bad_instruction;
using eval::ComputationRunner;
using eval::find_own_attribute;
using eval::own_bool_attribute;

// --- groups --------------------------------------------------------------------------------------

namespace {

// A small reader over an own attribute's text, for the error messages' sake located at the
// instruction.
class Reader {
 public:
  Reader(const Instruction& instruction, std::string_view key, std::string_view text)
      : instruction_(instruction), key_(key), text_(text) {}

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool eat(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool eat(std::string_view word) {
    skip_space();
    if (text_.substr(at_, word.size()) == word) {
      at_ += word.size();
      return true;
    }
    return false;
  }
  bool done() {
    skip_space();
    return at_ == text_.size();
  }
  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  StatusOr<int64_t> integer() {
    skip_space();
    size_t end = at_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    if (end == at_) return error("a number");
    const int64_t value = std::stoll(std::string(text_.substr(at_, end - at_)));
    at_ = end;
    return value;
  }
  // '{' n, n, ... '}' or '[' ... ']' (by the opener given).
  StatusOr<std::vector<int64_t>> integers(char open, char close) {
    std::vector<int64_t> values;
    if (!eat(open)) return error(std::string(1, open));
    if (eat(close)) return values;
    do {
      INSITU_ASSIGN_OR_RETURN(int64_t value, integer());
      values.push_back(value);
    } while (eat(','));
    if (!eat(close)) return error(std::string(1, close));
    return values;
  }
  StatusOr<std::string> quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return error("a quoted axis name");
    const char quote = text_[at_];
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return error("the closing quote");
    std::string name(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return name;
  }
  Status error(std::string_view expected) const {
    return bad_instruction(instruction_, str_cat(key_, "=", text_, ": expected ", expected, " at offset ", at_));
  }

 private:
  const Instruction& instruction_;
  std::string_view key_;
  std::string_view text_;
  size_t at_ = 0;
};

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
StatusOr<std::vector<std::vector<int64_t>>> written_groups(const Instruction& instruction) {
  const RawAttribute* attribute = find_own_attribute(instruction, "replica_groups");
  if (attribute == nullptr) return std::vector<std::vector<int64_t>>{};
  Reader reader(instruction, "replica_groups", attribute->value);
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

enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };

StatusOr<GroupMode> group_mode(const Instruction& instruction) {
  const RawAttribute* channel = find_own_attribute(instruction, "channel_id");
  if (channel != nullptr) {  // a positive integer (which channel does not change any value)
    Reader reader(instruction, "channel_id", channel->value);
    StatusOr<int64_t> id = reader.integer();
    if (!id.ok() || !reader.done() || *id <= 0) return reader.error("a positive integer");
  }
  const RawAttribute* global = find_own_attribute(instruction, "use_global_device_ids");
  INSITU_ASSIGN_OR_RETURN(bool flattened, own_bool_attribute(instruction, "use_global_device_ids", false));
  INSITU_RETURN_IF_ERROR(own_bool_attribute(instruction, "constrain_layout", false).status());
  if (channel == nullptr) {
    if (flattened) return bad_instruction(instruction, "use_global_device_ids=true needs a channel_id");
    return GroupMode::kCrossReplica;
  }
  if (global == nullptr) return GroupMode::kCrossPartition;
  return flattened ? GroupMode::kFlattenedId : GroupMode::kCrossReplicaAndPartition;
}

}  // namespace

StatusOr<std::vector<std::vector<int64_t>>> collective_device_groups(const Instruction& instruction,
                                                                     const DeviceGrid& grid) {
  INSITU_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> written, written_groups(instruction));
  INSITU_ASSIGN_OR_RETURN(GroupMode mode, group_mode(instruction));
  const int64_t R = grid.replicas, P = grid.partitions;
  if (written.empty()) {
    if (mode == GroupMode::kFlattenedId)
      return bad_instruction(instruction, "use_global_device_ids=true needs replica_groups (they cannot be empty)");
    std::vector<int64_t> everyone(mode == GroupMode::kCrossPartition ? P : R);
    std::iota(everyone.begin(), everyone.end(), 0);
    written.push_back(std::move(everyone));
  }
  const int64_t id_limit = mode == GroupMode::kCrossPartition ? P : mode == GroupMode::kFlattenedId ? R * P : R;
  for (const std::vector<int64_t>& group : written)
    for (int64_t id : group)
      if (id < 0 || id >= id_limit)
        return bad_instruction(instruction, str_cat("replica_groups name id ", id, ", but the module runs ", R,
                                                    " replica(s) x ", P, " partition(s) (ids 0..", id_limit - 1,
                                                    " here)"));
  std::vector<std::vector<int64_t>> groups;
  for (const std::vector<int64_t>& group : written) {
    switch (mode) {
      case GroupMode::kCrossReplica:
        for (int64_t p = 0; p < P; ++p) {
          std::vector<int64_t> devices;
          for (int64_t r : group) devices.push_back(r * P + p);
          groups.push_back(std::move(devices));
        }
        break;
      case GroupMode::kCrossPartition:
        for (int64_t r = 0; r < R; ++r) {
          std::vector<int64_t> devices;
          for (int64_t p : group) devices.push_back(r * P + p);
          groups.push_back(std::move(devices));
        }
        break;
      case GroupMode::kCrossReplicaAndPartition: {
        std::vector<int64_t> devices;
        for (int64_t r : group)
          for (int64_t p = 0; p < P; ++p) devices.push_back(r * P + p);
        groups.push_back(std::move(devices));
        break;
      }
      case GroupMode::kFlattenedId: groups.push_back(group); break;
    }
  }
  return groups;
}

StatusOr<int64_t> collective_dimension(const Instruction& instruction, const Shape& operand) {
  const RawAttribute* attribute = find_own_attribute(instruction, "dimensions");
  if (attribute == nullptr) return bad_instruction(instruction, "needs dimensions={d}");
  Reader reader(instruction, "dimensions", attribute->value);
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> dims, reader.integers('{', '}'));
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= operand.rank())
    return bad_instruction(instruction, str_cat("dimensions=", attribute->value, " must name one dimension of ",
                                                operand.to_string(false)));
  return dims[0];
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> collective_permute_pairs(const Instruction& instruction) {
  const RawAttribute* text = find_own_attribute(instruction, "source_target_pairs");
  if (text == nullptr) return bad_instruction(instruction, "needs source_target_pairs");
  Reader reader(instruction, "source_target_pairs", text->value);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (!reader.eat('{')) return reader.error("'{'");
  if (!reader.eat('}')) {
    do {
      INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> pair, reader.integers('{', '}'));
      if (pair.size() != 2) return reader.error("{source,target}");
      pairs.emplace_back(pair[0], pair[1]);
    } while (reader.eat(','));
    if (!reader.eat('}')) return reader.error("'}'");
  }
  return pairs;
}

}  // namespace insitu
