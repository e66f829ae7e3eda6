// insitu's Python bindings (nanobind): compile HLO text, call it with arrays that cross by
// DLPack without a copy, donate them, read the stats and explain. The Python-facing API and
// its documentation are python/insitu/__init__.py; this file is the C++ half's module: what
// Python sees (the classes, functions and their docs), compile and explain, and how a Status
// reaches Python. The rest of the extension: insitu.Array and arguments by DLPack
// (_insitu_array.cc), insitu.Executable (_insitu_executable.cc), the XLA FFI handler of
// insitu.jax (_insitu_xla_ffi.cc), and what they share (_insitu.h).
//
// Errors: every Status becomes insitu.Error carrying the located message the CLI prints.
#include <dlfcn.h>

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "_insitu.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/optimize.h"
#include "insitu/kernel/plugin.h"
#include "insitu/runtime/stats_json.h"
#ifdef INSITU_HAVE_PJRT
#include "insitu/pjrt/plugin.h"
#endif
#include "insitu/runtime/thread_pool.h"
#include "insitu/stablehlo/import.h"

namespace insitu::python {

// The located message the CLI prints for a status (`FILE:LINE:COLUMN: error: ...` where the
// status has a place in `file`), without the CLI's "insitu: error: " prefix.
std::string status_text(const Status& status, const std::string& file) {
  return status.location().valid() && !file.empty() ? status.to_string(file) : status.message();
}
[[noreturn]] void raise(const Status& status, const std::string& file) {
  throw StatusError(status_text(status, file));
}

namespace {

// HLO text, MLIR bytecode (a VHLO artifact: StableHLO as JAX hands it to a PJRT plugin), or a
// jax.export artifact (Exported.serialize()) around one.
std::unique_ptr<Module> parse_verified(const std::string& text, const std::string& file) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  std::unique_ptr<Module> module = stablehlo::is_stablehlo(bytes) ? value_or_raise(stablehlo::read_vhlo(bytes), file)
                                                                : value_or_raise(parse_module(text), file);
  if (Status status = verify_module(*module); !status.ok()) raise(status, file);
  return module;
}

PyExecutable* compile(const std::string& text, const std::string& file, bool strict_donation, int64_t max_memory_bytes,
                      const std::string& device) {
  const std::optional<DeviceKind> kind = device_kind_named(device);
  if (!kind) throw nb::value_error(str_cat("device must be 'cpu' or 'cuda', not '", device, "'").c_str());
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Module> module = parse_verified(text, file);
  OptimizeOptions optimize;
  optimize.strict_donation = strict_donation;
  OptimizedModule optimized = value_or_raise(optimize_module(std::move(module), optimize), file);
  Explanation explanation = explain_module(optimized);
  const int64_t unused_donors = static_cast<int64_t>(optimized.donors.unused.size());
  std::unique_ptr<Executable> executable =
      value_or_raise(Executable::create(std::move(optimized),
                                        {.max_memory_bytes = max_memory_bytes, .device = *kind}),
                     file);
  executable->explain_grid_decisions(explanation);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return new PyExecutable(std::move(executable), file, std::move(explanation), seconds, unused_donors);
}

std::string explain(const std::string& text, const std::string& file, const std::string& format) {
  OptimizedModule optimized = value_or_raise(optimize_module(parse_verified(text, file)), file);
  const Explanation explanation = explain_module(optimized);
  if (format == "text") return explanation_text(explanation);
  if (format == "json") return explanation_json(explanation);
  throw nb::value_error(str_cat("explain format must be 'text' or 'json', not '", format, "'").c_str());
}

}  // namespace
}  // namespace insitu::python

