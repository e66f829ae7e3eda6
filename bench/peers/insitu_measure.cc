// insitu_measure: insitu's side of the peer table (bench/peers/peer_table.sh, issue 5 item 3).
//
//   insitu_measure [--compile-reps N] [--calls N] [--threads N] [--dump-to DIR] DIR...
//   insitu_measure --bandwidth [--threads N]
//
// --profile N adds one untimed profiled call after the timed ones and prints its N longest
// steps (ExecuteOptions::profile) to stderr: where a call's time goes.
//
// --bandwidth prints {"bandwidth_bytes_per_second": B}: the median of 7 copies of 1 GiB into
// another 1 GiB (both touched first) on the runtime's thread pool, counting bytes read plus
// bytes written: the memory bandwidth the real-size rows' floors divide by.
//
// Each DIR holds before_optimizations.hlo and input_0.npy ... (a JAX corpus program, or a
// large-shape dump made by measure_xla.py; a missing input_i.npy is a zero-filled argument, so a
// 1 GiB cache needs no file). For each DIR it prints one JSON line:
//   compile_seconds  median over N of parse -> optimize_module -> Executable::create, from the
//                    HLO text already in memory (no file I/O), through the C++ API
//   call_seconds     median over N calls of Executable::execute (after warm-up calls); arguments
//                    the module aliases to an output are donated and the result is fed back as
//                    the next call's argument, as a JAX loop over a donating jit does
//   copies_executed, bytes_copied   ExecutionStats of one call
//   peak_memory_bytes               BufferAssignment::peak_memory_bytes
// Failures print {"dir": ..., "error": ...} and the tool goes on with the next DIR.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "insitu/ir/npy.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/optimize.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Settings {
  int compile_reps = 10;
  int calls = 200;
  int threads = 0;
  std::string dump_to;  // --dump-to DIR: one more (untimed) compile dumps its stages to DIR/NAME
  int profile = 0;      // --profile N: after the timed calls, one profiled call; its N longest steps to stderr
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

StatusOr<std::unique_ptr<Executable>> compile(const std::string& text) {
  INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
  INSITU_ASSIGN_OR_RETURN(OptimizedModule optimized, optimize_module(std::move(module)));
  return Executable::create(std::move(optimized));
}

// The arguments: input_i.npy where it exists, zeros of the argument's shape otherwise. The
// zeros are written: a fresh buffer's zeros are untouched pages, which read the kernel's one
// shared zero page from cache, not memory (the decode step's zero weights would read at twice
// the memory's rate).
StatusOr<std::vector<BufferHandle>> load_arguments(const Executable& executable, const fs::path& dir) {
  std::vector<BufferHandle> handles;
  for (size_t i = 0; i < executable.arguments().size(); ++i) {
    const Executable::Argument& argument = executable.arguments()[i];
    const fs::path path = dir / ("input_" + std::to_string(i) + ".npy");
    if (!fs::exists(path)) {
      std::shared_ptr<Buffer> zeros = Buffer::uninitialized(argument.shape);
      std::memset(zeros->data(), 0, static_cast<size_t>(zeros->size_bytes()));
      handles.emplace_back(std::move(zeros));
      continue;
    }
    INSITU_ASSIGN_OR_RETURN(Literal literal, read_npy_file(path.string()));
    if (!literal.shape().compatible(argument.shape))
      return Status(StatusCode::kInvalidArgument, path.string() + " has shape " + literal.shape().to_string() + ", " +
                                    argument.describe() + " is " + argument.shape.to_string());
    INSITU_ASSIGN_OR_RETURN(BufferHandle handle, BufferHandle::from_literal(literal));
    handles.push_back(std::move(handle));
  }
  return handles;
}

// For each argument: the result leaf it is fed back from (its aliased output), or -1.
std::vector<int64_t> feedback_leaves(const Executable& executable) {
  std::vector<ShapeIndex> leaves;
  executable.module().entry()->root()->shape().for_each_leaf(
      [&](const Shape& shape, const ShapeIndex& index) {
        if (shape.is_array()) leaves.push_back(index);
      });
  std::vector<int64_t> feedback;
  for (const Executable::Argument& argument : executable.arguments()) {
    int64_t leaf = -1;
    if (argument.aliased_output.has_value()) {
      auto it = std::find(leaves.begin(), leaves.end(), *argument.aliased_output);
      if (it != leaves.end()) leaf = it - leaves.begin();
    }
    feedback.push_back(leaf);
  }
  return feedback;
}

