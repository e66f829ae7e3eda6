#include "insitu/ir/dtype.h"
#include "insitu/support/enum_names.h"

#include <array>
#include <utility>

namespace insitu {
namespace {

constexpr std::array<std::pair<PrimitiveType, std::string_view>, 32> kNames = {{
    {PrimitiveType::kPred, "pred"}, {PrimitiveType::kS8, "s8"},     {PrimitiveType::kS16, "s16"},
    {PrimitiveType::kS32, "s32"},   {PrimitiveType::kS64, "s64"},   {PrimitiveType::kU8, "u8"},
    {PrimitiveType::kU16, "u16"},   {PrimitiveType::kU32, "u32"},   {PrimitiveType::kU64, "u64"},
    {PrimitiveType::kF16, "f16"},   {PrimitiveType::kBF16, "bf16"}, {PrimitiveType::kF32, "f32"},
    {PrimitiveType::kF64, "f64"},   {PrimitiveType::kC64, "c64"},   {PrimitiveType::kC128, "c128"},
    {PrimitiveType::kToken, "token"}, {PrimitiveType::kTuple, "tuple"},
    {PrimitiveType::kS1, "s1"},     {PrimitiveType::kS2, "s2"},     {PrimitiveType::kS4, "s4"},
    {PrimitiveType::kU1, "u1"},     {PrimitiveType::kU2, "u2"},     {PrimitiveType::kU4, "u4"},
    {PrimitiveType::kF4E2M1FN, "f4e2m1fn"}, {PrimitiveType::kF8E3M4, "f8e3m4"},
    {PrimitiveType::kF8E4M3, "f8e4m3"}, {PrimitiveType::kF8E4M3FN, "f8e4m3fn"},
    {PrimitiveType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz"}, {PrimitiveType::kF8E4M3FNUZ, "f8e4m3fnuz"},
    {PrimitiveType::kF8E5M2, "f8e5m2"}, {PrimitiveType::kF8E5M2FNUZ, "f8e5m2fnuz"},
    {PrimitiveType::kF8E8M0FNU, "f8e8m0fnu"},
}};

// Types XLA's parser knows that insitu does not compute with.
constexpr std::array<std::string_view, 1> kUnsupported = {"opaque"};

}  // namespace

std::string_view primitive_type_name(PrimitiveType type) { return name_of_enum(kNames, type, "invalid"); }

// "tuple" names a shape kind, not an element type.
std::optional<PrimitiveType> parse_primitive_type(std::string_view name) {
  std::optional<PrimitiveType> type = enum_from_name(kNames, name);
  return type == PrimitiveType::kTuple ? std::nullopt : type;
}

bool is_unsupported_type_name(std::string_view name) {
  for (std::string_view n : kUnsupported)
    if (n == name) return true;
  return false;
}

int64_t byte_width(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred:
    case PrimitiveType::kS8:
    case PrimitiveType::kU8: return 1;
    case PrimitiveType::kS1:
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kU1:
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kF4E2M1FN:
    case PrimitiveType::kF8E3M4:
    case PrimitiveType::kF8E4M3:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E8M0FNU: return 1;
    case PrimitiveType::kS16:
    case PrimitiveType::kU16:
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16: return 2;
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
    case PrimitiveType::kF32: return 4;
    case PrimitiveType::kS64:
    case PrimitiveType::kU64:
    case PrimitiveType::kF64:
    case PrimitiveType::kC64: return 8;
    case PrimitiveType::kC128: return 16;
    default: return 0;
  }
}

int64_t bit_width(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kS1:
    case PrimitiveType::kU1: return 1;
    case PrimitiveType::kS2:
    case PrimitiveType::kU2: return 2;
    case PrimitiveType::kS4:
    case PrimitiveType::kU4:
    case PrimitiveType::kF4E2M1FN: return 4;
    default: return byte_width(type) * 8;
  }
}

bool is_sub_byte_integral(PrimitiveType type) {
  return type == PrimitiveType::kS1 || type == PrimitiveType::kS2 || type == PrimitiveType::kS4 ||
         type == PrimitiveType::kU1 || type == PrimitiveType::kU2 || type == PrimitiveType::kU4;
}

bool is_narrow(PrimitiveType type) {
  return is_sub_byte_integral(type) || (type >= PrimitiveType::kF4E2M1FN && type <= PrimitiveType::kF8E8M0FNU);
}

bool is_array_type(PrimitiveType type) {
  return type != PrimitiveType::kInvalid && type != PrimitiveType::kTuple && type != PrimitiveType::kToken;
}
bool is_signed_integral(PrimitiveType type) {
  return type == PrimitiveType::kS8 || type == PrimitiveType::kS16 || type == PrimitiveType::kS32 ||
         type == PrimitiveType::kS64 || type == PrimitiveType::kS1 || type == PrimitiveType::kS2 ||
         type == PrimitiveType::kS4;
}
bool is_unsigned_integral(PrimitiveType type) {
  return type == PrimitiveType::kU8 || type == PrimitiveType::kU16 || type == PrimitiveType::kU32 ||
         type == PrimitiveType::kU64 || type == PrimitiveType::kU1 || type == PrimitiveType::kU2 ||
         type == PrimitiveType::kU4;
}
bool is_integral(PrimitiveType type) { return is_signed_integral(type) || is_unsigned_integral(type); }
bool is_floating(PrimitiveType type) {
  return type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || type == PrimitiveType::kF32 ||
         type == PrimitiveType::kF64 || (is_narrow(type) && !is_sub_byte_integral(type));
}
bool is_complex(PrimitiveType type) { return type == PrimitiveType::kC64 || type == PrimitiveType::kC128; }
PrimitiveType complex_component_type(PrimitiveType type) {
  if (type == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (type == PrimitiveType::kC128) return PrimitiveType::kF64;
  return type;
}

}  // namespace insitu
