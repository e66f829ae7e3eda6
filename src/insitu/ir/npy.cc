// .npy reading and writing (see npy.h for the dtype and bf16 conventions).
//
// File layout: magic "\x93NUMPY", major and minor version bytes, header length (2 bytes
// little-endian in 1.0, 4 bytes in 2.0/3.0), then a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and a final
// newline, then the raw data.
#include "insitu/ir/npy.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "insitu/support/str.h"

namespace insitu {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A tiny parser for the Python dict literal of a .npy header.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  StatusOr<NpyHeader> parse() {
    NpyHeader header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    if (!consume('{')) return error("expected '{'");
    while (true) {
      skip_space();
      if (consume('}')) break;
      std::string key;
      INSITU_RETURN_IF_ERROR(parse_string(key));
      if (!consume(':')) return error("expected ':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (peek() == '[') return error("structured dtypes (a list descr) are not supported; save a plain array");
        INSITU_RETURN_IF_ERROR(parse_string(header.descr));
        seen_descr = true;
      } else if (key == "fortran_order") {
        INSITU_RETURN_IF_ERROR(parse_bool(header.fortran_order));
        seen_order = true;
      } else if (key == "shape") {
        INSITU_RETURN_IF_ERROR(parse_shape(header.shape));
        seen_shape = true;
      } else {
        return error("unexpected header key '" + key + "'");
      }
      skip_space();
      if (consume(',')) continue;
      skip_space();
      if (consume('}')) break;
      return error("expected ',' or '}'");
    }
    if (!seen_descr || !seen_order || !seen_shape)
      return invalid_argument("the .npy header lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  Status error(const std::string& what) const {
    return invalid_argument(str_cat("malformed .npy header at offset ", pos_, ": ", what));
  }
  Status parse_string(std::string& out) {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') return error("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return error("unterminated string");
    out = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return ok_status();
  }
  Status parse_bool(bool& out) {
    if (text_.substr(pos_, 4) == "True") {
      out = true;
      pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      out = false;
      pos_ += 5;
    } else {
      return error("expected True or False");
    }
    return ok_status();
  }
  Status parse_shape(std::vector<int64_t>& out) {
    if (!consume('(')) return error("expected '(' to start the shape");
    while (true) {
      skip_space();
      if (consume(')')) return ok_status();
      size_t start = pos_;
      int64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (value > (INT64_MAX - 9) / 10) return error("dimension too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (pos_ == start) return error("expected a dimension size");
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      out.push_back(value);
      skip_space();
      if (consume(',')) continue;
      if (consume(')')) return ok_status();
      return error("expected ',' or ')' in the shape");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

struct DescrInfo {
  PrimitiveType type;
  bool swap_bytes;  // big-endian data on this (little-endian) machine
};

StatusOr<DescrInfo> parse_descriptor(const std::string& descr, const NpyReadOptions& options) {
  if (descr.size() < 2) return invalid_argument("unsupported .npy dtype '" + descr + "'");
  char order = descr[0];
  std::string kind = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '|';
    kind = descr;  // numpy also accepts descriptors without a byte-order mark ("b1")
  }
  static const std::pair<std::string_view, PrimitiveType> kTypes[] = {
      {"b1", PrimitiveType::kPred}, {"i1", PrimitiveType::kS8},  {"i2", PrimitiveType::kS16},
      {"i4", PrimitiveType::kS32},  {"i8", PrimitiveType::kS64}, {"u1", PrimitiveType::kU8},
      {"u2", PrimitiveType::kU16},  {"u4", PrimitiveType::kU32}, {"u8", PrimitiveType::kU64},
      {"f2", PrimitiveType::kF16},  {"f4", PrimitiveType::kF32}, {"f8", PrimitiveType::kF64},
      {"c8", PrimitiveType::kC64},  {"c16", PrimitiveType::kC128}};
  for (const auto& [name, type] : kTypes) {
    if (kind == name) return DescrInfo{type, order == '>' && byte_width(type) > 1};
  }
  // ml_dtypes 0.7 saves float8_e5m2 (only it) as '<f1', which numpy itself cannot load back.
  if (kind == "f1") {
    if (!is_floating(options.void_type) || byte_width(options.void_type) != 1)
      return invalid_argument("a 1-byte float ('f1', what ml_dtypes writes for float8_e5m2) is read only for a "
                              "parameter of an 8-bit float type, not " +
                              std::string(primitive_type_name(options.void_type)));
    return DescrInfo{options.void_type, false};
  }
  if (kind == "V2" || kind == "V1") {
    const int64_t width = kind == "V2" ? 2 : 1;
    const bool fits = is_array_type(options.void_type) && byte_width(options.void_type) == width &&
                      (width == 2 || is_narrow(options.void_type));
    if (!fits && width == 1)
      return invalid_argument("a 1-byte void ('V1') .npy file holds one of ml_dtypes' 8-bit or smaller types "
                              "(float8_*, float4_e2m1fn, int4, uint4, int2, uint2): it is read only for a "
                              "parameter of such a type, not " + std::string(primitive_type_name(options.void_type)));
    if (!fits)
      return invalid_argument("a 2-byte void ('V2') .npy file cannot hold " +
                              std::string(primitive_type_name(options.void_type)));
    return DescrInfo{options.void_type, order == '>' && width > 1};
  }
  return invalid_argument("unsupported .npy dtype '" + descr +
                          "'; insitu reads bool, int8-64, uint8-64, float16/32/64, complex64/128, "
                          "bfloat16 (ml_dtypes, '<V2') and ml_dtypes' narrow types ('<V1')");
}

// Reverses the bytes of every `width`-byte unit (complex numbers: each component).
void swap_units(uint8_t* data, int64_t bytes, int64_t width) {
  for (int64_t i = 0; i + width <= bytes; i += width) std::reverse(data + i, data + i + width);
}

// Rewrites column-major (Fortran) data into row-major order.
std::vector<uint8_t> fortran_to_c_order(const uint8_t* data, const std::vector<int64_t>& dims, int64_t width) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<uint8_t> out(static_cast<size_t>(count * width));
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t c_linear = 0; c_linear < count; ++c_linear) {
    int64_t f_linear = 0;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) f_linear = f_linear * dims[d] + index[d];
    std::memcpy(out.data() + c_linear * width, data + f_linear * width, static_cast<size_t>(width));
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {  // bump the C-order index
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

uint32_t read_le(std::string_view bytes, size_t offset, int count) {
  uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

}  // namespace

std::string npy_descriptor(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred: return "|b1";
    case PrimitiveType::kS8: return "|i1";
    case PrimitiveType::kS16: return "<i2";
    case PrimitiveType::kS32: return "<i4";
    case PrimitiveType::kS64: return "<i8";
    case PrimitiveType::kU8: return "|u1";
    case PrimitiveType::kU16: return "<u2";
    case PrimitiveType::kU32: return "<u4";
    case PrimitiveType::kU64: return "<u8";
    case PrimitiveType::kF16: return "<f2";
    case PrimitiveType::kBF16: return "<V2";
    case PrimitiveType::kF32: return "<f4";
    case PrimitiveType::kF64: return "<f8";
    case PrimitiveType::kC64: return "<c8";
    case PrimitiveType::kC128: return "<c16";
    default:
      if (is_narrow(type)) return "<V1";
      break;
  }
  INSITU_UNREACHABLE("npy_descriptor of a non-array type");
  return "";
}

StatusOr<Literal> parse_npy(std::string_view contents, const NpyReadOptions& options) {
  static_assert(std::endian::native == std::endian::little, "insitu's .npy code assumes a little-endian host");
  if (contents.size() < 10 || contents.substr(0, kMagic.size()) != kMagic)
    return invalid_argument("not a .npy file (the magic string \\x93NUMPY is missing)");
  int major = static_cast<uint8_t>(contents[6]);
  int minor = static_cast<uint8_t>(contents[7]);
  if (major < 1 || major > 3 || minor != 0)
    return invalid_argument(str_cat("unsupported .npy format version ", major, ".", minor, " (insitu reads 1.0, 2.0, 3.0)"));
  size_t length_bytes = major == 1 ? 2 : 4;
  if (contents.size() < 8 + length_bytes) return invalid_argument("truncated .npy header");
  size_t header_length = read_le(contents, 8, static_cast<int>(length_bytes));
  size_t data_offset = 8 + length_bytes + header_length;
  if (contents.size() < data_offset)
    return invalid_argument(str_cat("truncated .npy header: it declares ", header_length, " bytes but the file ends first"));
  INSITU_ASSIGN_OR_RETURN(NpyHeader header, HeaderParser(contents.substr(8 + length_bytes, header_length)).parse());
  INSITU_ASSIGN_OR_RETURN(DescrInfo descr, parse_descriptor(header.descr, options));

  // The header's claim is checked against the file before anything is allocated.
  const int64_t width = byte_width(descr.type);
  const Shape shape = Shape::array(descr.type, header.shape);
  int64_t expected = width;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(expected, d, &expected))
      return invalid_argument(str_cat("the .npy header claims ", shape.to_string(false),
                                      ", whose byte size overflows 64 bits"));
  const int64_t available = static_cast<int64_t>(contents.size() - data_offset);
  if (available < expected)
    return invalid_argument(str_cat("truncated .npy data: ", shape.to_string(false), " needs ", expected,
                                    " bytes but the file holds ", available));
  if (available > expected)
    return invalid_argument(str_cat("the .npy file has ", available - expected, " bytes after the data of ",
                                    shape.to_string(false)));
  Literal literal(shape);
  const auto* source = reinterpret_cast<const uint8_t*>(contents.data() + data_offset);
  if (header.fortran_order && header.shape.size() > 1) {
    std::vector<uint8_t> reordered = fortran_to_c_order(source, header.shape, width);
    std::copy(reordered.begin(), reordered.end(), literal.untyped_data());
  } else if (expected > 0) {
    std::memcpy(literal.untyped_data(), source, static_cast<size_t>(expected));
  }
  if (descr.swap_bytes) swap_units(literal.untyped_data(), expected, is_complex(descr.type) ? width / 2 : width);
  if (descr.type == PrimitiveType::kPred) {
    for (uint8_t& b : std::span<uint8_t>(literal.untyped_data(), static_cast<size_t>(expected))) b = b != 0;
  }
  // A type narrower than its byte: the low bits are the value; keep the byte canonical.
  if (bit_width(descr.type) < 8) {
    dispatch_element_type(descr.type, [&](auto tag) {
      using T = decltype(tag);
      for (T& value : literal.data<T>()) {
        const uint8_t byte = *reinterpret_cast<const uint8_t*>(&value);
        if constexpr (kIsSubByteInt<T>) value = T::wrap(byte);
        else if constexpr (kIsNarrowFloat<T>) value = T::from_bits(byte & ((1u << bit_width(descr.type)) - 1));
      }
    });
  }
  return literal;
}

StatusOr<Literal> read_npy_file(const std::string& path, const NpyReadOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return not_found(str_cat("cannot open '", path, "': ", std::strerror(errno)));
  std::ostringstream buffer;
  buffer << file.rdbuf();
  StatusOr<Literal> literal = parse_npy(buffer.str(), options);
  if (!literal.ok()) return literal.status().with_context(path);
  return literal;
}

StatusOr<std::string> serialize_npy(const Literal& literal) {
  const Shape& shape = literal.shape();
  if (!shape.is_array())
    return invalid_argument("only arrays can be saved as .npy, not " + shape.to_string(false));
  std::string dims;
  for (int64_t d : shape.dimensions()) dims += std::to_string(d) + ", ";
  if (shape.rank() > 1) dims.resize(dims.size() - 2);  // "(3,)" keeps its comma, "(3, 4)" does not
  if (shape.rank() == 1) dims.pop_back();
  std::string dict = "{'descr': '" + npy_descriptor(shape.element_type()) + "', 'fortran_order': False, 'shape': (" +
                     dims + "), }";
  // Version 1.0 has a 2-byte header length; fall back to 2.0 for enormous headers.
  size_t prefix = dict.size() + 1 > 65535 - 10 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;  // numpy aligns the data to 64 bytes
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  uint32_t length = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(literal.untyped_data()), static_cast<size_t>(literal.size_bytes()));
  return out;
}

Status write_npy_file(const std::string& path, const Literal& literal) {
  INSITU_ASSIGN_OR_RETURN(std::string bytes, serialize_npy(literal));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return not_found(str_cat("cannot write '", path, "': ", std::strerror(errno)));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return internal_error(str_cat("writing '", path, "' failed: ", std::strerror(errno)));
  return ok_status();
}

}  // namespace insitu
