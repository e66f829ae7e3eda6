// Collectives: many copies of one program (SPMD) exchanging values, as XLA runs them.
//
// A module runs on replica_count x num_partitions devices (its header says how many; absent
// means 1). Device d is replica d / num_partitions, partition d % num_partitions. Every device
// runs the same entry computation on its own arguments; a collective instruction exchanges
// values among the devices of its group:
//
//   all-reduce          every member gets to_apply folded over the group's values, in group order
//   all-gather          the group's values concatenated along `dimensions`, in group order
//   reduce-scatter      the all-reduce, split along `dimensions`; member k keeps piece k
//   all-to-all          piece j (of `dimensions`, or operand j of a tuple) goes to member j;
//                       member k gets the k-th pieces of every member, in group order
//   collective-permute  the source's value, for each source_target_pairs target; zeros for a
//                       device no pair targets
//   collective-broadcast the group's first member's value
//   replica-id, partition-id  this device's numbers (u32)
//
// Groups follow XLA's GetParticipatingDevicesGroups: replica_groups (a list {{0,1},{2,3}}, an
// iota list [2,2]<=[4] or [2,2]<=[2,2]T(1,0), or Shardy's mesh['x'=2,'y'=2] {'y'}; empty means
// everyone) are read as replica ids without channel_id, as partition ids with channel_id alone,
// as replica ids across all partitions with use_global_device_ids=false, and as device ids with
// use_global_device_ids=true.
//
// The evaluator (the oracle) runs collectives through one primitive, Communicator::exchange:
// every member hands over its value and gets everyone's. InProcessCommunicator is a rendezvous
// of threads (one device per thread: evaluate_devices below, the runtime's in-process
// replicas); an MPI communicator implements the same interface across processes. Errors end a
// collective on every member within a bounded time: a member that failed, a member that never
// arrives (the timeout), two members at different collectives or with different shapes; each
// names the devices and the instruction.
//
// The runtime moves data natively through the communicator's byte-range collectives
// (all_reduce_in_place, all_gather, reduce_scatter, all_to_all, permute; runtime/executor.cc):
// every collective JAX's CPU programs use, and collective-broadcast. Forms whose pieces are not
// byte ranges (an all-gather along an inner dimension) and the legacy all-gather-start and
// collective-permute-start run through the evaluator; the in-place collective-permute (four operands,
// slice_sizes) is refused with a located error.
//
// NCCL (on paper, for the CUDA device): a third Communicator whose all_reduce_in_place is
// ncclAllReduce on the device pointer (in place: sendbuff == recvbuff) on the executable's
// stream, with one ncclComm per group made at create (ncclCommSplit; not lazily, which would
// block like MPI_Comm_create_group). What stays: groups, the header check (through a host-side
// exchange, or skipped with a stated risk), the timeout (ncclCommAbort after polling the
// stream's event), exchange() for the evaluator. What changes: values never come to the host.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/instruction.h"
#include "insitu/ir/literal.h"
#include "insitu/support/status.h"