NB_MODULE(_insitu, m) {
  using namespace insitu::python;
  namespace ins = insitu;
  m.doc() = "insitu's C++ core; use the insitu package (python/insitu/__init__.py)";
  nb::exception<StatusError>(m, "Error", PyExc_RuntimeError);
  // Executables live on in caches that torch.compile and jax keep until the interpreter
  // exits, after nanobind's leak check runs: not leaks of this module.
  nb::set_leak_warnings(false);

  nb::class_<Array>(m, "Array", "An array insitu computed: exports __dlpack__ without a copy; consumed when donated.")
      .def_prop_ro("shape", [](const Array& a) { return nb::tuple(nb::cast(a.dimensions())); })
      .def_prop_ro("dtype", &Array::dtype, "insitu's element type name: 'f32', 'bf16', 's32', 'pred', ...")
      .def_prop_ro("donated", &Array::donated, "True once the array was donated to a call")
      .def(
          "__dlpack__",
          [](const Array& a, nb::kwargs kwargs) {
            if (kwargs.contains("copy") && !kwargs["copy"].is_none() && nb::cast<bool>(kwargs["copy"]))
              throw nb::buffer_error("insitu.Array exports its own memory; __dlpack__(copy=True) is not supported");
            nb::dict pass;  // what nb_ndarray.__dlpack__ takes
            if (kwargs.contains("max_version")) pass["max_version"] = kwargs["max_version"];
            return a.to_ndarray().attr("__dlpack__")(**pass);
          },
          "DLPack export of the array's own memory (no copy)")
      .def("__dlpack_device__", [](const Array&) { return nb::make_tuple(1, 0); })  // kDLCPU, device 0
      .def(
          "_capsule", [](const Array& a) { return a.to_ndarray(/*capsule=*/true); },
          "A bare DLPack capsule of the array's memory (what __dlpack__ returns, without the protocol's checks)")
      .def(
          "__array__",
          [](const Array& a, nb::args, nb::kwargs) { return nb::module_::import_("numpy").attr("from_dlpack")(a.to_ndarray()); },
          "numpy.asarray(array): a numpy view of the same memory")
      .def("__repr__", &Array::repr);

  auto cls = nb::class_<PyExecutable>(m, "Executable");
  cls
      .def("__call__", &PyExecutable::call, nb::arg("args"), nb::kw_only(), nb::arg("donate") = nb::none(),
           nb::arg("threads") = 0, nb::arg("timeout") = 0.0)
      .def("_stats_json", &PyExecutable::stats_json)
      .def("_explain", &PyExecutable::explain, nb::arg("format"))
      .def_prop_ro("optimized_text", &PyExecutable::optimized_text, "The optimized module as HLO text")
      .def_prop_ro("parameters", &PyExecutable::parameters, "One dict per argument: name, dtype, shape, aliased, must_alias")
      .def_prop_ro("fallback_ops", &PyExecutable::fallback_ops,
                   "Instructions that run through the reference evaluator (none is the goal)");

  m.def("_compile", &compile, nb::arg("text"), nb::arg("file"), nb::arg("strict_donation"), nb::arg("max_memory_bytes"),
        nb::arg("device"), nb::rv_policy::take_ownership);
  m.def("_explain", &explain, nb::arg("text"), nb::arg("file"), nb::arg("format"));
  // the same for bytes (MLIR bytecode), which a str would not carry unchanged
  m.def(
      "_compile",
      [](const nb::bytes& bytes, const std::string& file, bool strict_donation, int64_t max_memory_bytes,
         const std::string& device) {
        return compile(std::string(bytes.c_str(), bytes.size()), file, strict_donation, max_memory_bytes, device);
      },
      nb::arg("text"), nb::arg("file"), nb::arg("strict_donation"), nb::arg("max_memory_bytes"), nb::arg("device"),
      nb::rv_policy::take_ownership);
  m.def(
      "_explain",
      [](const nb::bytes& bytes, const std::string& file, const std::string& format) {
        return explain(std::string(bytes.c_str(), bytes.size()), file, format);
      },
      nb::arg("text"), nb::arg("file"), nb::arg("format"));
#ifdef INSITU_HAVE_XLA_FFI
  // The XLA FFI handler insitu.jax registers as target "insitu_call" (a capsule of its address),
  // and each executable's number for its `executable` attribute.
  m.def("_xla_ffi_handler", [] { return nb::capsule(xla_ffi_handler()); });
  cls.def("_ffi_id", &PyExecutable::ffi_id);
#endif
#ifdef INSITU_HAVE_PJRT
  // The PJRT plugin's function table, for jax's register_plugin(c_api=...) (insitu.jax_plugin).
  m.def("_pjrt_api", [] { return nb::capsule(static_cast<const void*>(ins::pjrt::api()), "pjrt_c_api"); });
  // What insitu made of a program the plugin compiled, by its fingerprint: None, or a dict of
  // its optimized HLO, explain (text, json) and its last call's stats (json).
  m.def("_pjrt_program", [](const nb::bytes& fingerprint) -> nb::object {
    std::optional<ins::pjrt::CompiledProgram> program =
        ins::pjrt::compiled_program(std::string_view(fingerprint.c_str(), fingerprint.size()));
    if (!program) return nb::none();
    const ins::Executable& executable = *program->executable;
    nb::dict out;
    out["optimized_text"] = ins::print_module(executable.module());
    out["explain_text"] = program->explanation_text;
    out["explain_json"] = program->explanation_json;
    out["stats_json"] = ins::run_stats_json(executable, executable.last_stats()).dump();
    return out;
  });
#endif
  // insitu.torch: run insitu's parallel loops on the OpenMP runtime at `path` (torch's libgomp,
  // already loaded by torch) instead of insitu's own workers; None: insitu's workers again.
  // False when the library or one of its entry points is not there.
  m.def("_use_host_openmp", [](std::optional<std::string> path) {
    static ins::OpenMpRuntime runtime;  // lives as long as the process, as the library stays loaded
    if (!path) {
      ins::set_host_openmp(nullptr);
      return true;
    }
    void* library = dlopen(path->c_str(), RTLD_NOW | RTLD_NOLOAD);  // only one the process has loaded
    if (library == nullptr) return false;
    ins::OpenMpRuntime found;
    found.parallel = reinterpret_cast<decltype(found.parallel)>(dlsym(library, "GOMP_parallel"));
    found.thread_num = reinterpret_cast<decltype(found.thread_num)>(dlsym(library, "omp_get_thread_num"));
    found.num_threads = reinterpret_cast<decltype(found.num_threads)>(dlsym(library, "omp_get_num_threads"));
    if (!found.parallel || !found.thread_num || !found.num_threads) return false;
    ins::set_host_openmp(nullptr);
    runtime = found;
    ins::set_host_openmp(&runtime);
    return true;
  }, nb::arg("path").none());
  m.def("_load_plugin", [](const std::string& path) {
    if (ins::Status status = ins::load_plugin(path); !status.ok()) raise(status);
  });
}
