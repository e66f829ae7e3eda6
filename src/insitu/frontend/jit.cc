// jit and trace_function (jit.h).
#include "insitu/frontend/jit.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "insitu/frontend/trace_events.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/optimize.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

std::atomic<int> next_module_number{1};

// An HLO-safe parameter name from an array's name.
std::string parameter_name(const std::string& name, size_t index) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = str_cat("arg", index, out.empty() ? "" : "_", out);
  return out;
}

std::string describe(const Array& array, size_t index) {
  return array.name().empty() ? str_cat("argument ", index) : str_cat("argument ", index, " ('", array.name(), "')");
}

}  // namespace

StatusOr<TracedFunction> trace_function(const TracedFn& fn, const std::vector<Shape>& parameter_shapes, std::string name,
                                        std::vector<std::string> parameter_names, const CustomCallTable* custom_calls) {
  TraceSpan span(str_cat("trace jit(", name, ")"), "trace");
  Tracer tracer(name, custom_calls);
  std::vector<Tensor> arguments;
  for (size_t i = 0; i < parameter_shapes.size(); ++i)
    arguments.push_back(tracer.add_parameter(parameter_shapes[i], i < parameter_names.size() ? parameter_names[i] : ""));
  std::vector<Tensor> outputs = fn(arguments);
  return tracer.finish(outputs);
}

struct JitFunction::Impl {
  TracedFn fn;
  JitOptions options;
  mutable std::mutex mutex;
  // What selects an executable: argument shapes (layouts included) and which are donated.
  // Compared structurally on every call; the readable string key is built only on a miss.
  struct Signature {
    std::vector<Shape> shapes;
    std::vector<bool> donated;
    bool operator==(const Signature&) const = default;
  };
  std::vector<std::pair<Signature, std::unique_ptr<CompiledFunction>>> cache;
  int64_t hits = 0;
  int64_t misses = 0;
  const CompiledFunction* last = nullptr;
  ExecutionStats stats;

  static bool donated(const std::vector<int64_t>& donate, size_t i) {
    return std::find(donate.begin(), donate.end(), static_cast<int64_t>(i)) != donate.end();
  }

  static std::string cache_key(const std::vector<Array>& arguments, const std::vector<int64_t>& donate) {
    std::string key;
    for (size_t i = 0; i < arguments.size(); ++i)
      key += str_cat(arguments[i].shape().to_string(/*with_layout=*/true), donated(donate, i) ? " donated" : "", "; ");
    return key;
  }

  StatusOr<std::unique_ptr<CompiledFunction>> compile(const std::vector<Array>& arguments,
                                                      const std::vector<int64_t>& donate, std::string key) {
    std::vector<Shape> shapes;
    std::vector<std::string> names;
    for (size_t i = 0; i < arguments.size(); ++i) {
      shapes.push_back(arguments[i].shape());
      names.push_back(parameter_name(arguments[i].name(), i));
    }
    INSITU_ASSIGN_OR_RETURN(TracedFunction traced, trace_function(fn, shapes, options.name, names, options.custom_calls));
    for (int64_t number : donate) {
      if (number < 0 || number >= static_cast<int64_t>(arguments.size()))
        return invalid_argument(str_cat("jit(", options.name, "): donate_argnums names argument ", number, " but the call has ",
                                        arguments.size(), " arguments"));
      // A mutated argument is already aliased to its write-back.
      if (std::find(traced.mutated_parameters.begin(), traced.mutated_parameters.end(), number) ==
          traced.mutated_parameters.end())
        traced.module->config().buffer_donors.push_back({number, {}});
    }
    INSITU_RETURN_IF_ERROR(verify_module(*traced.module));

    OptimizeOptions optimize_options;
    if (options.dump_to) {
      optimize_options.dump_to = *options.dump_to;
    } else if (const char* directory = std::getenv("INSITU_DUMP_TO")) {
      optimize_options.dump_to = directory;
    }
    optimize_options.module_number = next_module_number++;
    optimize_options.strict_donation = options.strict_donation;
    if (TraceRecorder::global().enabled()) {
      // One event per compile pass, ending now and lasting as long as the pass took.
      optimize_options.on_pass_done = [](std::string_view pass, double seconds) {
        TraceRecorder& recorder = TraceRecorder::global();
        const double duration_us = seconds * 1e6;
        recorder.add({std::string(pass), "compile-pass", recorder.now_us() - duration_us, duration_us, {}});
      };
    }
    auto compiled = std::make_unique<CompiledFunction>();
    compiled->key = std::move(key);
    compiled->output_count = traced.output_count;
    compiled->mutated_parameters = traced.mutated_parameters;
    std::optional<OptimizedModule> optimized;
    {
      TraceSpan span("optimize_module", "compile", {{"module", traced.module->name()}});
      INSITU_ASSIGN_OR_RETURN(OptimizedModule result, optimize_module(std::move(traced.module), optimize_options));
      optimized.emplace(std::move(result));
    }
    compiled->unused_donors = optimized->donors.unused;
    compiled->compile_seconds = optimized->compile_seconds;
    {
      TraceSpan span("Executable::create", "compile", {{"module", optimized->module->name()}});
      const ExecutableOptions executable_options{.custom_calls = options.custom_calls, .device = options.device};
      INSITU_ASSIGN_OR_RETURN(compiled->executable, Executable::create(std::move(*optimized), executable_options));
    }
    compiled->optimized = &compiled->executable->module();
    Status flushed = TraceRecorder::global().flush();
    (void)flushed;  // a trace file that cannot be written is reported at exit
    return compiled;
  }

