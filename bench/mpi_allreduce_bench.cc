// All-reduce through insitu against a bare MPI_Allreduce of the same bytes, in one MPI job
// (issue 11). Run under mpirun (bench/README.md):
//
//   mpirun -np 2 build-bench/bench/mpi_allreduce_bench [MiB ...]      (default 1 16 64)
//
// For each size: `bare` times MPI_Allreduce(MPI_IN_PLACE, f32 sum) over MPI_COMM_WORLD on an
// insitu Buffer (the same memory kind); `insitu`
// times an Executable of `all-reduce(x)` whose parameter is donated and aliased to the result,
// each call feeding the next (the buffer is reduced in place: MpiCommunicator's MPI_Allreduce,
// plus insitu's header check and call overhead). Median of the repetitions; rank 0 prints
// algorithm bandwidth (bytes per rank / time) and bare's time over insitu's. The two alternate
// repetition by repetition.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "insitu/evaluator/collectives.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/mpi_communicator.h"

using namespace insitu;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  StatusOr<std::unique_ptr<MpiCommunicator>> mpi = MpiCommunicator::create(120);
  if (!mpi.ok()) {
    std::fprintf(stderr, "%s\n", mpi.status().to_string().c_str());
    return 1;
  }
  const int ranks = static_cast<int>((*mpi)->size());
  const int rank = static_cast<int>((*mpi)->rank());
  std::vector<int64_t> sizes_mib = {1, 16, 64};
  if (argc > 1) {
    sizes_mib.clear();
    for (int i = 1; i < argc; ++i) sizes_mib.push_back(std::atoll(argv[i]));
  }
  if (rank == 0) {
    std::printf("# %d ranks; f32 sum; median of the repetitions; GB/s = bytes per rank / time\n", ranks);
    std::printf("| MiB | bare MPI_Allreduce ms | GB/s | insitu all-reduce ms | GB/s | insitu / bare |\n|---:|---:|---:|---:|---:|---:|\n");
  }
  for (int64_t mib : sizes_mib) {
    const int64_t count = mib * (1 << 20) / 4;
    const int reps = mib >= 64 ? 10 : mib >= 16 ? 20 : 50;
    // The same kind of memory for both (insitu's Buffer: 2 MiB-aligned, huge pages asked for),
    // and the two measured alternately, so that neither gets the warmer machine.
    const std::string text = "HloModule allreduce, replica_count=" + std::to_string(ranks) +
                             ", input_output_alias={ {}: (0, {}, may-alias) }\n\nadd {\n  a = f32[] parameter(0)\n"
                             "  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[" +
                             std::to_string(count) + "] parameter(0)\n  ROOT s = f32[" + std::to_string(count) +
                             "] all-reduce(x), to_apply=add\n}\n";
    std::unique_ptr<Executable> executable = std::move(
        Executable::create(std::move(optimize_module(std::move(parse_module(text)).value())).value())).value();
    DeviceContext context{mpi->get(), {ranks, 1}, rank};
    Literal ones(Shape::array(PrimitiveType::kF32, {count}));
    for (float& v : ones.data<float>()) v = 1.0f;
    BufferHandle handle = *BufferHandle::from_literal(ones);
    std::unique_ptr<Buffer> bare_buffer = std::move(Buffer::from_literal(ones)).value();
    std::vector<double> bare, ours;
    ExecutionStats stats;
    for (int r = 0; r < reps + 2; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double start = now();
      MPI_Allreduce(MPI_IN_PLACE, bare_buffer->data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (r >= 2) bare.push_back(now() - start);
      MPI_Barrier(MPI_COMM_WORLD);
      start = now();
      StatusOr<std::vector<BufferHandle>> out =
          executable->execute({handle}, {.donate = {true}, .threads = 1, .stats = &stats, .device = &context});
      if (!out.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, out.status().to_string().c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (r >= 2) ours.push_back(now() - start);
      handle = out->front();  // the same memory, reduced in place
    }
    if (rank == 0) {
      const double bytes = static_cast<double>(count) * 4;
      const double b = median(bare), o = median(ours);
      std::printf("| %lld | %.3f | %.2f | %.3f | %.2f | %.2fx |   (bytes_copied %lld)\n", static_cast<long long>(mib),
                  b * 1e3, bytes / b / 1e9, o * 1e3, bytes / o / 1e9, b / o, static_cast<long long>(stats.bytes_copied));
    }
  }
  return 0;
}
