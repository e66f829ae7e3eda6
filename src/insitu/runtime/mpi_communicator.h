// MpiCommunicator: the collectives' Communicator (evaluator/collectives.h) across processes, on
// MPI (OpenMPI from Debian). Each MPI rank is one device: rank r runs device r of the module's
// replica_count x num_partitions grid, so `mpirun -np N insitu run MODULE` runs an N-device
// module with one process per device (on one host or many).
//
// An exchange sends this rank's value to every other member and receives theirs, point to point
// on MPI_COMM_WORLD (no sub-communicator first: creating one blocks until every member comes,
// which a member that never comes would turn into a hang). Before the data, the members exchange a fixed
// header (the collective's name, the value's shape, its size): members at different collectives,
// or with different shapes, get an error naming both. Every MPI call is non-blocking and polled
// against the timeout: a member that never arrives (dead, or stuck elsewhere) ends the exchange
// with an error naming the ranks it waited for. (This is the oracle's path, O(n^2) messages.)
// The runtime's native collectives use MPI's own collectives (in place for all-reduce) over the
// group's communicator (MPI_COMM_WORLD, or one made for the group the first time it is met,
// once the header check has proved every member is there), and point to point between the
// runtime's own buffers otherwise (permute, all-to-all of a tuple).
// A failed rank cannot be waited for: the caller reports its error and calls abort(), which
// ends every rank of the job (MPI_Abort), so nothing hangs.
//
// Built only when CMake finds MPI (INSITU_HAVE_MPI); without it, creating one is an error.
#pragma once

#include <memory>
#include <vector>

#include "insitu/evaluator/collectives.h"

namespace insitu {

// Whether this process was started by an MPI launcher (mpirun/mpiexec set OMPI_COMM_WORLD_SIZE
// or PMI_SIZE).
bool launched_by_mpi();

class MpiCommunicator final : public Communicator {
 public:
  // Initializes MPI (once per process; finalized at exit). An error without MPI in this build.
  static StatusOr<std::unique_ptr<MpiCommunicator>> create(double timeout_seconds);
  ~MpiCommunicator() override;

  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }

  StatusOr<std::vector<Literal>> exchange(int64_t device, std::span<const int64_t> group, Literal value,
                                          const std::string& what) override;
  // Ends the whole MPI job (every rank) with exit status 1: the caller has printed why.
  void abort(int64_t device, const Status& status) override;
  // MPI_Allreduce with MPI_IN_PLACE over the group's communicator, after a timed header
  // exchange proves every member is at this collective with this size; float maximum/minimum
  // (whose NaN rule MPI lacks) and bf16/f16 (no MPI type) through the base class's exchange.
  Status all_reduce_in_place(int64_t device, std::span<const int64_t> group, PrimitiveType type, Opcode combiner,
                             uint8_t* data, int64_t count, const std::string& what) override;
  // MPI_Allgather over the group's communicator (after the same timed header check).
  Status all_gather(int64_t device, std::span<const int64_t> group, const uint8_t* in, int64_t bytes, uint8_t* out,
                    const std::string& what) override;
  // MPI_Reduce_scatter_block over the group (after the header check), with the reductions
  // all_reduce_in_place takes to MPI; else the exchange.
  Status reduce_scatter(int64_t device, std::span<const int64_t> group, PrimitiveType type, Opcode combiner,
                        const uint8_t* in, uint8_t* out, int64_t count, const std::string& what) override;
  // MPI_Alltoall over the group when the pieces are one range each side; else point to point
  // between the pieces themselves (timed, header-checked).
  Status all_to_all(int64_t device, std::span<const int64_t> group, std::span<const uint8_t* const> send,
                    std::span<uint8_t* const> receive, int64_t bytes, const std::string& what) override;
  // MPI_Bcast from the group's first member over the group's communicator (after the header
  // check).
  Status broadcast(int64_t device, std::span<const int64_t> group, uint8_t* data, int64_t bytes,
                   const std::string& what) override;
  // Point to point: to every target, from the source (timed, header-checked).
  Status permute(int64_t device, const PermuteRoute& route, const uint8_t* in, uint8_t* out, int64_t bytes,
                 const std::string& what) override;

 private:
  MpiCommunicator(int64_t rank, int64_t size, double timeout_seconds);
  // The timed header exchange before one of MPI's own collectives: every member of `group` is
  // at `what` (which names the size), or an error naming who is not; after it, the blocking
  // collective cannot wait for a member that never comes.
  Status agree(int64_t device, std::span<const int64_t> group, const std::string& what);
  // The MPI communicator of `group` (members ranked in group order): MPI_COMM_WORLD for every
  // rank in rank order, else made once with MPI_Comm_create_group, which only the members call
  // (so call it after agree(): every member is then here) and kept for the next collective.
  struct GroupCommunicators;
  std::unique_ptr<GroupCommunicators> groups_;
  // Sends `bytes` from each Outgoing to its rank and receives `bytes` into each Incoming from
  // its rank (never this rank), after a header (`label` and the byte count) that each receiver
  // checks: a sender at another collective is an error naming both. Every wait is bounded by the
  // timeout, naming the ranks that did not come; `members` is the group named in errors.
  struct Outgoing {
    int64_t rank;
    const uint8_t* data;
  };
  struct Incoming {
    int64_t rank;
    uint8_t* data;
  };
  Status transfer(std::span<const Outgoing> sends, std::span<const Incoming> receives, int64_t bytes,
                  const std::string& label, const std::string& what, std::span<const int64_t> members);
  int64_t rank_ = 0, size_ = 1;
  double timeout_seconds_;
};

}  // namespace insitu
