// Convolutions on the GEMM library's own convolution primitive (library_gemm.h says why oneDNN
// and how its calls are threaded).
#include <algorithm>
#include <vector>

#include "insitu/runtime/library_gemm.h"
#include "insitu/runtime/library_internal.h"
#include "insitu/support/check.h"

#ifdef INSITU_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace insitu::kernels {

#ifdef INSITU_HAVE_ONEDNN
namespace {

dnnl_engine_t cpu_engine() {
  static const dnnl_engine_t engine = [] {
    dnnl_engine_t created = nullptr;
    return dnnl_engine_create(&created, dnnl_cpu, 0) == dnnl_success ? created : nullptr;
  }();
  return engine;
}

bool describe(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, dnnl_memory_desc_t& desc) {
  if (dims.size() > DNNL_MAX_NDIMS || dims.size() != strides.size()) return false;
  dnnl_dims_t d = {}, s = {};
  for (size_t i = 0; i < dims.size(); ++i) {
    d[i] = dims[i];
    s[i] = strides[i];
  }
  return dnnl_memory_desc_init_by_strides(&desc, static_cast<int>(dims.size()), d, dnnl_f32, s) == dnnl_success;
}

}  // namespace

// One primitive per batch slice size (the chunk, and the last chunk when it is shorter).
struct LibraryConvolution::Handles {
  dnnl_memory_desc_t kernel{}, blocked_kernel{};
  struct Slice {
    int64_t batch = 0;
    dnnl_memory_desc_t input{}, output{};
    dnnl_memory_desc_t scratchpad{};  // what one execution needs; each thread passes its own
    dnnl_primitive_t convolution = nullptr;
  };
  Slice full, last;
  int64_t chunk = 0, chunks = 0, input_batch_stride = 0, output_batch_stride = 0;
  dnnl_primitive_t reorder = nullptr;  // kernel -> blocked_kernel
  ~Handles() {
    for (dnnl_primitive_t primitive : {full.convolution, last.convolution, reorder})
      if (primitive != nullptr) dnnl_primitive_destroy(primitive);
  }
};

namespace {

// The slice's descriptors and primitive; false when the library has no optimized one. The
// first slice fixes the blocked kernel format; the second must agree with it.
bool create_slice(const LibraryConvolutionSpec& spec, int64_t batch, dnnl_memory_desc_t* blocked_kernel,
                  bool fixed_kernel, LibraryConvolution::Handles::Slice& slice, std::string& implementation) {
  dnnl_engine_t engine = cpu_engine();
  slice.batch = batch;
  std::vector<int64_t> input_dims = spec.input_dims, output_dims = spec.output_dims;
  input_dims[0] = output_dims[0] = batch;
  if (!describe(input_dims, spec.input_strides, slice.input) || !describe(output_dims, spec.output_strides, slice.output))
    return false;
  dnnl_memory_desc_t any_kernel;
  dnnl_dims_t kernel_dims = {};
  for (size_t i = 0; i < spec.kernel_dims.size(); ++i) kernel_dims[i] = spec.kernel_dims[i];
  if (!fixed_kernel && dnnl_memory_desc_init_by_tag(&any_kernel, static_cast<int>(spec.kernel_dims.size()), kernel_dims,
                                                    dnnl_f32, dnnl_format_tag_any) != dnnl_success)
    return false;
  dnnl_dims_t strides = {}, dilations = {}, low = {}, high = {};
  for (size_t s = 0; s < spec.window_strides.size(); ++s) {
    strides[s] = spec.window_strides[s];
    dilations[s] = spec.dilations[s] - 1;  // the library counts the gaps
    low[s] = spec.padding_low[s];
    high[s] = spec.padding_high[s];
  }
  dnnl_convolution_desc_t desc;
  if (dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &slice.input,
                                                 fixed_kernel ? blocked_kernel : &any_kernel, nullptr, &slice.output,
                                                 strides, dilations, low, high) != dnnl_success)
    return false;
  // A user scratchpad: the library's own is shared by concurrent executions of one primitive
  // unless oneDNN was built with DNNL_ENABLE_CONCURRENT_EXEC, and run() executes this primitive
  // on several pool threads at once (a suspected source of one wrong-valued run, 2026-12-04).
  dnnl_primitive_attr_t attributes = nullptr;
  if (dnnl_primitive_attr_create(&attributes) != dnnl_success) return false;
  dnnl_primitive_desc_t primitive_desc = nullptr;
  const bool described = dnnl_primitive_attr_set_scratchpad_mode(attributes, dnnl_scratchpad_mode_user) == dnnl_success &&
                         dnnl_primitive_desc_create(&primitive_desc, &desc, attributes, engine, nullptr) == dnnl_success;
  dnnl_primitive_attr_destroy(attributes);
  if (!described) return false;
  if (const dnnl_memory_desc_t* scratchpad = dnnl_primitive_desc_query_md(primitive_desc, dnnl_query_scratchpad_md, 0))
    slice.scratchpad = *scratchpad;
  const char* name = "";
  dnnl_primitive_desc_query(primitive_desc, dnnl_query_impl_info_str, 0, &name);
  implementation = name == nullptr ? "" : name;
  // Only its optimized kernels: the reference and GEMM-based ones are slower than insitu's path.
  bool ok = implementation.rfind("ref", 0) != 0 && implementation.find("gemm") == std::string::npos;
  if (ok && !fixed_kernel) *blocked_kernel = *dnnl_primitive_desc_query_md(primitive_desc, dnnl_query_weights_md, 0);
  ok = ok && dnnl_primitive_create(&slice.convolution, primitive_desc) == dnnl_success;
  dnnl_primitive_desc_destroy(primitive_desc);
  return ok;
}

}  // namespace

