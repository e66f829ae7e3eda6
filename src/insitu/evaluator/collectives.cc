// Collectives in the evaluator, the in-process communicator and multi-device runs
// (collectives.h).
#include "insitu/evaluator/collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <type_traits>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/module.h"
#include "insitu/support/str.h"

namespace insitu {

using eval::bad_instruction;
using eval::ComputationRunner;
using eval::find_own_attribute;
using eval::own_bool_attribute;

DeviceGrid device_grid(const Module& module) {
  return {module.config().replica_count.value_or(1), module.config().num_partitions.value_or(1)};
}

// --- InProcessCommunicator ---------------------------------------------------------------------

StatusOr<std::vector<Literal>> InProcessCommunicator::exchange(int64_t device, std::span<const int64_t> group,
                                                               Literal value, const std::string& what) {
  const std::vector<int64_t> members(group.begin(), group.end());
  const auto found = std::find(members.begin(), members.end(), device);
  INSITU_CHECK(found != members.end()) << "device " << device << " is not in the group it exchanges in";
  const size_t position = static_cast<size_t>(found - members.begin());
  std::unique_lock<std::mutex> lock(mutex_);
  if (failure_) return *failure_;
  const Key key{members, sequence_[{device, members}]++};
  Slot& slot = slots_[key];
  if (slot.values.empty()) {
    slot.values.resize(members.size());
    slot.whats.resize(members.size());
  }
  // Every member checks the others already there; the last to arrive checks everyone.
  for (size_t k = 0; k < members.size(); ++k) {
    if (!slot.values[k]) continue;
    const Literal& other = *slot.values[k];
    if (slot.whats[k] != what || !(other.shape() == value.shape())) {
      Status mismatch = failed_precondition(
          str_cat("mismatched collectives: device ", device, " is at ", what, " with ", value.shape().to_string(false),
                  " while device ", members[k], " is at ", slot.whats[k], " with ", other.shape().to_string(false),
                  " (the same group {", str_join(members, ","), "}, the same step)"));
      failure_ = mismatch;
      changed_.notify_all();
      return mismatch;
    }
  }
  slot.values[position] = std::move(value);
  slot.whats[position] = what;
  ++slot.arrived;
  changed_.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
  while (slot.arrived < static_cast<int64_t>(members.size()) && !failure_) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && slot.arrived < static_cast<int64_t>(members.size()) &&
        !failure_) {
      std::vector<int64_t> missing;
      for (size_t k = 0; k < members.size(); ++k)
        if (!slot.values[k]) missing.push_back(members[k]);
      Status timeout = resource_exhausted(str_cat("collective timed out: device ", device, " waited ", timeout_seconds_,
                                                  " s at ", what, " for device(s) ", str_join(missing, ","),
                                                  " of group {", str_join(members, ","), "}, which never arrived"));
      failure_ = timeout;
      changed_.notify_all();
      return timeout;
    }
  }
  if (failure_) return *failure_;
  std::vector<Literal> values;
  values.reserve(members.size());
  for (const std::optional<Literal>& member_value : slot.values) values.push_back(*member_value);
  if (++slot.left == static_cast<int64_t>(members.size())) slots_.erase(key);
  return values;
}

namespace {

template <typename T>
void fold_into(T* acc, const T* value, int64_t count, Opcode combiner) {
  for (int64_t i = 0; i < count; ++i) {
    switch (combiner) {
      case Opcode::kAdd:
        if constexpr (std::is_integral_v<T>) {
          acc[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(acc[i]) + static_cast<std::make_unsigned_t<T>>(value[i]));
        } else {
          acc[i] = acc[i] + value[i];
        }
        break;
      case Opcode::kMultiply:
        if constexpr (std::is_integral_v<T>) {
          acc[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(acc[i]) * static_cast<std::make_unsigned_t<T>>(value[i]));
        } else {
          acc[i] = acc[i] * value[i];
        }
        break;
      case Opcode::kMaximum: acc[i] = maximum_value(acc[i], value[i]); break;  // the evaluator's (NaN, -0)
      case Opcode::kMinimum: acc[i] = minimum_value(acc[i], value[i]); break;
      case Opcode::kAnd:
        if constexpr (std::is_integral_v<T>) acc[i] = static_cast<T>(acc[i] & value[i]);
        break;
      case Opcode::kOr:
        if constexpr (std::is_integral_v<T>) acc[i] = static_cast<T>(acc[i] | value[i]);
        break;
      default: break;
    }
  }
}

template <typename Fn>
bool with_native_type(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kF32: fn(float{}); return true;
    case PrimitiveType::kF64: fn(double{}); return true;
    case PrimitiveType::kS32: fn(int32_t{}); return true;
    case PrimitiveType::kS64: fn(int64_t{}); return true;
    case PrimitiveType::kU32: fn(uint32_t{}); return true;
    case PrimitiveType::kU64: fn(uint64_t{}); return true;
    default: return false;
  }
}

}  // namespace

