// insitu's Python bindings (nanobind): compile HLO text, call it with arrays that cross by
// DLPack without a copy, donate them, read the stats and explain. The Python-facing API and
// its documentation are python/insitu/__init__.py; this file is the C++ half.
//
// Arrays in: any object with __dlpack__ on the CPU (numpy, torch, jax, insitu.Array) becomes
// an external Buffer over the producer's memory (runtime/buffer.h): no copy. A donated one is
// written in place, so a torch tensor or numpy array given with donate= holds the new values
// afterwards. An array that is not compact row-major is copied into a fresh buffer when read
// only (counted in stats' argument_bytes_copied) and refused when donated (it cannot be written
// in place). Objects without __dlpack__ go through numpy.asarray with the parameter's dtype.
//
// Arrays out: insitu.Array, one BufferHandle, exported by __dlpack__ without a copy (the
// capsule keeps the buffer alive). An Array donated to a call is consumed: using it again
// raises, naming the argument.
//
// Errors: every Status becomes insitu.Error carrying the located message the CLI prints.
// The GIL is released while a call runs; buffers over Python memory drop their owner under
// the GIL, from whichever thread frees them.
#include <nanobind/nanobind.h>
#ifdef INSITU_HAVE_XLA_FFI
#include "xla/ffi/api/ffi.h"  // jaxlib's headers (jax.ffi.include_dir()), found by python/CMakeLists.txt
#endif
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "insitu/cli.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/passes/explain.h"
#include "insitu/passes/optimize.h"
#include "insitu/plugins.h"
#include "insitu/run_command.h"
#include "insitu/runtime/executable.h"
#include "insitu/runtime/thread_pool.h"
#include "insitu/support/str.h"

namespace nb = nanobind;