std::shared_ptr<const LibraryConvolution> LibraryConvolution::create(const LibraryConvolutionSpec& spec) {
  dnnl_engine_t engine = cpu_engine();
  const size_t spatial = spec.window_strides.size();
  if (engine == nullptr || spatial < 1 || spatial > 3 || spec.input_dims.empty() || spec.input_dims[0] < 1)
    return nullptr;
  auto handles = std::make_unique<Handles>();
  const int64_t batch = spec.input_dims[0];
  handles->chunks = std::clamp<int64_t>(spec.batch_chunks, 1, batch);
  handles->chunk = (batch + handles->chunks - 1) / handles->chunks;
  handles->chunks = (batch + handles->chunk - 1) / handles->chunk;
  handles->input_batch_stride = spec.input_strides[0];
  handles->output_batch_stride = spec.output_strides[0];
  std::string implementation;
  if (!describe(spec.kernel_dims, spec.kernel_strides, handles->kernel) ||
      !create_slice(spec, handles->chunk, &handles->blocked_kernel, false, handles->full, implementation))
    return nullptr;
  const int64_t last = batch - (handles->chunks - 1) * handles->chunk;
  std::string last_implementation;
  if (last != handles->chunk &&
      !create_slice(spec, last, &handles->blocked_kernel, true, handles->last, last_implementation))
    return nullptr;
  dnnl_primitive_desc_t reorder_desc = nullptr;
  if (dnnl_reorder_primitive_desc_create(&reorder_desc, &handles->kernel, engine, &handles->blocked_kernel, engine,
                                         nullptr) != dnnl_success)
    return nullptr;
  const dnnl_status_t reorder = dnnl_primitive_create(&handles->reorder, reorder_desc);
  dnnl_primitive_desc_destroy(reorder_desc);
  if (reorder != dnnl_success) return nullptr;
  std::shared_ptr<LibraryConvolution> convolution(new LibraryConvolution());
  convolution->handles_ = std::move(handles);
  convolution->implementation_ = std::move(implementation);
  return convolution;
}

LibraryConvolution::~LibraryConvolution() = default;