bool Communicator::supports_all_reduce(PrimitiveType type, Opcode combiner) {
  const bool floating = type == PrimitiveType::kF32 || type == PrimitiveType::kF64;
  switch (combiner) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum: break;
    case Opcode::kAnd:
    case Opcode::kOr:
      if (floating) return false;
      break;
    default: return false;
  }
  return with_native_type(type, [](auto) {});
}

Status Communicator::all_reduce_in_place(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                         Opcode combiner, uint8_t* data, int64_t count, const std::string& what) {
  if (!supports_all_reduce(type, combiner))
    return unimplemented(str_cat(what, ": no native all-reduce of ", primitive_type_name(type), " with ",
                                 opcode_name(combiner)));
  Literal mine(Shape::array(type, {count}));
  std::memcpy(mine.untyped_data(), data, mine.size_bytes());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  with_native_type(type, [&](auto zero) {
    using T = decltype(zero);
    T* acc = reinterpret_cast<T*>(data);
    std::memcpy(acc, all[0].untyped_data(), all[0].size_bytes());
    for (size_t k = 1; k < all.size(); ++k)
      fold_into(acc, reinterpret_cast<const T*>(all[k].untyped_data()), count, combiner);
  });
  return ok_status();
}

void InProcessCommunicator::abort(int64_t device, const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_) {
    failure_ = Status(status.code(), str_cat("device ", device, " failed, so its collectives cannot complete: ",
                                             status.message()));
  }
  changed_.notify_all();
}

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

// --- the collective instructions ----------------------------------------------------------------

namespace {

// Piece `k` of `count` equal pieces of `value` along `dimension`.
Literal piece(const Literal& value, int64_t dimension, int64_t count, int64_t k) {
  const Shape& shape = value.shape();
  std::vector<int64_t> dims = shape.dimensions();
  const int64_t width = byte_width(shape.element_type());
  int64_t outer = 1, inner = width;
  for (int64_t d = 0; d < dimension; ++d) outer *= dims[d];
  for (int64_t d = dimension + 1; d < static_cast<int64_t>(dims.size()); ++d) inner *= dims[d];
  const int64_t size = dims[dimension] / count;
  dims[dimension] = size;
  Literal out(Shape::array(shape.element_type(), dims));
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.untyped_data() + o * size * inner,
                value.untyped_data() + (o * dims[dimension] * count + k * size) * inner, static_cast<size_t>(size * inner));
  return out;
}

// `values` joined along `dimension` (equal shapes but there).
Literal join(const std::vector<Literal>& values, int64_t dimension) {
  const Shape& shape = values.front().shape();
  std::vector<int64_t> dims = shape.dimensions();
  const int64_t width = byte_width(shape.element_type());
  int64_t outer = 1, inner = width;
  for (int64_t d = 0; d < dimension; ++d) outer *= dims[d];
  for (int64_t d = dimension + 1; d < static_cast<int64_t>(dims.size()); ++d) inner *= dims[d];
  const int64_t size = dims[dimension];
  dims[dimension] = size * static_cast<int64_t>(values.size());
  Literal out(Shape::array(shape.element_type(), dims));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < values.size(); ++k)
      std::memcpy(out.untyped_data() + (o * dims[dimension] + static_cast<int64_t>(k) * size) * inner,
                  values[k].untyped_data() + o * size * inner, static_cast<size_t>(size * inner));
  return out;
}