  StatusOr<CompiledFunction*> find_or_compile(const std::vector<Array>& arguments, const std::vector<int64_t>& donate) {
    for (size_t i = 0; i < arguments.size(); ++i) {
      Status usable = arguments[i].check_usable();
      if (!usable.ok()) return usable.with_context(str_cat(describe(arguments[i], i), " of jit(", options.name, ")"));
    }
    Signature signature;
    for (size_t i = 0; i < arguments.size(); ++i) {
      signature.shapes.push_back(arguments[i].shape());
      signature.donated.push_back(donated(donate, i));
    }
    for (const auto& [cached, compiled] : cache) {
      if (cached == signature) {
        ++hits;
        return compiled.get();
      }
    }
    ++misses;
    INSITU_ASSIGN_OR_RETURN(std::unique_ptr<CompiledFunction> compiled,
                            compile(arguments, donate, cache_key(arguments, donate)));
    CompiledFunction* raw = compiled.get();
    cache.emplace_back(std::move(signature), std::move(compiled));
    return raw;
  }
};

JitFunction::JitFunction(TracedFn fn, JitOptions options) : impl_(std::make_shared<Impl>()) {
  impl_->fn = std::move(fn);
  impl_->options = std::move(options);
}

JitFunction jit(TracedFn fn, JitOptions options) { return JitFunction(std::move(fn), std::move(options)); }

StatusOr<const CompiledFunction*> JitFunction::lower(const std::vector<Array>& arguments) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  INSITU_ASSIGN_OR_RETURN(CompiledFunction * compiled, impl_->find_or_compile(arguments, impl_->options.donate_argnums));
  return static_cast<const CompiledFunction*>(compiled);
}

StatusOr<std::vector<Array>> JitFunction::operator()(const std::vector<Array>& arguments) {
  return call(arguments, impl_->options.donate_argnums);
}

StatusOr<std::vector<Array>> JitFunction::call(const std::vector<Array>& arguments, const std::vector<int64_t>& donate) {
  // The lock covers the cache and the recorded stats, not the run: calls with a compiled
  // signature run at the same time (Executable::execute is thread-safe).
  Impl& impl = *impl_;
  CompiledFunction* compiled = nullptr;
  int threads = 0;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    INSITU_ASSIGN_OR_RETURN(compiled, impl.find_or_compile(arguments, donate));
    threads = impl.options.threads;
  }
  std::vector<bool> consumed(arguments.size(), false);
  for (size_t i = 0; i < arguments.size(); ++i) consumed[i] = Impl::donated(donate, i);
  for (int64_t parameter : compiled->mutated_parameters) consumed[parameter] = true;
  // One Array may not be given away and also passed again in another position.
  for (size_t i = 0; i < arguments.size(); ++i) {
    for (size_t j = i + 1; j < arguments.size(); ++j) {
      if ((consumed[i] || consumed[j]) && arguments[i].same_array(arguments[j]))
        return invalid_argument(str_cat("jit(", impl.options.name, "): ", describe(arguments[i], i), " is also passed as argument ", j,
                                        ", and one of the two is donated or mutated; pass a copy"));
    }
  }
  std::vector<BufferHandle> handles;
  for (const Array& argument : arguments) handles.push_back(argument.handle());
  ExecuteOptions execute_options;
  execute_options.donate = consumed;
  execute_options.threads = threads;
  ExecutionStats stats;
  execute_options.stats = &stats;
  std::vector<BufferHandle> results;
  {
    TraceRecorder& recorder = TraceRecorder::global();
    const double run_start_us = recorder.now_us();
    TraceSpan span(str_cat("execute ", compiled->optimized->name()), "run");
    INSITU_ASSIGN_OR_RETURN(results, compiled->executable->execute(std::move(handles), execute_options));
    span.add_arg("bytes_copied", std::to_string(stats.bytes_copied));
    span.add_arg("copies_executed", std::to_string(stats.copies_executed));
    if (recorder.enabled()) {
      for (const ExecutionStats::KernelRun& run : stats.kernel_runs)  // one event per kernel run
        recorder.add({run.target, "kernel", run_start_us + run.start_seconds * 1e6, run.seconds * 1e6, {}});
    }
  }
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    impl.last = compiled;
    impl.stats = std::move(stats);
  }
  INSITU_CHECK(static_cast<int64_t>(results.size()) ==
               compiled->output_count + static_cast<int64_t>(compiled->mutated_parameters.size()))
      << "jit: result count does not match the traced outputs";
  std::vector<Array> outputs;
  for (int64_t k = 0; k < compiled->output_count; ++k)
    outputs.push_back(Array::from_handle(std::move(results[k]), str_cat(impl.options.name, "_out", k)));
  for (size_t j = 0; j < compiled->mutated_parameters.size(); ++j)
    arguments[compiled->mutated_parameters[j]].rebind(std::move(results[compiled->output_count + j]));
  return outputs;
}

int64_t JitFunction::cache_size() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return static_cast<int64_t>(impl_->cache.size());
}
int64_t JitFunction::cache_hits() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->hits;
}
int64_t JitFunction::cache_misses() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->misses;
}
const CompiledFunction* JitFunction::last_compiled() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last;
}
ExecutionStats JitFunction::last_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}
void JitFunction::set_threads(int threads) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->options.threads = threads;
}

}  // namespace insitu
