// The XLA FFI handler of insitu.jax (target "insitu_call"): with it, insitu.jax.jit runs an
// insitu executable inside jax.jit's own dispatch, as one custom call on XLA's buffers, at
// jax.jit's call overhead. Here: the registry of the executables XLA programs may call, by
// number; the handler; and PyExecutable's XLA half (ffi_id, run_for_xla). Built with jaxlib's
// headers only (INSITU_HAVE_XLA_FFI, set by python/CMakeLists.txt); without them this file adds
// nothing and insitu.jax.jit hands arrays over by DLPack from Python.
#include "_insitu.h"

#ifdef INSITU_HAVE_XLA_FFI
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "xla/ffi/api/ffi.h"  // jaxlib's headers (jax.ffi.include_dir()), found by python/CMakeLists.txt

namespace insitu::python {
namespace {

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

}  // namespace

int64_t PyExecutable::ffi_id() {
  if (ffi_id_ == 0) ffi_id_ = ffi_registry().add(this);  // under the GIL: one registration
  return ffi_id_;
}
PyExecutable::~PyExecutable() {
  if (ffi_id_ != 0) ffi_registry().remove(ffi_id_);
}

Status PyExecutable::run_for_xla(std::span<uint8_t* const> args, std::span<const int64_t> arg_bytes,
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

}  // namespace insitu::python

XLA_FFI_DEFINE_HANDLER_SYMBOL(insitu_xla_call, insitu::python::xla_call,
                              xla::ffi::Ffi::Bind()
                                  .Attr<int64_t>("executable")
                                  .Attr<int32_t>("threads")
                                  .RemainingArgs()
                                  .RemainingRets());

namespace insitu::python {

void* xla_ffi_handler() { return reinterpret_cast<void*>(&insitu_xla_call); }

}  // namespace insitu::python
#endif