namespace insitu::python {
namespace {

// A Status on its way to Python as insitu.Error; `text` is the message as the CLI prints it.
struct StatusError : std::exception {
  explicit StatusError(std::string message) : text(std::move(message)) {}
  const char* what() const noexcept override { return text.c_str(); }
  std::string text;
};

// The located message the CLI prints for a status, without its "insitu: error: " prefix.
std::string status_text(const Status& status, const std::string& file) {
  std::ostringstream out, err;
  cli::CliContext context{out, err};
  cli::report_error(context, status, file);
  std::string text = err.str();
  if (text.starts_with("insitu: error: ")) text = text.substr(15);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}
[[noreturn]] void raise(const Status& status, const std::string& file = {}) {
  throw StatusError(status_text(status, file));
}

template <typename T>
T value_or_raise(StatusOr<T> result, const std::string& file = {}) {
  if (!result.ok()) raise(result.status(), file);
  return std::move(result).value();
}

// Element types and DLPack's (code, bits): one table both ways.
struct DtypeRow {
  PrimitiveType type;
  nb::dlpack::dtype_code code;
  uint8_t bits;
  const char* numpy_name;  // for numpy.asarray of objects without __dlpack__; null: none
};
constexpr DtypeRow kDtypes[] = {
    {PrimitiveType::kPred, nb::dlpack::dtype_code::Bool, 8, "bool"},
    {PrimitiveType::kS8, nb::dlpack::dtype_code::Int, 8, "int8"},
    {PrimitiveType::kS16, nb::dlpack::dtype_code::Int, 16, "int16"},
    {PrimitiveType::kS32, nb::dlpack::dtype_code::Int, 32, "int32"},
    {PrimitiveType::kS64, nb::dlpack::dtype_code::Int, 64, "int64"},
    {PrimitiveType::kU8, nb::dlpack::dtype_code::UInt, 8, "uint8"},
    {PrimitiveType::kU16, nb::dlpack::dtype_code::UInt, 16, "uint16"},
    {PrimitiveType::kU32, nb::dlpack::dtype_code::UInt, 32, "uint32"},
    {PrimitiveType::kU64, nb::dlpack::dtype_code::UInt, 64, "uint64"},
    {PrimitiveType::kF16, nb::dlpack::dtype_code::Float, 16, "float16"},
    {PrimitiveType::kBF16, nb::dlpack::dtype_code::Bfloat, 16, nullptr},
    {PrimitiveType::kF32, nb::dlpack::dtype_code::Float, 32, "float32"},
    {PrimitiveType::kF64, nb::dlpack::dtype_code::Float, 64, "float64"},
    {PrimitiveType::kC64, nb::dlpack::dtype_code::Complex, 64, "complex64"},
    {PrimitiveType::kC128, nb::dlpack::dtype_code::Complex, 128, "complex128"},
    // DLPack 1.1's 8-bit floats (one byte each, as insitu stores them). The sub-byte types are
    // not here: DLPack packs them, insitu stores one per byte.
    {PrimitiveType::kF8E3M4, nb::dlpack::dtype_code::Float8_E3M4, 8, nullptr},
    {PrimitiveType::kF8E4M3, nb::dlpack::dtype_code::Float8_E4M3, 8, nullptr},
    {PrimitiveType::kF8E4M3B11FNUZ, nb::dlpack::dtype_code::Float8_E4M3B11FNUZ, 8, nullptr},
    {PrimitiveType::kF8E4M3FN, nb::dlpack::dtype_code::Float8_E4M3FN, 8, nullptr},
    {PrimitiveType::kF8E4M3FNUZ, nb::dlpack::dtype_code::Float8_E4M3FNUZ, 8, nullptr},
    {PrimitiveType::kF8E5M2, nb::dlpack::dtype_code::Float8_E5M2, 8, nullptr},
    {PrimitiveType::kF8E5M2FNUZ, nb::dlpack::dtype_code::Float8_E5M2FNUZ, 8, nullptr},
    {PrimitiveType::kF8E8M0FNU, nb::dlpack::dtype_code::Float8_E8M0FNU, 8, nullptr},
};

const DtypeRow* row_of(PrimitiveType type) {
  for (const DtypeRow& row : kDtypes)
    if (row.type == type) return &row;
  return nullptr;
}

const DtypeRow* row_of(nb::dlpack::dtype dtype) {
  if (dtype.lanes != 1) return nullptr;
  for (const DtypeRow& row : kDtypes)
    if (static_cast<uint8_t>(row.code) == dtype.code && row.bits == dtype.bits) return &row;
  return nullptr;
}

std::string dtype_text(nb::dlpack::dtype dtype) {
  static const char* const kCodeNames[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const char* code = dtype.code < 7 ? kCodeNames[dtype.code] : "code ";
  return str_cat(code, dtype.code < 7 ? "" : std::to_string(dtype.code), int(dtype.bits),
                 dtype.lanes == 1 ? "" : str_cat("x", dtype.lanes));
}

std::string shape_text(const Shape& shape) { return shape.to_string(/*print_layout=*/false); }

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
  nb::object to_ndarray(bool capsule = false) const {
    check_usable();
    const Shape& shape = handle_.shape();
    const DtypeRow* row = row_of(shape.element_type());
    if (row == nullptr) raise(unimplemented(str_cat("an array of ", shape_text(shape), " cannot be exported by DLPack")));
    auto* keep = new std::shared_ptr<Buffer>(handle_.shared_buffer());
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<Buffer>*>(p); });
    std::vector<size_t> sizes(shape.dimensions().begin(), shape.dimensions().end());
    const nb::dlpack::dtype dtype{static_cast<uint8_t>(row->code), row->bits, 1};
    if (capsule) {
      nb::ndarray<> array(handle_.data(), sizes.size(), sizes.data(), owner, nullptr, dtype, nb::device::cpu::value);
      return nb::cast(array, nb::rv_policy::reference);
    }
    nb::ndarray<nb::array_api> array(handle_.data(), sizes.size(), sizes.data(), owner, nullptr, dtype,
                                     nb::device::cpu::value);
    return nb::cast(array, nb::rv_policy::reference);
  }

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

// Whether a DLPack tensor is compact row-major (strides null, or the compact ones; a size-1
// dimension's stride does not matter).
bool is_row_major(const nb::ndarray<nb::ro>& array) {
  if (array.stride_ptr() == nullptr) return true;
  int64_t expected = 1;
  for (size_t i = array.ndim(); i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(array.shape(i));
  }
  return true;
}

// Copies a strided array into compact row-major bytes (element strides, any sign).
void gather_row_major(const nb::ndarray<nb::ro>& array, uint8_t* out) {
  const size_t width = array.itemsize(), rank = array.ndim(), count = array.size();
  std::vector<size_t> index(rank, 0);
  const uint8_t* base = static_cast<const uint8_t*>(array.data());
  for (size_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += static_cast<int64_t>(index[d]) * array.stride(d);
    std::memcpy(out + n * width, base + offset * static_cast<int64_t>(width), width);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < array.shape(d)) break;
      index[d] = 0;
    }
  }
}

