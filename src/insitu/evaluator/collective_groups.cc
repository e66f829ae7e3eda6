// Reading the collectives' own attributes (collectives.h): replica groups in every spelling and
// XLA's four group modes, dimensions={d}, source_target_pairs.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/collectives.h"
#include "insitu/ir/replica_groups.h"
#include "insitu/support/str.h"

namespace insitu {

using eval::bad_instruction;
using eval::ComputationRunner;
using eval::find_own_attribute;
using eval::own_bool_attribute;

// --- groups --------------------------------------------------------------------------------------

namespace {

enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };

StatusOr<GroupMode> group_mode(const Instruction& instruction) {
  const RawAttribute* channel = find_own_attribute(instruction, "channel_id");
  if (channel != nullptr) {  // a positive integer (which channel does not change any value)
    AttributeReader reader(instruction, "channel_id", channel->value);
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
  INSITU_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> written, read_replica_groups(instruction));
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
  AttributeReader reader(instruction, "dimensions", attribute->value);
  INSITU_ASSIGN_OR_RETURN(std::vector<int64_t> dims, reader.integers('{', '}'));
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= operand.rank())
    return bad_instruction(instruction, str_cat("dimensions=", attribute->value, " must name one dimension of ",
                                                operand.to_string(false)));
  return dims[0];
}

namespace {

// source_target_pairs={{s,t},...} as written.
StatusOr<std::vector<std::pair<int64_t, int64_t>>> collective_permute_pairs(const Instruction& instruction) {
  const RawAttribute* text = find_own_attribute(instruction, "source_target_pairs");
  if (text == nullptr) return bad_instruction(instruction, "needs source_target_pairs");
  AttributeReader reader(instruction, "source_target_pairs", text->value);
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

}  // namespace

StatusOr<PermuteRoute> collective_permute_route(const Instruction& instruction, const DeviceContext& device) {
  INSITU_ASSIGN_OR_RETURN(auto pairs, collective_permute_pairs(instruction));
  const bool by_partition = find_own_attribute(instruction, "channel_id") != nullptr;
  const int64_t count = by_partition ? device.grid.partitions : device.grid.replicas;
  const int64_t me = by_partition ? device.partition() : device.replica();
  auto device_of = [&](int64_t id) {
    return by_partition ? device.replica() * device.grid.partitions + id : id * device.grid.partitions + device.partition();
  };
  PermuteRoute route;
  for (int64_t id = 0; id < count; ++id) route.domain.push_back(device_of(id));
  std::vector<bool> targeted(count, false), sent(count, false);
  for (const auto& [source, target] : pairs) {
    if (source < 0 || source >= count || target < 0 || target >= count)
      return bad_instruction(instruction, str_cat("source_target_pairs name id ", source < 0 || source >= count ? source : target,
                                                  ", but the module runs ", count, " ",
                                                  by_partition ? "partition(s)" : "replica(s)"));
    // XLA's verifier: each id is a source at most once and a target at most once.
    if (targeted[target] || sent[source])
      return bad_instruction(instruction, str_cat("source_target_pairs name ", targeted[target] ? "target " : "source ",
                                                  targeted[target] ? target : source, " twice"));
    targeted[target] = sent[source] = true;
    if (source == me) route.targets.push_back(device_of(target));
    if (target == me) route.source = device_of(source);
  }
  return route;
}

}  // namespace insitu
