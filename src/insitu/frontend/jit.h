// jit: compile a traced C++ function once per argument signature and run it on Arrays, as
// jax.jit(fn, donate_argnums=...) does.
//
//   JitFunction step = jit(decode_step, {.donate_argnums = {0}, .name = "decode"});
//   StatusOr<std::vector<Array>> out = step({cache, token, position});
//
// On each call:
//   1. every argument must be usable (a donated-before Array is an error naming it);
//   2. the cache key is (shapes with layouts, dtypes, donation set): an executable compiled for a
//      different donation is never reused (pytorch/xla#8464 reused one and aliased the wrong
//      tensor);
//   3. on a miss the function is traced (tracer.h), donated arguments that it does not mutate
//      become buffer_donor entries (donor matching turns them into aliases where that costs no
//      copy), the module is optimized (passes/optimize.h; INSITU_DUMP_TO=DIR writes XLA-style
//      stage dumps) and an Executable is built;
//   4. the executable runs with donate flags set for donated and mutated arguments; donated
//      Arrays become deleted(); a mutated Array is rebound to its written-back result (the same
//      buffer when the write happened in place). INSITU_TRACE=FILE records compile stages and
//      runs as a Chrome trace (trace_events.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "insitu/frontend/array.h"
#include "insitu/frontend/tracer.h"
#include "insitu/passes/donor_matching.h"
#include "insitu/runtime/executable.h"

namespace insitu {

using TracedFn = std::function<std::vector<Tensor>(std::vector<Tensor>& arguments)>;

struct JitOptions {
  std::vector<int64_t> donate_argnums;
  std::string name = "fn";
  int threads = 0;                     // worker threads per run; <= 0: all cores
  std::optional<std::string> dump_to;  // stage dumps; default: $INSITU_DUMP_TO
  bool strict_donation = false;        // an unusable donor is a compile error
  // Custom-call targets for call_kernel and for running the compiled module.
  const CustomCallTable* custom_calls = &CustomCallTable::global();
  // Where the compiled module runs (ExecutableOptions::device): kCuda is GPU 0, and a call on a
  // machine without one fails, saying why.
  DeviceKind device = DeviceKind::kCpu;
};

// One executable-cache entry.
struct CompiledFunction {
  std::string key;
  const Module* optimized = nullptr;  // the executable's module
  std::unique_ptr<Executable> executable;
  int64_t output_count = 0;
  std::vector<int64_t> mutated_parameters;  // write-back outputs follow the function's outputs
  std::vector<UnusedDonor> unused_donors;
  double compile_seconds = 0;
};

// Thread safety: a JitFunction (and its copies, which share one cache) may be called from
// many threads at once. Finding or compiling the executable is serialized; runs are not. An
// Array must not be used by two calls at once when one of them donates or mutates it (the
// second finds it consumed). last_stats() and last_compiled() are of the last call to finish.
class JitFunction {
 public:
  JitFunction(TracedFn fn, JitOptions options);

  StatusOr<std::vector<Array>> operator()(const std::vector<Array>& arguments);
  // A call that donates `donate_argnums` instead of the options' (torch_xla sets donors per
  // call; the cache keeps one executable per donation set).
  StatusOr<std::vector<Array>> call(const std::vector<Array>& arguments, const std::vector<int64_t>& donate_argnums);
  // Finds or compiles the executable for these arguments without running it.
  StatusOr<const CompiledFunction*> lower(const std::vector<Array>& arguments);

  int64_t cache_size() const;
  int64_t cache_hits() const;
  int64_t cache_misses() const;
  // The executable the last call ran (null before the first call).
  const CompiledFunction* last_compiled() const;
  ExecutionStats last_stats() const;
  void set_threads(int threads);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

JitFunction jit(TracedFn fn, JitOptions options = {});

// Traces `fn` over parameters of the given shapes into a verified module (no optimization).
StatusOr<TracedFunction> trace_function(const TracedFn& fn, const std::vector<Shape>& parameter_shapes,
                                        std::string name = "fn", std::vector<std::string> parameter_names = {},
                                        const CustomCallTable* custom_calls = &CustomCallTable::global());

}  // namespace insitu