// Keeps a Python-side DLPack tensor alive for a Buffer; drops it under the GIL.
std::shared_ptr<void> python_owner(nb::ndarray<nb::ro> array) {
  return std::shared_ptr<void>(new nb::ndarray<nb::ro>(std::move(array)), [](void* p) {
#if PY_VERSION_HEX >= 0x030D0000
    if (Py_IsFinalizing()) return;  // the interpreter is going away: nothing left to release
#else
    if (_Py_IsFinalizing()) return;
#endif
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::ndarray<nb::ro>*>(p);
  });
}

// One call argument as a BufferHandle. `bytes_copied` grows by what a non-row-major input cost.
BufferHandle to_handle(nb::handle object, const Executable::Argument& parameter, bool donate, const std::string& what,
                       int64_t& bytes_copied) {
  if (nb::isinstance<Array>(object)) return nb::cast<const Array&>(object).handle();
  nb::object source = nb::borrow(object);
  if (!PyCapsule_CheckExact(source.ptr()) && !nb::hasattr(source, "__dlpack__")) {  // a capsule: DLPack already
    const DtypeRow* row = row_of(parameter.shape.element_type());
    if (row == nullptr || row->numpy_name == nullptr)
      throw nb::type_error(str_cat(what, ": expected an array with __dlpack__ (numpy, torch, jax, insitu.Array) for ",
                                   shape_text(parameter.shape), ", got ", nb::type_name(object).c_str())
                               .c_str());
    source = nb::module_::import_("numpy").attr("asarray")(source, row->numpy_name);
  }
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(source, array))
    throw nb::type_error(str_cat(what, ": its __dlpack__ gave no array nanobind can read (", nb::type_name(source).c_str(),
                                 ")")
                             .c_str());
  if (array.device_type() != nb::device::cpu::value)
    raise(invalid_argument(str_cat(what, ": the array is on DLPack device ", array.device_type(),
                                   "; insitu runs on the CPU (move it with .cpu() or numpy.asarray)")));
  const DtypeRow* row = row_of(array.dtype());
  if (row == nullptr)
    raise(invalid_argument(str_cat(what, ": element type ", dtype_text(array.dtype()), " has no insitu type")));
  std::vector<int64_t> dimensions;
  for (size_t i = 0; i < array.ndim(); ++i) dimensions.push_back(static_cast<int64_t>(array.shape(i)));
  Shape shape = Shape::array(row->type, dimensions);
  if (!shape.compatible(parameter.shape))
    raise(invalid_argument(str_cat(what, ": expected ", shape_text(parameter.shape), ", got ", shape_text(shape))));
  // The parameter's shape, layout included: the bytes are logical row-major either way.
  shape = parameter.shape;
  if (is_row_major(array)) {
    if (reinterpret_cast<uintptr_t>(array.data()) % std::max<int64_t>(byte_width(row->type), 1) != 0)
      raise(invalid_argument(str_cat(what, ": the array's data is not aligned to its element size")));
    auto* data = const_cast<uint8_t*>(static_cast<const uint8_t*>(array.data()));
    return BufferHandle(Buffer::external(std::move(shape), data, python_owner(std::move(array))));
  }
  if (donate)
    raise(invalid_argument(str_cat(what, " is donated but not compact row-major (its strides say it is a view), so it "
                                         "cannot be written in place; donate a contiguous array (x.contiguous(), "
                                         "numpy.ascontiguousarray)")));
  std::shared_ptr<Buffer> buffer = value_or_raise(Buffer::allocate(std::move(shape), false, what));
  gather_row_major(array, buffer->data());
  bytes_copied += buffer->size_bytes();
  return BufferHandle(std::move(buffer));
}

// A compiled module and what the compiler said about it.
class PyExecutable {
 public:
  PyExecutable(std::unique_ptr<Executable> executable, std::string file, Explanation explanation,
               double compile_seconds, int64_t unused_donors)
      : executable_(std::move(executable)),
        file_(std::move(file)),
        explain_text_(explanation_text(explanation)),
        explain_json_(explanation_json(explanation)),
        compile_seconds_(compile_seconds),
        unused_donors_(unused_donors) {
    executable_->module().entry()->root()->shape().for_each_leaf([&](const Shape& leaf, const ShapeIndex&) {
      if (leaf.is_array()) result_bytes_.push_back(leaf.byte_size());
    });
    for (const Executable::Argument& argument : executable_->arguments())
      xla_arguments_.push_back({argument.shape.byte_size(), aliased_result(argument)});
  }

