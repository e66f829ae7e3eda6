// Internal to the Python extension insitu._insitu, shared by its files: how a Status reaches
// Python (defined in _insitu.cc), insitu.Array and the conversion of call arguments to buffers
// (_insitu_array.cc), and insitu.Executable (_insitu_executable.cc; its XLA FFI half in
// _insitu_xla_ffi.cc). The module itself, which binds these to Python, is _insitu.cc.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "insitu/passes/explain.h"
#include "insitu/runtime/executable.h"
#include "insitu/support/str.h"

namespace nb = nanobind;

namespace insitu::python {

// A Status on its way to Python as insitu.Error; `text` is the message as the CLI prints it.
struct StatusError : std::exception {
  explicit StatusError(std::string message) : text(std::move(message)) {}
  const char* what() const noexcept override { return text.c_str(); }
  std::string text;
};

// The located message the CLI prints for a status, without its "insitu: error: " prefix.
std::string status_text(const Status& status, const std::string& file);
[[noreturn]] void raise(const Status& status, const std::string& file = {});

template <typename T>
T value_or_raise(StatusOr<T> result, const std::string& file = {}) {
  if (!result.ok()) raise(result.status(), file);
  return std::move(result).value();
}

inline std::string shape_text(const Shape& shape) { return shape.to_string(/*print_layout=*/false); }

// An array the runtime wrote or read: one BufferHandle.
class Array {
 public:
  explicit Array(BufferHandle handle) : handle_(std::move(handle)) {}

  const BufferHandle& handle() const { return handle_; }
  const Shape& shape() const {
    check_usable();
    return handle_.shape();
  }
  std::vector<int64_t> dimensions() const { return shape().dimensions(); }
  std::string dtype() const { return std::string(primitive_type_name(shape().element_type())); }
  bool donated() const { return handle_.is_donated(); }

  // The same memory as an nb_ndarray (which implements the DLPack protocol and the buffer
  // protocol), or with `capsule` as a bare DLPack capsule ("dltensor"); either keeps the buffer
  // alive.
  nb::object to_ndarray(bool capsule = false) const;

  std::string repr() const {
    if (handle_.is_donated()) return "insitu.Array(<donated>)";
    return str_cat("insitu.Array(", shape_text(handle_.shape()), ")");
  }

 private:
  void check_usable() const {
    if (handle_.is_donated())
      raise(failed_precondition("this insitu.Array was donated to a call and is no longer usable"));
  }
  BufferHandle handle_;
};

// Call argument `index` as a BufferHandle. `bytes_copied` grows by what a non-row-major input
// cost. (Its name in messages, "argument i (parameter)", is only written when one is raised:
// formatted per argument per call, it was a tenth of a 200-argument call.)
BufferHandle to_handle(nb::handle object, const Executable::Argument& parameter, bool donate, size_t index,
                       int64_t& bytes_copied);

// A compiled module and what the compiler said about it.
class PyExecutable {
 public:
  PyExecutable(std::unique_ptr<Executable> executable, std::string file, Explanation explanation,
               double compile_seconds, int64_t unused_donors);

  nb::object call(nb::tuple args, nb::object donate, int threads, double timeout_seconds);

#ifdef INSITU_HAVE_XLA_FFI
  ~PyExecutable();
  // This executable's number for the XLA FFI handler (xla_call's `executable` attribute, in
  // _insitu_xla_ffi.cc): registered on first use, unregistered when the executable goes.
  int64_t ffi_id();
  // One call from inside an XLA program (xla_call), on XLA's buffers
  // (Executable::execute_borrowed): an argument whose aliased result XLA gave the same memory
  // is donated (written in place); every other result is computed into XLA's result buffer, or
  // copied there (counted in stats' result_bytes_copied).
  Status run_for_xla(std::span<uint8_t* const> args, std::span<const int64_t> arg_bytes,
                     std::span<uint8_t* const> rets, std::span<const int64_t> ret_bytes, int threads);
  const std::string& file() const { return file_; }
#endif
  // The stats of the last call, as JSON text (Python turns it into a dict); null before one.
  std::string stats_json() const;
  std::string explain(const std::string& format) const;
  std::string optimized_text() const;
  nb::list parameters() const;
  std::vector<std::string> fallback_ops() const;

 private:
  // The position among the result leaves of the output an argument is aliased to; -1: none.
  // (JAX's results are a flat tuple, or one array.)
  int64_t aliased_result(const Executable::Argument& argument) const;
  // donate=None/False: none; True: all; an int or an iterable of ints: those arguments.
  static std::vector<bool> donation_flags(nb::object donate, size_t count);

  std::unique_ptr<Executable> executable_;
  std::string file_;  // for located errors: the module's path, or "<module NAME>"
  std::string explain_text_, explain_json_;
  double compile_seconds_;
  int64_t unused_donors_;
  // What the last call added to the executable's own stats (Executable::last_stats): the
  // bytes the DLPack path copied to make arguments row-major, and its thread count (-1: no call
  // yet). Two calls that finish together may mix their fields; each is one call's value.
  void record_call(int64_t argument_bytes_copied, int threads) {
    last_argument_bytes_copied_.store(argument_bytes_copied, std::memory_order_relaxed);
    last_threads_.store(threads, std::memory_order_release);
  }
  std::atomic<int64_t> last_argument_bytes_copied_{0};
  std::atomic<int> last_threads_{-1};
  int64_t ffi_id_ = 0;  // 0: not registered for XLA calls (ffi_id)
  std::vector<int64_t> result_bytes_;  // the byte size of each array leaf of the entry result
  struct XlaArgument {
    int64_t bytes;           // the argument's byte size
    int64_t aliased_result;  // aliased_result(argument)
  };
  std::vector<XlaArgument> xla_arguments_;  // per argument, for run_for_xla's checks
};

#ifdef INSITU_HAVE_XLA_FFI
// The address of the XLA FFI handler "insitu_call" (insitu_xla_call, _insitu_xla_ffi.cc), which
// insitu.jax registers with XLA.
void* xla_ffi_handler();
#endif

}  // namespace insitu::python
