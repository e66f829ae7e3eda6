// insitu.Array and the arrays a call takes, both ways by DLPack (the Python extension's array
// boundary; the shared declarations are in _insitu.h).
//
// Arrays in: any object with __dlpack__ on the CPU (numpy, torch, jax, insitu.Array) becomes
// an external Buffer over the producer's memory (runtime/buffer.h): no copy. A donated one is
// written in place, so a torch tensor or numpy array given with donate= holds the new values
// afterwards. An array that is not compact row-major is copied into a fresh buffer when read
// only (counted in stats' argument_bytes_copied) and refused when donated (it cannot be written
// in place). Objects without __dlpack__ go through numpy.asarray with the parameter's dtype.
// Buffers over Python memory drop their owner under the GIL, from whichever thread frees them.
//
// Arrays out: insitu.Array, one BufferHandle, exported by __dlpack__ without a copy (the
// capsule keeps the buffer alive). An Array donated to a call is consumed: using it again
// raises, naming the argument.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "_insitu.h"

namespace insitu::python {
namespace {

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

}  // namespace

nb::object Array::to_ndarray(bool capsule) const {
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

BufferHandle to_handle(nb::handle object, const Executable::Argument& parameter, bool donate, size_t index,
                       int64_t& bytes_copied) {
  if (nb::isinstance<Array>(object)) return nb::cast<const Array&>(object).handle();
  const auto named = [&] { return str_cat("argument ", index, " (", parameter.describe(), ")"); };
  nb::object source = nb::borrow(object);
  if (!PyCapsule_CheckExact(source.ptr()) && !nb::hasattr(source, "__dlpack__")) {  // a capsule: DLPack already
    const DtypeRow* row = row_of(parameter.shape.element_type());
    if (row == nullptr || row->numpy_name == nullptr)
      throw nb::type_error(str_cat(named(), ": expected an array with __dlpack__ (numpy, torch, jax, insitu.Array) for ",
                                   shape_text(parameter.shape), ", got ", nb::type_name(object).c_str())
                               .c_str());
    source = nb::module_::import_("numpy").attr("asarray")(source, row->numpy_name);
  }
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(source, array))
    throw nb::type_error(str_cat(named(), ": its __dlpack__ gave no array nanobind can read (", nb::type_name(source).c_str(),
                                 ")")
                             .c_str());
  if (array.device_type() != nb::device::cpu::value)
    raise(invalid_argument(str_cat(named(), ": the array is on DLPack device ", array.device_type(),
                                   "; insitu runs on the CPU (move it with .cpu() or numpy.asarray)")));
  const DtypeRow* row = row_of(array.dtype());
  if (row == nullptr)
    raise(invalid_argument(str_cat(named(), ": element type ", dtype_text(array.dtype()), " has no insitu type")));
  std::vector<int64_t> dimensions;
  for (size_t i = 0; i < array.ndim(); ++i) dimensions.push_back(static_cast<int64_t>(array.shape(i)));
  Shape shape = Shape::array(row->type, dimensions);
  if (!shape.compatible(parameter.shape))
    raise(invalid_argument(str_cat(named(), ": expected ", shape_text(parameter.shape), ", got ", shape_text(shape))));
  // The parameter's shape, layout included: the bytes are logical row-major either way.
  shape = parameter.shape;
  if (is_row_major(array)) {
    if (reinterpret_cast<uintptr_t>(array.data()) % std::max<int64_t>(byte_width(row->type), 1) != 0)
      raise(invalid_argument(str_cat(named(), ": the array's data is not aligned to its element size")));
    auto* data = const_cast<uint8_t*>(static_cast<const uint8_t*>(array.data()));
    return BufferHandle(Buffer::external(std::move(shape), data, python_owner(std::move(array))));
  }
  if (donate)
    raise(invalid_argument(str_cat(named(), " is donated but not compact row-major (its strides say it is a view), so it "
                                         "cannot be written in place; donate a contiguous array (x.contiguous(), "
                                         "numpy.ascontiguousarray)")));
  std::shared_ptr<Buffer> buffer = value_or_raise(Buffer::allocate(std::move(shape), false, named()));
  gather_row_major(array, buffer->data());
  bytes_copied += buffer->size_bytes();
  return BufferHandle(std::move(buffer));
}

}  // namespace insitu::python