  nb::object call(nb::tuple args, nb::object donate, int threads, double timeout_seconds) {
    const std::vector<Executable::Argument>& parameters = executable_->arguments();
    if (args.size() != parameters.size())
      raise(invalid_argument(str_cat("the module takes ", parameters.size(), " argument(s) (one per parameter leaf), got ",
                                     args.size())));
    std::vector<bool> flags = donation_flags(donate, parameters.size());
    std::vector<BufferHandle> handles;
    int64_t argument_bytes_copied = 0;
    for (size_t i = 0; i < parameters.size(); ++i)
      handles.push_back(to_handle(args[i], parameters[i], flags[i], str_cat("argument ", i, " (", parameters[i].describe(), ")"),
                                  argument_bytes_copied));
    ExecuteOptions options{.donate = flags, .threads = threads, .timeout_seconds = timeout_seconds};
    StatusOr<std::vector<BufferHandle>> results = [&] {
      nb::gil_scoped_release release;
      return executable_->execute(std::move(handles), options);
    }();
    if (!results.ok()) raise(results.status(), file_);
    record_call(argument_bytes_copied, threads);
    const Shape& root = executable_->module().entry()->root()->shape();
    if (!root.is_tuple()) return nb::cast(Array(std::move(results->front())));
    nb::list leaves;
    for (BufferHandle& handle : *results) leaves.append(nb::cast(Array(std::move(handle))));
    return nb::tuple(leaves);
  }

#ifdef INSITU_HAVE_XLA_FFI
  ~PyExecutable();
  // This executable's number for the XLA FFI handler (xla_call's `executable` attribute):
  // registered on first use, unregistered when the executable goes.
  int64_t ffi_id();
  // One call from inside an XLA program (xla_call below), on XLA's buffers
  // (Executable::execute_borrowed): an argument whose aliased result XLA gave the same memory
  // is donated (written in place); every other result is computed into XLA's result buffer, or
  // copied there (counted in stats' result_bytes_copied).
  Status run_for_xla(std::span<uint8_t* const> args, std::span<const int64_t> arg_bytes,
                     std::span<uint8_t* const> rets, std::span<const int64_t> ret_bytes, int threads) {
    const std::vector<Executable::Argument>& parameters = executable_->arguments();
    if (args.size() != parameters.size())
      return invalid_argument(str_cat("the XLA call passes ", args.size(), " argument(s); the module takes ",
                                      parameters.size()));
    // Reused by this thread's calls, so a tiny call allocates nothing; a call nested in another
    // on this thread (a kernel calling back into XLA) takes its own.
    thread_local ExecuteOptions reused;
    thread_local bool in_use = false;
    ExecuteOptions nested;
    ExecuteOptions& options = in_use ? nested : reused;
    const bool outermost = !in_use;
    in_use = true;
    struct Release {
      bool& flag;
      bool outermost;
      ~Release() { if (outermost) flag = false; }
    } release{in_use, outermost};
    std::vector<bool>& donate = options.donate;
    donate.assign(parameters.size(), false);
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (arg_bytes[i] != xla_arguments_[i].bytes)
        return invalid_argument(str_cat("the XLA call's argument ", i, " has ", arg_bytes[i], " bytes; ",
                                        parameters[i].describe(), " is ", shape_text(parameters[i].shape)));
      const int64_t output = xla_arguments_[i].aliased_result;
      donate[i] = output >= 0 && static_cast<size_t>(output) < rets.size() && rets[output] == args[i];
    }
    const std::vector<int64_t>& result_bytes = result_bytes_;
    if (rets.size() != result_bytes.size())
      return invalid_argument(str_cat("the XLA call expects ", rets.size(), " result(s); the module returns ",
                                      result_bytes.size()));
    for (size_t j = 0; j < rets.size(); ++j)
      if (ret_bytes[j] != result_bytes[j])
        return invalid_argument(str_cat("the XLA call's result ", j, " has ", ret_bytes[j], " bytes; the module's has ",
                                        result_bytes[j]));
    options.threads = threads;
    INSITU_RETURN_IF_ERROR(executable_->execute_borrowed(args, rets, options));
    record_call(0, threads);
    return ok_status();
  }
  const std::string& file() const { return file_; }
