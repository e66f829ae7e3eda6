// Element types of XLA's HLO (PrimitiveType), their text names and byte widths.
//
// The narrow types (f8*, f4e2m1fn, s4, u4, s2, u2, s1, u1) are stored one element per byte and
// computed in a wider type (support/narrow_types.h says how).
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "insitu/support/check.h"
#include "insitu/support/float16.h"
#include "insitu/support/narrow_types.h"

namespace insitu {

enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS8, kS16, kS32, kS64,
  kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
  kC64, kC128,
  // Narrow types (XLA's names, without the k): one byte per element in insitu.
  kS1, kS2, kS4, kU1, kU2, kU4,
  kF4E2M1FN, kF8E3M4, kF8E4M3, kF8E4M3FN, kF8E4M3B11FNUZ, kF8E4M3FNUZ, kF8E5M2, kF8E5M2FNUZ, kF8E8M0FNU,
  kTuple,
  kToken,
};

// "s32", "bf16", "pred", "token", ...
std::string_view primitive_type_name(PrimitiveType type);
// Parses an element type name; nullopt for anything unknown. Names XLA knows but insitu does
// not support (opaque) are reported by is_unsupported_type_name.
std::optional<PrimitiveType> parse_primitive_type(std::string_view name);
bool is_unsupported_type_name(std::string_view name);

// Bytes per element of an array type in insitu's storage (pred and the narrow types are one
// byte); 0 for tuple/token.
int64_t byte_width(PrimitiveType type);
// Bits of the type's value (s4: 4, pred: 8 as XLA counts it): what bitcast-convert reinterprets.
int64_t bit_width(PrimitiveType type);
// The types narrower than a byte or of 8 bits that are computed in a wider type: the f8s,
// f4e2m1fn and the sub-byte integers.
bool is_narrow(PrimitiveType type);
bool is_sub_byte_integral(PrimitiveType type);  // s1, s2, s4, u1, u2, u4

bool is_array_type(PrimitiveType type);  // every element type except tuple/token/invalid
bool is_integral(PrimitiveType type);    // signed or unsigned integer (not pred)
bool is_signed_integral(PrimitiveType type);
bool is_unsigned_integral(PrimitiveType type);
bool is_floating(PrimitiveType type);  // f16, bf16, f32, f64 and the f8s, f4e2m1fn
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
#define INSITU_NATIVE_TO_TYPE(Native, Type) \
  template <> struct NativeToType<Native> { static constexpr PrimitiveType value = PrimitiveType::Type; };
INSITU_NATIVE_TO_TYPE(Int1, kS1)
INSITU_NATIVE_TO_TYPE(Int2, kS2)
INSITU_NATIVE_TO_TYPE(Int4, kS4)
INSITU_NATIVE_TO_TYPE(UInt1, kU1)
INSITU_NATIVE_TO_TYPE(UInt2, kU2)
INSITU_NATIVE_TO_TYPE(UInt4, kU4)
INSITU_NATIVE_TO_TYPE(Float4E2M1FN, kF4E2M1FN)
INSITU_NATIVE_TO_TYPE(Float8E3M4, kF8E3M4)
INSITU_NATIVE_TO_TYPE(Float8E4M3, kF8E4M3)
INSITU_NATIVE_TO_TYPE(Float8E4M3FN, kF8E4M3FN)
INSITU_NATIVE_TO_TYPE(Float8E4M3B11FNUZ, kF8E4M3B11FNUZ)
INSITU_NATIVE_TO_TYPE(Float8E4M3FNUZ, kF8E4M3FNUZ)
INSITU_NATIVE_TO_TYPE(Float8E5M2, kF8E5M2)
INSITU_NATIVE_TO_TYPE(Float8E5M2FNUZ, kF8E5M2FNUZ)
INSITU_NATIVE_TO_TYPE(Float8E8M0FNU, kF8E8M0FNU)
#undef INSITU_NATIVE_TO_TYPE
template <typename T> inline constexpr PrimitiveType kTypeOf = NativeToType<T>::value;

// f16, bf16 and the narrow floats: stored in 16 bits or fewer, computed in f32 (to_float /
// from_float), rounded back after every op.
template <typename T>
inline constexpr bool kIsSmallFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || kIsNarrowFloat<T>;

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
    case PrimitiveType::kS1: return fn(Int1{});
    case PrimitiveType::kS2: return fn(Int2{});
    case PrimitiveType::kS4: return fn(Int4{});
    case PrimitiveType::kU1: return fn(UInt1{});
    case PrimitiveType::kU2: return fn(UInt2{});
    case PrimitiveType::kU4: return fn(UInt4{});
    case PrimitiveType::kF4E2M1FN: return fn(Float4E2M1FN{});
    case PrimitiveType::kF8E3M4: return fn(Float8E3M4{});
    case PrimitiveType::kF8E4M3: return fn(Float8E4M3{});
    case PrimitiveType::kF8E4M3FN: return fn(Float8E4M3FN{});
    case PrimitiveType::kF8E4M3B11FNUZ: return fn(Float8E4M3B11FNUZ{});
    case PrimitiveType::kF8E4M3FNUZ: return fn(Float8E4M3FNUZ{});
    case PrimitiveType::kF8E5M2: return fn(Float8E5M2{});
    case PrimitiveType::kF8E5M2FNUZ: return fn(Float8E5M2FNUZ{});
    case PrimitiveType::kF8E8M0FNU: return fn(Float8E8M0FNU{});
    default: break;
  }
  INSITU_UNREACHABLE("dispatch_element_type on a non-array type");
  return fn(bool{});
}

}  // namespace insitu