Status measure(const fs::path& dir, const Settings& settings, std::string& json) {
  std::ifstream in(dir / "before_optimizations.hlo");
  if (!in) return Status(StatusCode::kNotFound, "no " + (dir / "before_optimizations.hlo").string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  std::vector<double> compile_times;
  std::unique_ptr<Executable> executable;
  for (int rep = 0; rep < settings.compile_reps; ++rep) {
    const Clock::time_point start = Clock::now();
    INSITU_ASSIGN_OR_RETURN(executable, compile(text));
    compile_times.push_back(seconds_since(start));
  }

  if (!settings.dump_to.empty()) {
    OptimizeOptions dump;
    fs::path program = dir;
    if (program.filename().empty()) program = program.parent_path();  // "DIR/" names DIR
    dump.dump_to = (fs::path(settings.dump_to) / program.filename()).string();
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, parse_module(text));
    INSITU_RETURN_IF_ERROR(optimize_module(std::move(module), dump).status());
  }

  INSITU_ASSIGN_OR_RETURN(std::vector<BufferHandle> arguments, load_arguments(*executable, dir));
  const std::vector<int64_t> feedback = feedback_leaves(*executable);
  ExecuteOptions options;
  options.threads = settings.threads;
  for (int64_t leaf : feedback) options.donate.push_back(leaf >= 0);

  ExecutionStats stats;
  std::vector<double> call_times;
  const int warmup = std::min(3, settings.calls);
  for (int call = 0; call < warmup + settings.calls; ++call) {
    options.stats = call == 0 ? &stats : nullptr;
    const Clock::time_point start = Clock::now();
    INSITU_ASSIGN_OR_RETURN(std::vector<BufferHandle> results, executable->execute(arguments, options));
    if (call >= warmup) call_times.push_back(seconds_since(start));
    for (size_t i = 0; i < feedback.size(); ++i)
      if (feedback[i] >= 0) arguments[i] = results.at(feedback[i]);
  }

  if (settings.profile > 0) {
    ExecutionStats profiled;
    options.stats = &profiled;
    options.profile = true;
    INSITU_ASSIGN_OR_RETURN(std::vector<BufferHandle> results, executable->execute(arguments, options));
    double total = 0;
    for (const ExecutionStats::StepTime& step : profiled.step_times) total += step.seconds;
    std::fprintf(stderr, "%s: profiled call %.3f ms (%.3f ms in steps, whiles counted inclusively)\n",
                 dir.string().c_str(), profiled.run_seconds * 1e3, total * 1e3);
    for (size_t i = 0; i < profiled.step_times.size() && i < static_cast<size_t>(settings.profile); ++i) {
      const ExecutionStats::StepTime& step = profiled.step_times[i];
      std::fprintf(stderr, "  %9.3f ms %6lld x %-22s %s\n", step.seconds * 1e3, static_cast<long long>(step.runs),
                   step.opcode.c_str(), step.instruction.c_str());
    }
  }

  char line[1024];
  std::snprintf(line, sizeof(line),
                "{\"dir\": \"%s\", \"compile_seconds\": %.9g, \"compile_reps\": %d, \"call_seconds\": %.9g, "
                "\"calls\": %d, \"copies_executed\": %lld, \"bytes_copied\": %lld, \"peak_memory_bytes\": %lld, "
                "\"donated_arguments\": %lld, \"fallback_ops_executed\": %lld}",
                json_escape(dir.string()).c_str(), median(compile_times), settings.compile_reps,
                median(call_times), settings.calls, static_cast<long long>(stats.copies_executed),
                static_cast<long long>(stats.bytes_copied),
                static_cast<long long>(executable->assignment().peak_memory_bytes()),
                static_cast<long long>(std::count(options.donate.begin(), options.donate.end(), true)),
                static_cast<long long>(stats.fallback_ops_executed));
  json = line;
  return Status();
}

std::string measure_bandwidth(int threads) {
  constexpr int64_t kBytes = int64_t{1} << 30;
  std::vector<uint8_t> from(kBytes, 1), to(kBytes, 0);
  ThreadPool pool(threads > 0 ? threads : ThreadPool::hardware_threads());
  std::vector<double> seconds;
  for (int rep = 0; rep < 8; ++rep) {
    const Clock::time_point start = Clock::now();
    copy_bytes_parallel(pool, to.data(), from.data(), kBytes);
    if (rep > 0) seconds.push_back(seconds_since(start));  // the first one warms up
  }
  char line[160];
  std::snprintf(line, sizeof(line), "{\"bandwidth_bytes_per_second\": %.9g, \"threads\": %d}",
                2.0 * kBytes / median(seconds), pool.thread_count());
  return line;
}

int run(int argc, char** argv) {
  Settings settings;
  std::vector<std::string> dirs;
  bool bandwidth = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--compile-reps" && i + 1 < argc) {
      settings.compile_reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--calls" && i + 1 < argc) {
      settings.calls = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--dump-to" && i + 1 < argc) {
      settings.dump_to = argv[++i];
    } else if (arg == "--threads" && i + 1 < argc) {
      settings.threads = std::atoi(argv[++i]);
    } else if (arg == "--profile" && i + 1 < argc) {
      settings.profile = std::atoi(argv[++i]);
    } else if (arg == "--bandwidth") {
      bandwidth = true;
    } else {
      dirs.push_back(arg);
    }
  }
  if (bandwidth) {
    std::printf("%s\n", measure_bandwidth(settings.threads).c_str());
    return 0;
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "usage: insitu_measure [--compile-reps N] [--calls N] [--threads N] [--dump-to DIR] DIR...\n");
    return 2;
  }
  int failures = 0;
  for (const std::string& dir : dirs) {
    std::string json;
    Status status = measure(dir, settings, json);
    if (!status.ok()) {
      ++failures;
      json = "{\"dir\": \"" + json_escape(dir) + "\", \"error\": \"" + json_escape(status.to_string()) + "\"}";
    }
    std::printf("%s\n", json.c_str());
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace insitu

int main(int argc, char** argv) { return insitu::run(argc, argv); }