#endif
  // The stats of the last call, as JSON text (Python turns it into a dict); null before one.
  std::string stats_json() const {
    const int threads = last_threads_.load(std::memory_order_acquire);
    if (threads < 0) return "null";
    const ExecutionStats stats = executable_->last_stats();
    nlohmann::json json = cli::run_stats_json(*executable_, stats);
    json["argument_bytes_copied"] = last_argument_bytes_copied_.load(std::memory_order_relaxed);
    json["compile_seconds"] = compile_seconds_;
    json["unused_donors"] = unused_donors_;
    json["threads"] = threads;
    json["result_bytes_copied"] = stats.result_bytes_copied;
    return json.dump();
  }
  std::string explain(const std::string& format) const {
    if (format == "text") return explain_text_;
    if (format == "json") return explain_json_;
    throw nb::value_error(str_cat("explain format must be 'text' or 'json', not '", format, "'").c_str());
  }
  std::string optimized_text() const { return print_module(executable_->module()); }
  nb::list parameters() const {
    nb::list list;
    for (const Executable::Argument& argument : executable_->arguments()) {
      nb::dict entry;
      entry["name"] = argument.describe();
      entry["dtype"] = std::string(primitive_type_name(argument.shape.element_type()));
      entry["shape"] = nb::tuple(nb::cast(argument.shape.dimensions()));
      entry["aliased"] = argument.aliased_output.has_value();
      const int64_t output = aliased_result(argument);
      entry["aliased_output"] = output >= 0 ? nb::cast(output) : nb::none();
      entry["must_alias"] = argument.must_alias;
      list.append(entry);
    }
    return list;
  }
  std::vector<std::string> fallback_ops() const {
    std::vector<std::string> names;
    for (const Instruction* instruction : executable_->fallback_instructions())
      names.push_back(str_cat(instruction->name(), " (", opcode_name(instruction->opcode()), ")"));
    return names;
  }

 private:
  // The position among the result leaves of the output an argument is aliased to; -1: none.
  // (JAX's results are a flat tuple, or one array.)
  int64_t aliased_result(const Executable::Argument& argument) const {
    if (!argument.aliased_output) return -1;
    const ShapeIndex& index = *argument.aliased_output;
    const bool tuple = executable_->module().entry()->root()->shape().is_tuple();
    if (index.empty()) return tuple ? -1 : 0;
    return tuple && index.size() == 1 ? index[0] : -1;
  }
  // donate=None/False: none; True: all; an int or an iterable of ints: those arguments.
  static std::vector<bool> donation_flags(nb::object donate, size_t count) {
    std::vector<bool> flags(count, false);
    if (donate.is_none()) return flags;
    if (nb::isinstance<nb::bool_>(donate)) {
      std::fill(flags.begin(), flags.end(), nb::cast<bool>(donate));
      return flags;
    }
    auto mark = [&](nb::handle item) {
      const int64_t i = nb::cast<int64_t>(item);
      if (i < 0 || static_cast<size_t>(i) >= count)
        throw nb::index_error(str_cat("donate: argument ", i, " does not exist (the module takes ", count, ")").c_str());
      flags[i] = true;
    };
    if (nb::isinstance<nb::int_>(donate)) {
      mark(donate);
    } else {
      for (nb::handle item : donate) mark(item);
    }
    return flags;
  }

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
// The executables XLA programs may call, by number. A number is never reused, so a program
// that outlives its executable gets a located "not found", never another module's code. Calls
// look up without a lock (a lock per call cost a tenth of a tiny call's time in insitu): the
// table is chunks of atomic slots that are made once and never move.
class FfiRegistry {
 public:
  static constexpr int64_t kChunk = 1024, kChunks = 4096;  // numbers 1 .. 4M - 1 in a process

