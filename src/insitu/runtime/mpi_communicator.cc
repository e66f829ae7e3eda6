// MpiCommunicator (mpi_communicator.h).
#include "insitu/runtime/mpi_communicator.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <thread>

#include "insitu/support/str.h"

#ifdef INSITU_HAVE_MPI
#include <mpi.h>
#endif

namespace insitu {

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

#ifndef INSITU_HAVE_MPI

struct MpiCommunicator::GroupCommunicators {};
MpiCommunicator::MpiCommunicator(int64_t rank, int64_t size, double timeout_seconds)
    : rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}
MpiCommunicator::~MpiCommunicator() = default;
Status MpiCommunicator::agree(int64_t, std::span<const int64_t>, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(double) {
  return unimplemented("this insitu was built without MPI (apt install libopenmpi-dev, then rebuild)");
}
StatusOr<std::vector<Literal>> MpiCommunicator::exchange(int64_t, std::span<const int64_t>, Literal,
                                                         const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
void MpiCommunicator::abort(int64_t, const Status&) { std::exit(1); }
Status MpiCommunicator::all_reduce_in_place(int64_t, std::span<const int64_t>, PrimitiveType, Opcode, uint8_t*,
                                            int64_t, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
Status MpiCommunicator::all_gather(int64_t, std::span<const int64_t>, const uint8_t*, int64_t, uint8_t*,
                                   const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
Status MpiCommunicator::reduce_scatter(int64_t, std::span<const int64_t>, PrimitiveType, Opcode, const uint8_t*,
                                       uint8_t*, int64_t, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
Status MpiCommunicator::all_to_all(int64_t, std::span<const int64_t>, std::span<const uint8_t* const>,
                                   std::span<uint8_t* const>, int64_t, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
Status MpiCommunicator::permute(int64_t, const PermuteRoute&, const uint8_t*, uint8_t*, int64_t, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}
Status MpiCommunicator::broadcast(int64_t, std::span<const int64_t>, uint8_t*, int64_t, const std::string&) {
  return unimplemented("this insitu was built without MPI");
}

#else

struct MpiCommunicator::GroupCommunicators {
  std::map<std::vector<int64_t>, MPI_Comm> made;
  ~GroupCommunicators() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      for (auto& [group, comm] : made) MPI_Comm_free(&comm);
  }
  StatusOr<MPI_Comm> get(std::span<const int64_t> group, int64_t size, const std::string& what) {
    bool world = static_cast<int64_t>(group.size()) == size;
    for (size_t k = 0; world && k < group.size(); ++k) world = group[k] == static_cast<int64_t>(k);
    if (world) return MPI_COMM_WORLD;
    std::vector<int64_t> key(group.begin(), group.end());
    if (auto it = made.find(key); it != made.end()) return it->second;
    std::vector<int> ranks(group.begin(), group.end());
    MPI_Group everyone, members;
    MPI_Comm_group(MPI_COMM_WORLD, &everyone);
    MPI_Group_incl(everyone, static_cast<int>(ranks.size()), ranks.data(), &members);
    MPI_Comm comm = MPI_COMM_NULL;
    constexpr int kCreateTag = 7100;
    const int result = MPI_Comm_create_group(MPI_COMM_WORLD, members, kCreateTag, &comm);
    MPI_Group_free(&members);
    MPI_Group_free(&everyone);
    if (result != MPI_SUCCESS || comm == MPI_COMM_NULL)
      return internal_error(str_cat(what, ": MPI_Comm_create_group failed for group {", str_join(key, ","), "}"));
    made.emplace(std::move(key), comm);
    return comm;
  }
};

MpiCommunicator::MpiCommunicator(int64_t rank, int64_t size, double timeout_seconds)
    : groups_(std::make_unique<GroupCommunicators>()), rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}

namespace {

constexpr int kHeaderBytes = 160;  // what + shape, truncated: enough to name a mismatch

// The leaves of a value as one byte string, and back into a value of the same shape.
std::vector<uint8_t> flatten(const Literal& value) {
  std::vector<uint8_t> bytes;
  value.shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
    if (!leaf.is_array()) return;
    const Literal* part = value.subliteral(index);
    bytes.insert(bytes.end(), part->untyped_data(), part->untyped_data() + part->size_bytes());
  });
  return bytes;
}

Literal unflatten(const Shape& shape, const uint8_t* bytes) {
  Literal value(shape);
  shape.for_each_leaf([&](const Shape& leaf, const ShapeIndex& index) {
    if (!leaf.is_array()) return;
    Literal* part = value.mutable_subliteral(index);
    std::memcpy(part->untyped_data(), bytes, part->size_bytes());
    bytes += part->size_bytes();
  });
  return value;
}

}  // namespace

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(double timeout_seconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      return internal_error("MPI_Init_thread failed");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size, timeout_seconds));
}

