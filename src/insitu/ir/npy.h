// NumPy .npy files as Literals: how `insitu run --arg` reads inputs and `--save` writes results.
//
// Reading accepts format versions 1.0, 2.0 and 3.0 and every numpy dtype that maps to an insitu
// element type: bool (|b1), i1/i2/i4/i8, u1/u2/u4/u8, f2, f4, f8, c8, c16, in little- or
// big-endian byte order (big-endian data is converted). Fortran-order files are transposed into
// C order. Structured, string and object dtypes are errors.
//
// bfloat16 and the narrow types: numpy has none of them; ml_dtypes' bfloat16, float8_*,
// float4_e2m1fn, int4, uint4, int2 and uint2 arrays are saved with the void descriptor of their
// width, '<V2' or '<V1' (older numpy: '|V2'). A void file is read as `void_type` when its width
// matches (default bf16; pass the parameter's type, as the CLI does); a 1-byte void file has no
// default (eight types share that width). ml_dtypes writes float8_e5m2 alone as '<f1' (which
// numpy cannot load back): read the same way, for a parameter of an 8-bit float type. A sub-byte integer's byte is read by its low bits (so
// 0x0f is -1 for s4). A '<f2' file is always f16: feeding it to a bf16 parameter is a dtype
// mismatch, never a silent reinterpretation of the bits. These types are written as '<V2' or
// '<V1', exactly what ml_dtypes writes, so `np.load(f).view(ml_dtypes.bfloat16)` reads it.
//
// Writing produces version 1.0 (2.0 when the header does not fit), little-endian, C order,
// header padded to a multiple of 64 bytes as numpy does.
#pragma once

#include <string>
#include <string_view>

#include "insitu/ir/literal.h"
#include "insitu/support/status.h"

namespace insitu {

struct NpyReadOptions {
  // The element type a void file ('V2', 'V1') holds when its width matches this type's.
  PrimitiveType void_type = PrimitiveType::kBF16;
};

// Parses the bytes of a .npy file. Errors say what is wrong with the file (not its name).
StatusOr<Literal> parse_npy(std::string_view contents, const NpyReadOptions& options = {});
// Reads and parses `path`; errors name the file.
StatusOr<Literal> read_npy_file(const std::string& path, const NpyReadOptions& options = {});

// The .npy bytes of an array literal (tuples and tokens are an error).
StatusOr<std::string> serialize_npy(const Literal& literal);
Status write_npy_file(const std::string& path, const Literal& literal);

// The numpy descriptor insitu writes for an element type: "<f4", "|b1", "<V2" (bf16).
std::string npy_descriptor(PrimitiveType type);

}  // namespace insitu