// to_apply folded over `values` element by element, in order.
StatusOr<Literal> fold(const Instruction& instruction, const std::vector<Literal>& values, ComputationRunner& runner) {
  Literal acc = values.front();
  const PrimitiveType type = acc.shape().element_type();
  const int64_t width = byte_width(type);
  Literal a(Shape::scalar(type)), b(Shape::scalar(type));
  const Literal* arguments[] = {&a, &b};
  for (size_t k = 1; k < values.size(); ++k) {
    for (int64_t e = 0; e < acc.element_count(); ++e) {
      std::memcpy(a.untyped_data(), acc.untyped_data() + e * width, width);
      std::memcpy(b.untyped_data(), values[k].untyped_data() + e * width, width);
      INSITU_ASSIGN_OR_RETURN(Literal r, runner.run(*instruction.to_apply(), arguments));
      if (!(r.shape() == Shape::scalar(type)))
        return bad_instruction(instruction, str_cat("to_apply must return one ", primitive_type_name(type), " scalar"));
      std::memcpy(acc.untyped_data() + e * width, r.untyped_data(), width);
    }
  }
  return acc;
}

StatusOr<int64_t> one_dimension(const Instruction& instruction, const Literal& operand) {
  return collective_dimension(instruction, operand.shape());
}

}  // namespace

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

Status Communicator::all_gather(int64_t device, std::span<const int64_t> group, const uint8_t* in, int64_t bytes,
                                uint8_t* out, const std::string& what) {
  Literal mine(Shape::array(PrimitiveType::kU8, {bytes}));
  if (bytes > 0) std::memcpy(mine.untyped_data(), in, static_cast<size_t>(bytes));
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  for (size_t k = 0; k < all.size(); ++k)
    if (bytes > 0) std::memcpy(out + k * bytes, all[k].untyped_data(), static_cast<size_t>(bytes));
  return ok_status();
}

bool is_collective_opcode(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kReplicaId:
    case Opcode::kPartitionId: return true;
    default: return false;
  }
}