MpiCommunicator::~MpiCommunicator() = default;

Status MpiCommunicator::transfer(std::span<const Outgoing> sends, std::span<const Incoming> receives, int64_t bytes,
                                 const std::string& label, const std::string& what, std::span<const int64_t> members) {
  for (int64_t member : members)
    if (member < 0 || member >= size_)
      return failed_precondition(str_cat(what, " needs device ", member, ", but the MPI job has ", size_,
                                         " rank(s): run it with mpirun -np <devices>"));
  if (bytes > static_cast<int64_t>(std::numeric_limits<int>::max()))
    return unimplemented(str_cat(what, ": values over 2 GiB per rank are not supported yet"));
  // Point to point on MPI_COMM_WORLD, every call non-blocking: a member that never comes is a
  // timeout here, never a hang inside MPI. Messages between two ranks match in the order they
  // were sent (MPI's non-overtaking rule), and SPMD ranks reach their shared collectives in the
  // same order; a rank that does not is caught by the header check.
  constexpr int kHeaderTag = 7001, kValueTag = 7002;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
  std::vector<MPI_Request> sent;
  std::vector<int64_t> from;
  for (const Incoming& receive : receives) from.push_back(receive.rank);
  auto wait_all = [&](std::vector<MPI_Request>& requests, const std::vector<int64_t>& ranks, const char* stage) -> Status {
    while (true) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done) return ok_status();
      if (std::chrono::steady_clock::now() > deadline) {
        std::vector<int64_t> missing;
        for (size_t k = 0; k < requests.size(); ++k) {
          int one = 0;
          if (requests[k] != MPI_REQUEST_NULL) MPI_Test(&requests[k], &one, MPI_STATUS_IGNORE);
          if (requests[k] != MPI_REQUEST_NULL && !one && k < ranks.size()) missing.push_back(ranks[k]);
        }
        return resource_exhausted(str_cat("collective timed out: rank ", rank_, " waited ", timeout_seconds_, " s at ",
                                          what, " (", stage, ") for rank(s) ", str_join(missing, ","), " of group {",
                                          str_join(members, ","), "}, which never arrived"));
      }
      std::this_thread::yield();  // MPI_Test drives MPI's progress: no sleeping between calls
    }
  };

  // 1. Headers: the collective's name and shape (`label`), and the byte count to come.
  std::vector<char> header(kHeaderBytes + sizeof(uint64_t), 0);
  std::snprintf(header.data(), kHeaderBytes, "%s", label.c_str());
  const uint64_t byte_count = static_cast<uint64_t>(bytes);
  std::memcpy(header.data() + kHeaderBytes, &byte_count, sizeof byte_count);
  std::vector<std::vector<char>> headers(receives.size(), std::vector<char>(header.size()));
  std::vector<MPI_Request> received(receives.size());
  for (size_t k = 0; k < receives.size(); ++k)
    MPI_Irecv(headers[k].data(), static_cast<int>(header.size()), MPI_CHAR, static_cast<int>(receives[k].rank),
              kHeaderTag, MPI_COMM_WORLD, &received[k]);
  for (const Outgoing& send : sends) {
    sent.emplace_back();
    MPI_Isend(header.data(), static_cast<int>(header.size()), MPI_CHAR, static_cast<int>(send.rank), kHeaderTag,
              MPI_COMM_WORLD, &sent.back());
  }
  INSITU_RETURN_IF_ERROR(wait_all(received, from, "its header"));
  for (size_t k = 0; k < receives.size(); ++k)
    if (std::memcmp(header.data(), headers[k].data(), header.size()) != 0)
      return failed_precondition(str_cat("mismatched collectives: rank ", rank_, " is at ", header.data(), " while rank ",
                                         receives[k].rank, " is at ",
                                         std::string(headers[k].data(), strnlen(headers[k].data(), kHeaderBytes))));

  // 2. The values (none for agree(): the header was the message).
  if (bytes == 0) return wait_all(sent, {}, "sending");
  for (size_t k = 0; k < receives.size(); ++k)
    MPI_Irecv(receives[k].data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(receives[k].rank), kValueTag,
              MPI_COMM_WORLD, &received[k]);
  for (const Outgoing& send : sends) {
    sent.emplace_back();
    MPI_Isend(send.data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(send.rank), kValueTag, MPI_COMM_WORLD,
              &sent.back());
  }
  INSITU_RETURN_IF_ERROR(wait_all(received, from, "its values"));
  return wait_all(sent, {}, "sending");
}

