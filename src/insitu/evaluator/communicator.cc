// The Communicator base class's reductions and gathers (through exchange), and the in-process
// communicator's rendezvous (collectives.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>

#include "insitu/evaluator/collectives.h"
#include "insitu/evaluator/element_arithmetic.h"
#include "insitu/ir/module.h"
#include "insitu/support/str.h"

namespace insitu {

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

// acc[i] = combiner(acc[i], value[i]) in the evaluator's arithmetic (bf16/f16 in f32, rounded
// after every step; integers wrap; maximum/minimum with its NaN and -0 rules): the same bits as
// the evaluator's fold through the reduction computation.
template <typename T>
void fold_into(T* acc, const T* value, int64_t count, Opcode combiner) {
  using C = ComputeType<T>;
  auto combine = [combiner](C a, C b) -> C {
    switch (combiner) {
      case Opcode::kAdd:
        if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(a) + as_unsigned(b));
        else return a + b;
      case Opcode::kMultiply:
        if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(a) * as_unsigned(b));
        else return a * b;
      case Opcode::kMaximum: return maximum_value(a, b);
      case Opcode::kMinimum: return minimum_value(a, b);
      case Opcode::kAnd:
        if constexpr (std::is_integral_v<C>) return static_cast<C>(a & b);
        break;
      case Opcode::kOr:
        if constexpr (std::is_integral_v<C>) return static_cast<C>(a | b);
        break;
      default: break;
    }
    return a;  // not reached: supports_all_reduce refused the combiner
  };
  for (int64_t i = 0; i < count; ++i) acc[i] = to_stored<T>(combine(to_compute(acc[i]), to_compute(value[i])));
}

}  // namespace

bool Communicator::supports_all_reduce(PrimitiveType type, Opcode combiner) {
  const bool floating = is_floating(type);
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
  return dispatch_native_numeric(type, [](auto) {});
}

Status Communicator::all_reduce_in_place(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                         Opcode combiner, uint8_t* data, int64_t count, const std::string& what) {
  if (!supports_all_reduce(type, combiner))
    return unimplemented(str_cat(what, ": no native all-reduce of ", primitive_type_name(type), " with ",
                                 opcode_name(combiner)));
  Literal mine(Shape::array(type, {count}));
  std::memcpy(mine.untyped_data(), data, mine.size_bytes());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  dispatch_native_numeric(type, [&](auto zero) {
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

Status Communicator::all_gather(int64_t device, std::span<const int64_t> group, const uint8_t* in, int64_t bytes,
                                uint8_t* out, const std::string& what) {
  Literal mine(Shape::array(PrimitiveType::kU8, {bytes}));
  if (bytes > 0) std::memcpy(mine.untyped_data(), in, static_cast<size_t>(bytes));
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  for (size_t k = 0; k < all.size(); ++k)
    if (bytes > 0) std::memcpy(out + k * bytes, all[k].untyped_data(), static_cast<size_t>(bytes));
  return ok_status();
}

Status Communicator::reduce_scatter(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                    Opcode combiner, const uint8_t* in, uint8_t* out, int64_t count,
                                    const std::string& what) {
  if (!supports_all_reduce(type, combiner))
    return unimplemented(str_cat(what, ": no native reduce-scatter of ", primitive_type_name(type), " with ",
                                 opcode_name(combiner)));
  const int64_t members = static_cast<int64_t>(group.size());
  const int64_t position = std::find(group.begin(), group.end(), device) - group.begin();
  Literal mine(Shape::array(type, {count * members}));
  std::memcpy(mine.untyped_data(), in, mine.size_bytes());
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  dispatch_native_numeric(type, [&](auto zero) {
    using T = decltype(zero);
    T* acc = reinterpret_cast<T*>(out);
    const int64_t offset = position * count;
    std::memcpy(acc, reinterpret_cast<const T*>(all[0].untyped_data()) + offset, count * sizeof(T));
    for (size_t k = 1; k < all.size(); ++k)
      fold_into(acc, reinterpret_cast<const T*>(all[k].untyped_data()) + offset, count, combiner);
  });
  return ok_status();
}

Status Communicator::all_to_all(int64_t device, std::span<const int64_t> group, std::span<const uint8_t* const> send,
                                std::span<uint8_t* const> receive, int64_t bytes, const std::string& what) {
  const int64_t members = static_cast<int64_t>(group.size());
  const int64_t position = std::find(group.begin(), group.end(), device) - group.begin();
  Literal mine(Shape::array(PrimitiveType::kU8, {bytes * members}));
  for (int64_t j = 0; j < members; ++j)
    if (bytes > 0) std::memcpy(mine.untyped_data() + j * bytes, send[j], static_cast<size_t>(bytes));
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  for (int64_t k = 0; k < members; ++k)
    if (bytes > 0) std::memcpy(receive[k], all[k].untyped_data() + position * bytes, static_cast<size_t>(bytes));
  return ok_status();
}

Status Communicator::broadcast(int64_t device, std::span<const int64_t> group, uint8_t* data, int64_t bytes,
                               const std::string& what) {
  Literal mine(Shape::array(PrimitiveType::kU8, {bytes}));
  if (bytes > 0) std::memcpy(mine.untyped_data(), data, static_cast<size_t>(bytes));
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, group, std::move(mine), what));
  if (bytes > 0) std::memcpy(data, all[0].untyped_data(), static_cast<size_t>(bytes));
  return ok_status();
}

Status Communicator::permute(int64_t device, const PermuteRoute& route, const uint8_t* in, uint8_t* out,
                             int64_t bytes, const std::string& what) {
  Literal mine(Shape::array(PrimitiveType::kU8, {bytes}));
  if (bytes > 0) std::memcpy(mine.untyped_data(), in, static_cast<size_t>(bytes));
  INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, exchange(device, route.domain, std::move(mine), what));
  for (size_t k = 0; k < route.domain.size(); ++k)
    if (route.domain[k] == route.source && bytes > 0) std::memcpy(out, all[k].untyped_data(), static_cast<size_t>(bytes));
  return ok_status();
}

}  // namespace insitu