StatusOr<Literal> evaluate_collective(const Instruction& instruction, std::span<const Literal* const> operands,
                                      const DeviceContext* device, ComputationRunner& runner) {
  // The async pairs: -start does the work and holds (operands, result, contexts...); -done
  // forwards its result.
  if (instruction.opcode() == Opcode::kAllGatherDone || instruction.opcode() == Opcode::kCollectivePermuteDone) {
    if (operands.size() != 1 || !operands[0]->shape().is_tuple() || operands[0]->shape().tuple_size() < 2)
      return bad_instruction(instruction, "takes the tuple its -start made");
    return operands[0]->element(1);
  }
  const bool start = instruction.opcode() == Opcode::kAllGatherStart || instruction.opcode() == Opcode::kCollectivePermuteStart;
  const Opcode opcode = instruction.opcode() == Opcode::kAllGatherStart          ? Opcode::kAllGather
                        : instruction.opcode() == Opcode::kCollectivePermuteStart ? Opcode::kCollectivePermute
                                                                                  : instruction.opcode();
  const bool start_shaped = instruction.shape().is_tuple() && instruction.shape().tuple_size() >= 2;
  // The shape the collective itself produces: a -start's element 1.
  const Shape& result_shape = start && start_shaped ? instruction.shape().tuple_shapes()[1] : instruction.shape();
  DeviceContext alone;  // no context: this device alone, in the grid its module says
  if (device == nullptr) {
    if (instruction.parent() != nullptr && instruction.parent()->parent() != nullptr)
      alone.grid = device_grid(*instruction.parent()->parent());
    device = &alone;
  }
  if (opcode == Opcode::kReplicaId) return Literal::scalar<uint32_t>(static_cast<uint32_t>(device->replica()));
  if (opcode == Opcode::kPartitionId) return Literal::scalar<uint32_t>(static_cast<uint32_t>(device->partition()));
  if (opcode == Opcode::kAllReduceDone) return *operands[0];  // all-reduce-start did the work
  // Every attribute kept for a collective is read here, or refused (never ignored).
  for (const RawAttribute& attribute : instruction.extra_attributes) {
    static const char* const kRead[] = {"replica_groups", "channel_id",          "use_global_device_ids",
                                        "dimensions",     "source_target_pairs", "constrain_layout"};
    if (std::find(std::begin(kRead), std::end(kRead), attribute.key) == std::end(kRead))
      return bad_instruction(instruction, str_cat(attribute.key, "=", attribute.value, " is not supported yet"));
  }
  if (device->communicator == nullptr && device->grid.devices() > 1)
    return bad_instruction(instruction, str_cat("the module runs on ", device->grid.devices(),
                                                " devices: run every device (insitu run does) for its collectives"));
  INSITU_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> groups, collective_device_groups(instruction, device->grid));
  const std::vector<int64_t>* mine = nullptr;
  for (const std::vector<int64_t>& group : groups)
    if (std::find(group.begin(), group.end(), device->device) != group.end()) mine = &group;
  std::vector<int64_t> self{device->device};
  if (opcode != Opcode::kCollectivePermute && mine == nullptr)
    return bad_instruction(instruction, str_cat("device ", device->device, " is in none of its replica_groups"));
  const std::vector<int64_t>& group = mine != nullptr ? *mine : self;
  const int64_t size = static_cast<int64_t>(group.size());
  const int64_t position = std::find(group.begin(), group.end(), device->device) - group.begin();
  const std::string what = str_cat(opcode_name(opcode), " %", instruction.name());
  if (operands.empty()) return bad_instruction(instruction, "needs at least one operand");
  for (const Literal* operand : operands)
    if (!operand->shape().is_array()) return bad_instruction(instruction, "takes arrays, not tuples or tokens");
  const bool reduces = opcode == Opcode::kAllReduce || opcode == Opcode::kAllReduceStart || opcode == Opcode::kReduceScatter;
  if (find_own_attribute(instruction, "dimensions") != nullptr)  // read (and checked) before any exchange
    for (const Literal* operand : operands) INSITU_RETURN_IF_ERROR(one_dimension(instruction, *operand).status());
  if (reduces && instruction.called_computations().empty()) return bad_instruction(instruction, "needs to_apply");

  // Every member's operands, in group order: one exchange of a tuple of them.
  auto gather = [&](std::span<const int64_t> members) -> StatusOr<std::vector<Literal>> {
    std::vector<Literal> mine_values;
    for (const Literal* operand : operands) mine_values.push_back(*operand);
    Literal bundle = Literal::tuple(std::move(mine_values));
    if (members.size() == 1) return std::vector<Literal>{std::move(bundle)};
    return device->communicator->exchange(device->device, members, std::move(bundle), what);
  };
  auto results = [&](std::vector<Literal> values) -> Literal {
    return result_shape.is_tuple() ? Literal::tuple(std::move(values)) : std::move(values.front());
  };

  auto compute = [&]() -> StatusOr<Literal> {
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kReduceScatter: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) {
        std::vector<Literal> values;
        for (Literal& member : all) values.push_back(member.element(static_cast<int64_t>(i)));
        INSITU_ASSIGN_OR_RETURN(Literal reduced, fold(instruction, values, runner));
        if (opcode == Opcode::kReduceScatter) {
          INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, reduced));
          if (reduced.shape().dimension(dimension) % size != 0)
            return bad_instruction(instruction, str_cat("dimension ", dimension, " (", reduced.shape().dimension(dimension),
                                                        ") does not split into ", size, " pieces"));
          reduced = piece(reduced, dimension, size, position);
        }
        out.push_back(std::move(reduced));
      }
      return results(std::move(out));
    }
    case Opcode::kAllGather: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) {
        INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, *operands[i]));
        std::vector<Literal> values;
        for (Literal& member : all) values.push_back(member.element(static_cast<int64_t>(i)));
        out.push_back(join(values, dimension));
      }
      return results(std::move(out));
    }
    case Opcode::kAllToAll: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      if (find_own_attribute(instruction, "dimensions") != nullptr) {  // one array, split and joined
        INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, *operands[0]));
        if (operands.size() != 1 || operands[0]->shape().dimension(dimension) % size != 0)
          return bad_instruction(instruction, str_cat("needs one operand whose dimension ", dimension, " splits into ",
                                                      size, " pieces"));
        std::vector<Literal> pieces;
        for (Literal& member : all) pieces.push_back(piece(member.element(0), dimension, size, position));
        return join(pieces, dimension);
      }
      if (static_cast<int64_t>(operands.size()) != size)  // tuple form: operand j goes to member j
        return bad_instruction(instruction, str_cat("has ", operands.size(), " operands for a group of ", size));
      std::vector<Literal> out;
      for (Literal& member : all) out.push_back(member.element(position));
      return results(std::move(out));
    }
    case Opcode::kCollectiveBroadcast: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) out.push_back(all.front().element(static_cast<int64_t>(i)));
      return results(std::move(out));
    }
    case Opcode::kCollectivePermute: {
      // Pairs name replica ids (no channel_id) or partition ids (with one); the exchange runs
      // over every device those ids can reach from here.
      const RawAttribute* pairs_text = find_own_attribute(instruction, "source_target_pairs");
      if (pairs_text == nullptr) return bad_instruction(instruction, "needs source_target_pairs");
      if (operands.size() != 1) return bad_instruction(instruction, "with more than one operand is not supported yet");
      Reader reader(instruction, "source_target_pairs", pairs_text->value);
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
      const bool by_partition = find_own_attribute(instruction, "channel_id") != nullptr;
      const int64_t count = by_partition ? device->grid.partitions : device->grid.replicas;
      const int64_t me = by_partition ? device->partition() : device->replica();
      auto device_of = [&](int64_t id) {
        return by_partition ? device->replica() * device->grid.partitions + id : id * device->grid.partitions + device->partition();
      };
      for (const auto& [source, target] : pairs)
        if (source < 0 || source >= count || target < 0 || target >= count)
          return bad_instruction(instruction, str_cat("source_target_pairs name id ", source < 0 || source >= count ? source : target,
                                                      " of ", count));
      std::vector<int64_t> domain;
      for (int64_t id = 0; id < count; ++id) domain.push_back(device_of(id));
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(domain));
      for (const auto& [source, target] : pairs)
        if (target == me) return all[source].element(0);
      Literal zeros(operands[0]->shape());  // XLA: a device no pair targets gets zeros
      return zeros;
    }
    default: break;
  }
  return bad_instruction(instruction, "is not a collective insitu runs");
  };
  INSITU_ASSIGN_OR_RETURN(Literal result, compute());
  if (!start) return result;
  if (!start_shaped) return bad_instruction(instruction, "must have a tuple shape (operands, result, ...)");
  // (operands, result, contexts...): the operands as the shape holds them (one array or a tuple),
  // the contexts (u32 scalars) zero.
  const Shape& shape = instruction.shape();
  std::vector<Literal> parts;
  if (shape.tuple_shapes()[0].is_tuple()) {
    std::vector<Literal> inputs;
    for (const Literal* operand : operands) inputs.push_back(*operand);
    parts.push_back(Literal::tuple(std::move(inputs)));
  } else {
    parts.push_back(*operands[0]);
  }
  parts.push_back(std::move(result));
  for (size_t i = 2; i < shape.tuple_shapes().size(); ++i) parts.push_back(Literal(shape.tuple_shapes()[i]));
  return Literal::tuple(std::move(parts));
}

