// A data-parallel training step on N ranks against the same step on one replica (issue 11).
// The programs are JAX's own (bench/peers/jax_collectives.py --bench OUT): one global batch of
// 512 through a 512 -> 1024 -> 512 MLP, split over N devices by shard_map, gradients pmean'ed
// (XLA's combined all-reduces), SGD on donated parameters. Run each under mpirun (bench/README.md):
//
//   mpirun -np N build/bench/mpi_dp_step_bench OUT/dp_mlp_step_bench.N [--threads T] [--steps S]
//
// Every rank loads its own shards (device_R/input_I.npy), runs S steps (after 3 warm-up steps)
// feeding the updated parameters back as the next step's donated arguments, with a barrier
// before each step; rank 0 prints the median step time (the slowest rank's, through
// MPI_Allreduce(MAX)), bytes copied and fallback ops of one step, and checks the first step's
// results against JAX's (device_R/output_I.npy).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "insitu/evaluator/collectives.h"
#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/mpi_communicator.h"

using namespace insitu;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int fail(int rank, const std::string& message) {
  std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

// The largest |a - b| over two f32 literals of one shape (infinity when they differ in shape).
double max_difference(const Literal& a, const Literal& b) {
  if (!(a.shape().compatible(b.shape())) || a.shape().element_type() != PrimitiveType::kF32) return INFINITY;
  double worst = 0;
  for (int64_t e = 0; e < a.element_count(); ++e)
    worst = std::max(worst, std::fabs(static_cast<double>(a.data<float>()[e]) - b.data<float>()[e]));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  StatusOr<std::unique_ptr<MpiCommunicator>> mpi = MpiCommunicator::create(300);
  if (!mpi.ok()) {
    std::fprintf(stderr, "%s\n", mpi.status().to_string().c_str());
    return 1;
  }
  const int rank = static_cast<int>((*mpi)->rank());
  const int ranks = static_cast<int>((*mpi)->size());
  if (argc < 2) return fail(rank, "usage: mpi_dp_step_bench DIR [--threads T] [--steps S]");
  const fs::path dir = argv[1];
  int threads = 1, steps = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--threads") threads = std::atoi(argv[i + 1]);
    else if (std::string(argv[i]) == "--steps") steps = std::atoi(argv[i + 1]);
    else return fail(rank, std::string("unknown option ") + argv[i]);
  }

  std::ifstream in(dir / "module.hlo");
  if (!in) return fail(rank, "no " + (dir / "module.hlo").string());
  std::stringstream text;
  text << in.rdbuf();
  StatusOr<std::unique_ptr<Module>> module = parse_module(text.str());
  if (!module.ok()) return fail(rank, module.status().to_string());
  const DeviceGrid grid = device_grid(**module);
  if (grid.devices() != ranks)
    return fail(rank, "the module runs on " + std::to_string(grid.devices()) + " devices; run it with mpirun -np " +
                          std::to_string(grid.devices()));
  StatusOr<OptimizedModule> optimized = optimize_module(std::move(module).value());
  if (!optimized.ok()) return fail(rank, optimized.status().to_string());
  StatusOr<std::unique_ptr<Executable>> created = Executable::create(std::move(optimized).value());
  if (!created.ok()) return fail(rank, created.status().to_string());
  Executable& executable = **created;

  // Arguments: this rank's shards, in parameter order (one array per parameter).
  const fs::path mine = dir / ("device_" + std::to_string(rank));
  std::vector<BufferHandle> arguments;
  for (const Executable::Argument& argument : executable.arguments()) {
    StatusOr<Literal> value = read_npy_file((mine / ("input_" + std::to_string(argument.parameter_number) + ".npy")).string());
    if (!value.ok()) return fail(rank, value.status().to_string());
    arguments.push_back(*BufferHandle::from_literal(*value));
  }
  // Donated parameters come back from their aliased result leaf.
  std::vector<ShapeIndex> leaves;
  executable.module().entry()->root()->shape().for_each_leaf([&](const Shape& shape, const ShapeIndex& index) {
    if (shape.is_array()) leaves.push_back(index);
  });
  std::vector<int64_t> feedback;
  ExecuteOptions options;
  options.threads = threads;
  DeviceContext context{mpi->get(), grid, rank};
  options.device = &context;
  for (const Executable::Argument& argument : executable.arguments()) {
    const auto it = argument.aliased_output ? std::find(leaves.begin(), leaves.end(), *argument.aliased_output) : leaves.end();
    feedback.push_back(it == leaves.end() ? -1 : it - leaves.begin());
    options.donate.push_back(feedback.back() >= 0);
  }

  ExecutionStats first;
  std::vector<double> times;
  double worst_difference = 0;
  for (int step = 0; step < steps + 3; ++step) {
    options.stats = step == 0 ? &first : nullptr;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = now();
    StatusOr<std::vector<BufferHandle>> results = executable.execute(arguments, options);
    double seconds = now() - start;
    if (!results.ok()) return fail(rank, results.status().to_string());
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // the slowest rank's
    if (step >= 3) times.push_back(seconds);
    if (step == 0)
      for (size_t leaf = 0; leaf < results->size(); ++leaf) {
        StatusOr<Literal> want = read_npy_file((mine / ("output_" + std::to_string(leaf) + ".npy")).string());
        if (!want.ok()) return fail(rank, want.status().to_string());
        worst_difference = std::max(worst_difference, max_difference(*(*results)[leaf].to_literal(), *want));
      }
    for (size_t i = 0; i < feedback.size(); ++i)
      if (feedback[i] >= 0) arguments[i] = (*results)[feedback[i]];
  }
  MPI_Allreduce(MPI_IN_PLACE, &worst_difference, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::sort(times.begin(), times.end());
  if (rank == 0)
    std::printf("| %s | %d | %d | %.2f | %lld | %lld | %.1e |\n", dir.filename().string().c_str(), ranks, threads,
                times[times.size() / 2] * 1e3, static_cast<long long>(first.bytes_copied),
                static_cast<long long>(first.fallback_ops_executed), worst_difference);
  return 0;
}