StatusOr<std::vector<Literal>> MpiCommunicator::exchange(int64_t device, std::span<const int64_t> group, Literal value,
                                                         const std::string& what) {
  if (device != rank_)
    return internal_error(str_cat("MPI rank ", rank_, " was asked to exchange as device ", device));
  const std::vector<uint8_t> mine = flatten(value);
  std::vector<Outgoing> sends;
  std::vector<Incoming> receives;
  std::vector<std::vector<uint8_t>> theirs;
  for (int64_t member : group)
    if (member != rank_) theirs.emplace_back(mine.size());
  size_t next = 0;
  for (int64_t member : group) {
    if (member == rank_) continue;
    sends.push_back({member, mine.data()});
    receives.push_back({member, theirs[next++].data()});
  }
  INSITU_RETURN_IF_ERROR(transfer(sends, receives, static_cast<int64_t>(mine.size()),
                                  str_cat(what, " with ", value.shape().to_string(false)), what, group));
  std::vector<Literal> values;
  next = 0;
  for (int64_t member : group) {
    if (member == rank_) {
      values.push_back(value);
    } else {
      values.push_back(unflatten(value.shape(), theirs[next++].data()));
    }
  }
  return values;
}

void MpiCommunicator::abort(int64_t, const Status&) { MPI_Abort(MPI_COMM_WORLD, 1); }

namespace {

// MPI's datatype and reduction for a combiner over `type`; MPI_OP_NULL where MPI has none that
// computes XLA's values.
std::pair<MPI_Datatype, MPI_Op> mpi_reduction(PrimitiveType type, Opcode combiner) {
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  switch (type) {
    case PrimitiveType::kF32: datatype = MPI_FLOAT; break;
    case PrimitiveType::kF64: datatype = MPI_DOUBLE; break;
    case PrimitiveType::kS32: datatype = MPI_INT32_T; break;
    case PrimitiveType::kS64: datatype = MPI_INT64_T; break;
    case PrimitiveType::kU32: datatype = MPI_UINT32_T; break;
    case PrimitiveType::kU64: datatype = MPI_UINT64_T; break;
    default: break;
  }
  MPI_Op op = MPI_OP_NULL;
  const bool floating = type == PrimitiveType::kF32 || type == PrimitiveType::kF64;
  switch (combiner) {
    case Opcode::kAdd: op = MPI_SUM; break;
    case Opcode::kMultiply: op = MPI_PROD; break;
    // MPI_MAX/MPI_MIN do not propagate NaN as XLA's maximum/minimum do: floats take the exchange.
    case Opcode::kMaximum: op = floating ? MPI_OP_NULL : MPI_MAX; break;
    case Opcode::kMinimum: op = floating ? MPI_OP_NULL : MPI_MIN; break;
    case Opcode::kAnd: op = MPI_BAND; break;
    case Opcode::kOr: op = MPI_BOR; break;
    default: break;
  }
  if (datatype == MPI_DATATYPE_NULL) op = MPI_OP_NULL;
  return {datatype, op};
}

}  // namespace

Status MpiCommunicator::agree(int64_t device, std::span<const int64_t> group, const std::string& what) {
  Literal nothing(Shape::array(PrimitiveType::kU8, {0}));  // the header (what) is the message
  return exchange(device, group, std::move(nothing), what).status();
}

Status MpiCommunicator::all_reduce_in_place(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                            Opcode combiner, uint8_t* data, int64_t count, const std::string& what) {
  const auto [datatype, op] = mpi_reduction(type, combiner);
  if (op == MPI_OP_NULL || count > std::numeric_limits<int>::max())
    return Communicator::all_reduce_in_place(device, group, type, combiner, data, count, what);
  // Header first: the same collective and size on every member (an MPI_Allreduce of mismatched
  // counts would be undefined). Every member is then here (the header is non-blocking and
  // timed), so the blocking call cannot wait for one that never comes (a rank that dies
  // mid-call ends the job: mpirun kills the others). Blocking, not MPI_Iallreduce: OpenMPI's
  // non-blocking collectives take slower algorithms (measured 0.5x of MPI_Allreduce at 16-64
  // MiB on 2 ranks).
  INSITU_RETURN_IF_ERROR(agree(device, group, str_cat(what, " of ", count, " elements")));
  INSITU_ASSIGN_OR_RETURN(MPI_Comm comm, groups_->get(group, size_, what));
  if (MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), datatype, op, comm) != MPI_SUCCESS)
    return internal_error(str_cat(what, ": MPI_Allreduce failed on rank ", rank_));
  return ok_status();
}