// --- multi-device runs ------------------------------------------------------------------------------

StatusOr<std::vector<Literal>> evaluate_devices(const Module& module, std::span<const std::vector<Literal>> arguments,
                                                const EvaluatorOptions& options, double timeout_seconds) {
  const DeviceGrid grid = device_grid(module);
  if (static_cast<int64_t>(arguments.size()) != grid.devices())
    return invalid_argument(str_cat("module ", module.name(), " runs on ", grid.devices(), " device(s) (", grid.replicas,
                                    " replica(s) x ", grid.partitions, " partition(s)); got arguments for ",
                                    arguments.size()));
  InProcessCommunicator communicator(timeout_seconds);
  std::vector<std::optional<StatusOr<Literal>>> results(arguments.size());
  std::mutex first_mutex;
  std::optional<Status> first_failure;
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < grid.devices(); ++d) {
    threads.emplace_back([&, d] {
      DeviceContext context{&communicator, grid, d};
      EvaluatorOptions mine = options;
      mine.device = &context;
      StatusOr<Literal> result = evaluate_module(module, arguments[d], mine);
      if (!result.ok()) {
        {
          std::lock_guard<std::mutex> lock(first_mutex);
          if (!first_failure) first_failure = result.status();
        }
        communicator.abort(d, result.status());
      }
      results[d] = std::move(result);
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (first_failure) return *first_failure;
  std::vector<Literal> values;
  for (auto& result : results) values.push_back(std::move(*result).value());
  return values;
}

}  // namespace insitu