  PyExecutable* find(int64_t id) const {
    if (id <= 0 || id >= kChunk * kChunks) return nullptr;
    const Slot* chunk = chunks_[id / kChunk].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : chunk[id % kChunk].load(std::memory_order_acquire);
  }
  int64_t add(PyExecutable* executable) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (next_ >= kChunk * kChunks)
      raise(resource_exhausted(str_cat("this process has registered ", next_ - 1,
                                       " executables for insitu.jax calls, the most it can")));
    const int64_t id = next_++;
    if (chunks_[id / kChunk].load(std::memory_order_relaxed) == nullptr)
      chunks_[id / kChunk].store(new Slot[kChunk]{}, std::memory_order_release);  // kept for the process
    slot(id).store(executable, std::memory_order_release);
    return id;
  }
  void remove(int64_t id) { slot(id).store(nullptr, std::memory_order_release); }

 private:
  using Slot = std::atomic<PyExecutable*>;
  Slot& slot(int64_t id) { return chunks_[id / kChunk].load(std::memory_order_acquire)[id % kChunk]; }
  std::mutex mutex_;  // guards next_ and making chunks
  int64_t next_ = 1;
  std::atomic<Slot*> chunks_[kChunks] = {};
};
FfiRegistry& ffi_registry() {
  static FfiRegistry* registry = new FfiRegistry;  // outlives every executable
  return *registry;
}
int64_t PyExecutable::ffi_id() {
  if (ffi_id_ == 0) ffi_id_ = ffi_registry().add(this);  // under the GIL: one registration
  return ffi_id_;
}
PyExecutable::~PyExecutable() {
  if (ffi_id_ != 0) ffi_registry().remove(ffi_id_);
}
// The body of the XLA FFI target "insitu_call" (registered by insitu.jax): runs executable
// `id` on the call's buffers. Runs on XLA's thread, without the GIL; a failure is an XLA error
// carrying insitu's located message.
xla::ffi::Error xla_call(int64_t id, int32_t threads, xla::ffi::RemainingArgs args, xla::ffi::RemainingRets rets) {
  PyExecutable* executable = ffi_registry().find(id);
  if (executable == nullptr)
    return xla::ffi::Error(xla::ffi::ErrorCode::kNotFound,
                           str_cat("insitu: executable ", id, " is gone (its insitu.jax.jit function was freed)"));
  // Pointers and sizes of the arguments, then the results: on the stack for small calls.
  const size_t n = args.size(), total = args.size() + rets.size();
  constexpr size_t kInline = 32;
  uint8_t* inline_pointers[kInline];
  int64_t inline_bytes[kInline];
  std::vector<uint8_t*> heap_pointers;
  std::vector<int64_t> heap_bytes;
  if (total > kInline) {
    heap_pointers.resize(total);
    heap_bytes.resize(total);
  }
  uint8_t** pointers = total > kInline ? heap_pointers.data() : inline_pointers;
  int64_t* bytes = total > kInline ? heap_bytes.data() : inline_bytes;
  for (size_t i = 0; i < n; ++i) {
    xla::ffi::ErrorOr<xla::ffi::AnyBuffer> buffer = args.get<xla::ffi::AnyBuffer>(i);
    if (buffer.has_error()) return buffer.error();
    pointers[i] = static_cast<uint8_t*>(buffer->untyped_data());
    bytes[i] = static_cast<int64_t>(buffer->size_bytes());
  }
  for (size_t j = 0; j < rets.size(); ++j) {
    xla::ffi::ErrorOr<xla::ffi::Result<xla::ffi::AnyBuffer>> buffer = rets.get<xla::ffi::AnyBuffer>(j);
    if (buffer.has_error()) return buffer.error();
    pointers[n + j] = static_cast<uint8_t*>((*buffer)->untyped_data());
    bytes[n + j] = static_cast<int64_t>((*buffer)->size_bytes());
  }
  std::span<uint8_t* const> all_pointers(pointers, total);
  std::span<const int64_t> all_bytes(bytes, total);
  Status status = executable->run_for_xla(all_pointers.first(n), all_bytes.first(n), all_pointers.subspan(n),
                                          all_bytes.subspan(n), threads);
  if (!status.ok())
    return xla::ffi::Error(xla::ffi::ErrorCode::kInternal, "insitu: " + status_text(status, executable->file()));
  return xla::ffi::Error::Success();
}
#endif
std::unique_ptr<Module> parse_verified(const std::string& text, const std::string& file) {
  std::unique_ptr<Module> module = value_or_raise(parse_module(text), file);
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

#ifdef INSITU_HAVE_XLA_FFI
XLA_FFI_DEFINE_HANDLER_SYMBOL(insitu_xla_call, insitu::python::xla_call,
                              xla::ffi::Ffi::Bind()
                                  .Attr<int64_t>("executable")
                                  .Attr<int32_t>("threads")
                                  .RemainingArgs()
                                  .RemainingRets());
#endif

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
#ifdef INSITU_HAVE_XLA_FFI
  // The XLA FFI handler insitu.jax registers as target "insitu_call" (a capsule of its address),
  // and each executable's number for its `executable` attribute.
  m.def("_xla_ffi_handler", [] { return nb::capsule(reinterpret_cast<void*>(&insitu_xla_call)); });
  cls.def("_ffi_id", &PyExecutable::ffi_id);
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
    if (ins::Status status = ins::cli::load_plugin(path); !status.ok()) raise(status);
  });
}