Status MpiCommunicator::all_gather(int64_t device, std::span<const int64_t> group, const uint8_t* in, int64_t bytes,
                                   uint8_t* out, const std::string& what) {
  if (bytes > std::numeric_limits<int>::max()) return Communicator::all_gather(device, group, in, bytes, out, what);
  INSITU_RETURN_IF_ERROR(agree(device, group, str_cat(what, " of ", bytes, " bytes")));
  INSITU_ASSIGN_OR_RETURN(MPI_Comm comm, groups_->get(group, size_, what));
  if (MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm) != MPI_SUCCESS)
    return internal_error(str_cat(what, ": MPI_Allgather failed on rank ", rank_));
  return ok_status();
}

Status MpiCommunicator::reduce_scatter(int64_t device, std::span<const int64_t> group, PrimitiveType type,
                                       Opcode combiner, const uint8_t* in, uint8_t* out, int64_t count,
                                       const std::string& what) {
  const auto [datatype, op] = mpi_reduction(type, combiner);
  if (op == MPI_OP_NULL || count * static_cast<int64_t>(group.size()) > std::numeric_limits<int>::max())
    return Communicator::reduce_scatter(device, group, type, combiner, in, out, count, what);
  INSITU_RETURN_IF_ERROR(agree(device, group, str_cat(what, " of ", count, " elements")));
  INSITU_ASSIGN_OR_RETURN(MPI_Comm comm, groups_->get(group, size_, what));
  if (MPI_Reduce_scatter_block(in, out, static_cast<int>(count), datatype, op, comm) != MPI_SUCCESS)
    return internal_error(str_cat(what, ": MPI_Reduce_scatter_block failed on rank ", rank_));
  return ok_status();
}

Status MpiCommunicator::all_to_all(int64_t device, std::span<const int64_t> group, std::span<const uint8_t* const> send,
                                   std::span<uint8_t* const> receive, int64_t bytes, const std::string& what) {
  bool contiguous = true;
  for (size_t j = 0; j < group.size(); ++j)
    contiguous = contiguous && send[j] == send[0] + j * bytes && receive[j] == receive[0] + j * bytes;
  if (contiguous && bytes * static_cast<int64_t>(group.size()) <= std::numeric_limits<int>::max()) {
    INSITU_RETURN_IF_ERROR(agree(device, group, str_cat(what, " of ", bytes, " bytes")));
    INSITU_ASSIGN_OR_RETURN(MPI_Comm comm, groups_->get(group, size_, what));
    if (MPI_Alltoall(send[0], static_cast<int>(bytes), MPI_BYTE, receive[0], static_cast<int>(bytes), MPI_BYTE, comm) !=
        MPI_SUCCESS)
      return internal_error(str_cat(what, ": MPI_Alltoall failed on rank ", rank_));
    return ok_status();
  }
  // Pieces that are not one range (a tuple's arrays): point to point, straight from and into
  // them.
  std::vector<Outgoing> sends;
  std::vector<Incoming> receives;
  for (size_t j = 0; j < group.size(); ++j) {
    if (group[j] == rank_) {
      if (bytes > 0) std::memcpy(receive[j], send[j], static_cast<size_t>(bytes));
      continue;
    }
    sends.push_back({group[j], send[j]});
    receives.push_back({group[j], receive[j]});
  }
  return transfer(sends, receives, bytes, str_cat(what, " of ", bytes, " bytes"), what, group);
}

Status MpiCommunicator::broadcast(int64_t device, std::span<const int64_t> group, uint8_t* data, int64_t bytes,
                                  const std::string& what) {
  if (bytes > std::numeric_limits<int>::max()) return Communicator::broadcast(device, group, data, bytes, what);
  INSITU_RETURN_IF_ERROR(agree(device, group, str_cat(what, " of ", bytes, " bytes")));
  INSITU_ASSIGN_OR_RETURN(MPI_Comm comm, groups_->get(group, size_, what));
  if (MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, comm) != MPI_SUCCESS)
    return internal_error(str_cat(what, ": MPI_Bcast failed on rank ", rank_));
  return ok_status();
}

Status MpiCommunicator::permute(int64_t device, const PermuteRoute& route, const uint8_t* in, uint8_t* out,
                                int64_t bytes, const std::string& what) {
  if (device != rank_) return internal_error(str_cat("MPI rank ", rank_, " was asked to permute as device ", device));
  std::vector<Outgoing> sends;
  std::vector<Incoming> receives;
  for (int64_t target : route.targets)
    if (target != rank_) sends.push_back({target, in});
  if (route.source == rank_ && bytes > 0) std::memcpy(out, in, static_cast<size_t>(bytes));
  if (route.source >= 0 && route.source != rank_) receives.push_back({route.source, out});
  return transfer(sends, receives, bytes, str_cat(what, " of ", bytes, " bytes"), what, route.domain);
}

#endif

}  // namespace insitu