namespace insitu {

class Module;
namespace eval {
class ComputationRunner;
}

// How many devices a module runs on: replica_count x num_partitions from its header (1 x 1 when
// absent).
struct DeviceGrid {
  int64_t replicas = 1;
  int64_t partitions = 1;
  int64_t devices() const { return replicas * partitions; }
};
DeviceGrid device_grid(const Module& module);

// Where one device's collective-permute sends and receives (device ids): its source_target_pairs
// read in the instruction's id space (replica ids without channel_id, partition ids with one)
// and mapped to the devices of this device's partition (or replica). collective_permute_route
// below computes it.
struct PermuteRoute {
  std::vector<int64_t> domain;   // every device the pairs can name from here, in id order
  std::vector<int64_t> targets;  // the devices this one sends to
  int64_t source = -1;           // the device this one receives from; -1: none (zeros)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Called by every member of `group` (device ids, in group order) with its own `value`; returns
  // every member's value in group order. `what` names the collective for errors ("all-reduce
  // %sum"); two members that call with different `what` or shapes get an error naming both.
  virtual StatusOr<std::vector<Literal>> exchange(int64_t device, std::span<const int64_t> group, Literal value,
                                                  const std::string& what) = 0;
  // Ends every exchange in flight or to come with an error saying `device` failed with `status`
  // (a device that fails must call this, so that the others do not wait for it).
  virtual void abort(int64_t device, const Status& status) = 0;
  // The runtime's native all-reduce: `count` elements of `type` at `data` become `combiner`
  // (add, multiply, maximum, minimum, and, or) folded over the group's arrays, written in place
  // on every member. This default exchanges copies and folds in group order (the evaluator's
  // order, so the same bits); a communicator with a real in-place reduction overrides it
  // (MPI_Allreduce with MPI_IN_PLACE; its order is the library's). Types: supports_all_reduce.
  virtual Status all_reduce_in_place(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                     Opcode combiner, uint8_t* data, int64_t count, const std::string& what);
  static bool supports_all_reduce(PrimitiveType type, Opcode combiner);
  // The runtime's native all-gather of byte strings: `out` gets every member's `bytes` bytes
  // (`in` for this one) back to back in group order. Default: through exchange.
  virtual Status all_gather(int64_t device, std::span<const int64_t> group, const uint8_t* in, int64_t bytes,
                            uint8_t* out, const std::string& what);
  // The runtime's native reduce-scatter: `in` holds group.size() pieces of `count` elements of
  // `type`, back to back; `out` (not overlapping `in`) gets this member's piece (its position in
  // the group) with `combiner` folded over every member's. Default: through exchange, folded in
  // group order (the evaluator's bits). Types and combiners: supports_all_reduce.
  virtual Status reduce_scatter(int64_t device, std::span<const int64_t> group, PrimitiveType type, Opcode combiner,
                                const uint8_t* in, uint8_t* out, int64_t count, const std::string& what);
  // The runtime's native all-to-all of byte strings: send[j] (`bytes` bytes) goes to member j of
  // the group; receive[k] gets member k's piece for this member. One pointer per member, none
  // overlapping a receive. Default: through exchange.
  virtual Status all_to_all(int64_t device, std::span<const int64_t> group, std::span<const uint8_t* const> send,
                            std::span<uint8_t* const> receive, int64_t bytes, const std::string& what);
  // The runtime's native collective-broadcast: `data` (`bytes` bytes) becomes the group's first
  // member's on every member, in place. Default: through exchange.
  virtual Status broadcast(int64_t device, std::span<const int64_t> group, uint8_t* data, int64_t bytes,
                           const std::string& what);
  // The runtime's native collective-permute (route: PermuteRoute, above): `in` (`bytes` bytes) goes
  // to every target, `out` gets the source's, or is left alone when there is none (the caller
  // writes zeros). Default: one exchange over route.domain.
  virtual Status permute(int64_t device, const PermuteRoute& route, const uint8_t* in, uint8_t* out,
                         int64_t bytes, const std::string& what);
};


// One device's place in a run: what the collectives of its program need.
struct DeviceContext {
  Communicator* communicator = nullptr;
  DeviceGrid grid;
  int64_t device = 0;
  int64_t replica() const { return device / grid.partitions; }
  int64_t partition() const { return device % grid.partitions; }
};

// Threads of one process as devices. Exchanges match by group and by how many exchanges each
// member has made in that group before (SPMD programs make the same ones in the same order).
class InProcessCommunicator final : public Communicator {
 public:
  // A member waiting longer than `timeout_seconds` for the rest of its group gets an error
  // naming the devices that did not arrive.
  explicit InProcessCommunicator(double timeout_seconds = 60.0) : timeout_seconds_(timeout_seconds) {}
  StatusOr<std::vector<Literal>> exchange(int64_t device, std::span<const int64_t> group, Literal value,
                                          const std::string& what) override;
  void abort(int64_t device, const Status& status) override;

 private:
  struct Slot {
    std::vector<std::optional<Literal>> values;  // by position in the group
    std::vector<std::string> whats;
    int64_t arrived = 0, left = 0;
  };
  using Key = std::pair<std::vector<int64_t>, int64_t>;  // (group, sequence number in it)
  double timeout_seconds_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Slot> slots_;
  std::map<std::pair<int64_t, std::vector<int64_t>>, int64_t> sequence_;  // (device, group) -> next
  std::optional<Status> failure_;
};

// The collective instructions of the evaluator (ops.h's family): `device` null means a single
// device (a module whose grid is 1 x 1, every group just this device).
StatusOr<Literal> evaluate_collective(const Instruction& instruction, std::span<const Literal* const> operands,
                                      const DeviceContext* device, eval::ComputationRunner& runner);
bool is_collective_opcode(Opcode opcode);  // what evaluate_collective runs: opcode.def's kCollective family
// The one dimension an all-gather, reduce-scatter or all-to-all names (dimensions={d}), checked
// against `operand`'s rank; a located error otherwise.
StatusOr<int64_t> collective_dimension(const Instruction& instruction, const Shape& operand);
// collective-permute's route for `device` (source_target_pairs read, ids checked against the
// grid), or a located error.
StatusOr<PermuteRoute> collective_permute_route(const Instruction& instruction, const DeviceContext& device);

// The groups an instruction's collective runs in, as device ids (see above), or a located
// error for replica_groups insitu cannot read or that do not fit the grid.
StatusOr<std::vector<std::vector<int64_t>>> collective_device_groups(const Instruction& instruction,
                                                                     const DeviceGrid& grid);

// Runs the module on every device of its grid, one thread each, with one InProcessCommunicator:
// arguments[d] are device d's entry arguments; the result d is its entry result. The first
// failure (the device that failed first, not the ones it stopped) is the error.
StatusOr<std::vector<Literal>> evaluate_devices(const Module& module, std::span<const std::vector<Literal>> arguments,
                                                const EvaluatorOptions& options = {}, double timeout_seconds = 60.0);

// `run(context)` for every device of `grid`, one thread each, the contexts sharing one
// InProcessCommunicator: a device that fails aborts the communicator, so the others stop at
// their next collective. The results by device, or the first failure ("device D: ..." where
// `name_device`). evaluate_devices runs the evaluator so; `insitu run` the runtime.
StatusOr<std::vector<Literal>> run_on_device_threads(const DeviceGrid& grid, double timeout_seconds,
                                                     const std::function<StatusOr<Literal>(DeviceContext&)>& run,
                                                     bool name_device = false);

}  // namespace insitu