void LibraryConvolution::run(const float* input, const float* kernel, float* output, ThreadPool& pool) const {
  const Handles& h = *handles_;
  dnnl_engine_t engine = cpu_engine();
  // The kernel in the primitive's format, once per call, on this thread, into a buffer the
  // thread keeps (a fresh one above malloc's mmap threshold would fault its pages in per call).
  thread_local std::vector<float> blocked;
  const size_t blocked_size = (dnnl_memory_desc_get_size(&h.blocked_kernel) + sizeof(float) - 1) / sizeof(float);
  if (blocked.size() < blocked_size) blocked.resize(blocked_size);
  float* const blocked_kernel = blocked.data();  // the pool's threads must use this thread's buffer
  std::atomic<bool> ok = true;
  {
    SingleThreadedLibrary single_threaded;
    dnnl_stream_t stream = nullptr;
    dnnl_memory_t from = nullptr, to = nullptr;
    bool done = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
                dnnl_memory_create(&from, &h.kernel, engine, const_cast<float*>(kernel)) == dnnl_success &&
                dnnl_memory_create(&to, &h.blocked_kernel, engine, blocked_kernel) == dnnl_success;
    if (done) {
      dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
      done = dnnl_primitive_execute(h.reorder, stream, 2, args) == dnnl_success && dnnl_stream_wait(stream) == dnnl_success;
    }
    for (dnnl_memory_t memory : {from, to})
      if (memory != nullptr) dnnl_memory_destroy(memory);
    if (stream != nullptr) dnnl_stream_destroy(stream);
    ok = done;
  }
  if (ok) {
    pool.parallel_for(h.chunks, [&](int64_t begin, int64_t end) {
      SingleThreadedLibrary single_threaded;
      dnnl_stream_t stream = nullptr;
      if (dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        ok = false;
        return;
      }
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const Handles::Slice& slice = chunk + 1 == h.chunks && h.last.convolution != nullptr ? h.last : h.full;
        dnnl_memory_t in = nullptr, weights = nullptr, out = nullptr, scratch = nullptr;
        thread_local std::vector<uint8_t> scratchpad;  // this pool thread's, reused across calls
        const size_t scratch_bytes = dnnl_memory_desc_get_size(&slice.scratchpad);
        if (scratchpad.size() < scratch_bytes) scratchpad.resize(scratch_bytes);
        bool done =
            dnnl_memory_create(&scratch, &slice.scratchpad, engine, scratchpad.data()) == dnnl_success &&
            dnnl_memory_create(&in, &slice.input, engine,
                               const_cast<float*>(input) + chunk * h.chunk * h.input_batch_stride) == dnnl_success &&
            dnnl_memory_create(&weights, &h.blocked_kernel, engine, blocked_kernel) == dnnl_success &&
            dnnl_memory_create(&out, &slice.output, engine, output + chunk * h.chunk * h.output_batch_stride) ==
                dnnl_success;
        if (done) {
          dnnl_exec_arg_t args[] = {
              {DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out}, {DNNL_ARG_SCRATCHPAD, scratch}};
          done = dnnl_primitive_execute(slice.convolution, stream, 4, args) == dnnl_success &&
                 dnnl_stream_wait(stream) == dnnl_success;
        }
        for (dnnl_memory_t memory : {in, weights, out, scratch})
          if (memory != nullptr) dnnl_memory_destroy(memory);
        if (!done) ok = false;
      }
      dnnl_stream_destroy(stream);
    });
  }
  INSITU_CHECK(ok) << "the library refused a convolution it had accepted at create (" << implementation_ << ")";
}
#else
struct LibraryConvolution::Handles {};
std::shared_ptr<const LibraryConvolution> LibraryConvolution::create(const LibraryConvolutionSpec&) { return nullptr; }
LibraryConvolution::~LibraryConvolution() = default;
void LibraryConvolution::run(const float*, const float*, float*, ThreadPool&) const {
  INSITU_UNREACHABLE("LibraryConvolution::run in a build without a library");
}
#endif

}  // namespace insitu::kernels
