// Element types of XLA's HLO (PrimitiveType), their text names and byte widths.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string_view>

#include "insitu/support/check.h"
#include "insitu/support/float16.h"

namespace insitu {

enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS8, kS16, kS32, kS64,
  kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
  kC64, kC128,
  kTuple,
  kToken,
};

// "s32", "bf16", "pred", "token", ...
std::string_view primitive_type_name(PrimitiveType type);
// Parses an element type name; nullopt for anything unknown. Names XLA knows but insitu does
// not support (f8e4m3fn, s4, ...) are reported by is_unsupported_type_name.
std::optional<PrimitiveType> parse_primitive_type(std::string_view name);
bool is_unsupported_type_name(std::string_view name);

// Bytes per element of an array type (pred is one byte); 0 for tuple/token.
int64_t byte_width(PrimitiveType type);
inline int64_t bit_width(PrimitiveType type) { return byte_width(type) * 8; }

bool is_array_type(PrimitiveType type);  // every element type except tuple/token/invalid
bool is_integral(PrimitiveType type);    // signed or unsigned integer (not pred)
bool is_signed_integral(PrimitiveType type);
bool is_unsigned_integral(PrimitiveType type);
bool is_floating(PrimitiveType type);  // f16, bf16, f32, f64
bool is_complex(PrimitiveType type);   // c64, c128
// The component type of a complex type (c64 -> f32); identity otherwise.
PrimitiveType complex_component_type(PrimitiveType type);

// Maps C++ storage types to PrimitiveType and back. pred is stored as uint8_t-sized bool.
template <typename T> struct NativeToType;
template <> struct NativeToType<bool> { static constexpr PrimitiveType value = PrimitiveType::kPred; };
template <> struct NativeToType<int8_t> { static constexpr PrimitiveType value = PrimitiveType::kS8; };
template <> struct NativeToType<int16_t> { static constexpr PrimitiveType value = PrimitiveType::kS16; };
template <> struct NativeToType<int32_t> { static constexpr PrimitiveType value = PrimitiveType::kS32; };
template <> struct NativeToType<int64_t> { static constexpr PrimitiveType value = PrimitiveType::kS64; };
template <> struct NativeToType<uint8_t> { static constexpr PrimitiveType value = PrimitiveType::kU8; };
template <> struct NativeToType<uint16_t> { static constexpr PrimitiveType value = PrimitiveType::kU16; };
template <> struct NativeToType<uint32_t> { static constexpr PrimitiveType value = PrimitiveType::kU32; };
template <> struct NativeToType<uint64_t> { static constexpr PrimitiveType value = PrimitiveType::kU64; };
template <> struct NativeToType<Half> { static constexpr PrimitiveType value = PrimitiveType::kF16; };
template <> struct NativeToType<BFloat16> { static constexpr PrimitiveType value = PrimitiveType::kBF16; };
template <> struct NativeToType<float> { static constexpr PrimitiveType value = PrimitiveType::kF32; };
template <> struct NativeToType<double> { static constexpr PrimitiveType value = PrimitiveType::kF64; };
template <> struct NativeToType<std::complex<float>> { static constexpr PrimitiveType value = PrimitiveType::kC64; };
template <> struct NativeToType<std::complex<double>> { static constexpr PrimitiveType value = PrimitiveType::kC128; };
template <typename T> inline constexpr PrimitiveType kTypeOf = NativeToType<T>::value;

// Calls fn(T{}) with the C++ storage type of an array element type: the one switch every
// type-generic routine (evaluator, npy, printing) goes through.
//   dispatch_element_type(type, [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) dispatch_element_type(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kPred: return fn(bool{});
    case PrimitiveType::kS8: return fn(int8_t{});
    case PrimitiveType::kS16: return fn(int16_t{});
    case PrimitiveType::kS32: return fn(int32_t{});
    case PrimitiveType::kS64: return fn(int64_t{});
    case PrimitiveType::kU8: return fn(uint8_t{});
    case PrimitiveType::kU16: return fn(uint16_t{});
    case PrimitiveType::kU32: return fn(uint32_t{});
    case PrimitiveType::kU64: return fn(uint64_t{});
    case PrimitiveType::kF16: return fn(Half{});
    case PrimitiveType::kBF16: return fn(BFloat16{});
    case PrimitiveType::kF32: return fn(float{});
    case PrimitiveType::kF64: return fn(double{});
    case PrimitiveType::kC64: return fn(std::complex<float>{});
    case PrimitiveType::kC128: return fn(std::complex<double>{});
    default: break;
  }
  INSITU_UNREACHABLE("dispatch_element_type on a non-array type");
  return fn(bool{});
}

}  // namespace insitu
