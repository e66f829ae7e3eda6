// CUDA C++ for elementwise loop fusions, the prelude, and NVRTC (codegen.h).
#include "insitu/cuda/codegen.h"
#include "insitu/cuda/codegen_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

#ifdef INSITU_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace insitu::cuda {
namespace detail {

Status refuse(const Instruction& instruction, std::string_view why) {
  return unimplemented(str_cat("no CUDA kernel for %", instruction.name(), " (", opcode_name(instruction.opcode()),
                               "): ", why),
                       instruction.location());
}

// The CUDA type of an element type the generator handles.
StatusOr<std::string> cuda_type(const Instruction& instruction, PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32: return std::string("float");
    case PrimitiveType::kF64: return std::string("double");
    case PrimitiveType::kS32: return std::string("int");
    case PrimitiveType::kS64: return std::string("long long");
    case PrimitiveType::kU32: return std::string("unsigned int");
    case PrimitiveType::kU64: return std::string("unsigned long long");
    case PrimitiveType::kPred: return std::string("bool");
    case PrimitiveType::kS8: return std::string("signed char");
    case PrimitiveType::kU8: return std::string("unsigned char");
    case PrimitiveType::kS16: return std::string("short");
    case PrimitiveType::kU16: return std::string("unsigned short");
    case PrimitiveType::kBF16: return std::string("insitu_bf16");
    case PrimitiveType::kF16: return std::string("insitu_f16");
    default: return refuse(instruction, str_cat("element type ", primitive_type_name(type), " is not generated yet"));
  }
}

std::string compute_type(const std::string& type) {
  return type == "insitu_bf16" || type == "insitu_f16" ? "float" : type;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

std::vector<std::string> coordinates_of(const std::vector<int64_t>& dims) {
  const std::vector<int64_t> strides = strides_of(dims);
  std::vector<std::string> coordinates;
  for (size_t d = 0; d < dims.size(); ++d) coordinates.push_back(str_cat("(i / ", strides[d], "ll % ", dims[d], "ll)"));
  return coordinates;
}

}  // namespace detail

namespace {

using detail::compute_type;
using detail::convert_expression;
using detail::cuda_type;
using detail::refuse;
using detail::stochastic_convert_expression;
using detail::strides_of;

// A scalar constant as a CUDA literal of its type (exact: floats in hexadecimal).
std::string literal_text(const Literal& value) {
  const PrimitiveType type = value.shape().element_type();
  char buffer[64];
  switch (type) {
    case PrimitiveType::kF32:
    case PrimitiveType::kBF16:  // exact as a float; rounded back to its type where it is used
    case PrimitiveType::kF16: {
      const float v = type == PrimitiveType::kF32 ? value.data<float>()[0] : static_cast<float>(value.get_double(0));
      if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
      if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
      std::snprintf(buffer, sizeof buffer, "%af", v);
      return buffer;
    }
    case PrimitiveType::kF64: {
      const double v = value.data<double>()[0];
      if (std::isnan(v)) return "__longlong_as_double(0x7ff8000000000000ll)";
      if (std::isinf(v)) return v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(0xfff0000000000000ll)";
      std::snprintf(buffer, sizeof buffer, "%a", v);
      return buffer;
    }
    case PrimitiveType::kPred: return value.data<bool>()[0] ? "true" : "false";
    default: return str_cat("(", value.get_integer(0), ")");
  }
}

StatusOr<std::string> unary(const Instruction& instruction, const std::string& x, const std::string& type) {
  const bool f = type == "float";
  switch (instruction.opcode()) {
    case Opcode::kNegate: return str_cat("-", x);
    case Opcode::kAbs: return type == "float" || type == "double" ? str_cat(f ? "fabsf(" : "fabs(", x, ")")
                                                                   : str_cat("(", x, " < 0 ? -", x, " : ", x, ")");
    case Opcode::kExp: return str_cat(f ? "expf(" : "exp(", x, ")");
    case Opcode::kLog: return str_cat(f ? "logf(" : "log(", x, ")");
    case Opcode::kLog1p: return str_cat(f ? "log1pf(" : "log1p(", x, ")");
    case Opcode::kExpm1: return str_cat(f ? "expm1f(" : "expm1(", x, ")");
    case Opcode::kTanh: return str_cat(f ? "tanhf(" : "tanh(", x, ")");
    case Opcode::kSqrt: return str_cat(f ? "sqrtf(" : "sqrt(", x, ")");
    case Opcode::kRsqrt: return str_cat(f ? "rsqrtf(" : "rsqrt(", x, ")");
    case Opcode::kLogistic: return str_cat(f ? "1.0f / (1.0f + expf(-" : "1.0 / (1.0 + exp(-", x, "))");
    case Opcode::kNot: return type == "bool" ? str_cat("!", x) : str_cat("~", x);
    // The value's own bits, as the evaluator counts them (0 has all of them leading).
    case Opcode::kClz:
    case Opcode::kPopulationCount: {
      const bool wide = type == "long long" || type == "unsigned long long";
      if (type != "int" && type != "unsigned int" && !wide)
        return refuse(instruction, "a bit count of other types than 32- and 64-bit integers is not generated yet");
      const bool clz = instruction.opcode() == Opcode::kClz;
      return str_cat("(", type, ")", clz ? (wide ? "__clzll((long long)" : "__clz((int)")
                                        : (wide ? "__popcll((unsigned long long)" : "__popc((unsigned int)"),
                     x, ")");
    }
    case Opcode::kSin: return str_cat(f ? "sinf(" : "sin(", x, ")");
    case Opcode::kCos: return str_cat(f ? "cosf(" : "cos(", x, ")");
    // sign: -1, 0, 1 for integers; floats keep -0, +0 and NaN (the evaluator's sign_value).
    case Opcode::kSign:
      return type == "float" || type == "double"
                 ? str_cat("(", x, " != ", x, " || ", x, " == 0 ? ", x, " : (", x, " > 0 ? 1 : -1))")
                 : str_cat("((", x, " > 0) - (", x, " < 0))");
    default: return refuse(instruction, "this op is not generated yet");
  }
}

StatusOr<std::string> binary(const Instruction& instruction, const std::string& a, const std::string& b,
                             const std::string& type) {
  const bool floating = type == "float" || type == "double";
  const bool integer = !floating && type != "bool";
  const bool is_signed = type == "int" || type == "long long" || type == "short" || type == "signed char";
  // Integers wrap, as the evaluator's do (their arithmetic in unsigned: no signed overflow).
  auto wrapping = [&](const char* op) {
    return integer ? str_cat("(", type, ")((unsigned long long)", a, " ", op, " (unsigned long long)", b, ")")
                   : str_cat(a, " ", op, " ", b);
  };
  // (Narrower types compute in int: MIN / -1 there is -MIN, which wraps back to MIN when stored.)
  const std::string minimum = type == "long long" ? "(-9223372036854775807ll - 1)" : "(-2147483647 - 1)";
  switch (instruction.opcode()) {
    case Opcode::kAdd: return wrapping("+");
    case Opcode::kSubtract: return wrapping("-");
    case Opcode::kMultiply: return wrapping("*");
    case Opcode::kDivide:  // XLA's rules: x / 0 is -1 (all ones), MIN / -1 is MIN
      if (!integer) return str_cat(a, " / ", b);
      return str_cat("(", b, " == 0 ? (", type, ")-1 : ",
                     is_signed ? str_cat("(", b, " == -1 && ", a, " == ", minimum, " ? ", a, " : ", a, " / ", b, ")")
                               : str_cat(a, " / ", b),
                     ")");
    // The prelude's, which are the evaluator's maximum_value/minimum_value: the first NaN wins,
    // +0 over -0 (max) and -0 over +0 (min). fmaxf would drop a NaN.
    case Opcode::kMaximum:
      return floating ? str_cat("insitu_max(", a, ", ", b, ")") : str_cat("(", a, " < ", b, " ? ", b, " : ", a, ")");
    case Opcode::kMinimum:
      return floating ? str_cat("insitu_min(", a, ", ", b, ")") : str_cat("(", b, " < ", a, " ? ", b, " : ", a, ")");
    // power_value: 1 when the base is 1 or the exponent 0 (NaN included), else pow.
    case Opcode::kPower:
      if (!floating) return refuse(instruction, "integer power (XLA's squaring rules) is not generated yet");
      return str_cat("(", a, " == 1 || ", b, " == 0 ? 1 : ", type == "float" ? "powf(" : "pow(", a, ", ", b, "))");
    case Opcode::kRemainder:  // XLA's rules: x % 0 is x, x % -1 is 0 (MIN % -1 too)
      if (floating) return str_cat(type == "float" ? "fmodf(" : "fmod(", a, ", ", b, ")");
      if (!integer) return refuse(instruction, "pred remainder is not generated");
      return str_cat("(", b, " == 0 ? ", a, " : ", is_signed ? str_cat("(", b, " == -1 ? (", type, ")0 : ", a, " % ", b, ")")
                                                               : str_cat(a, " % ", b), ")");
    case Opcode::kAnd: return str_cat(a, type == "bool" ? " && " : " & ", b);
    case Opcode::kOr: return str_cat(a, type == "bool" ? " || " : " | ", b);
    case Opcode::kXor: return str_cat(a, type == "bool" ? " != " : " ^ ", b);
    // Shifts by the bit width or more (the amount read as unsigned) shift everything out, as the
    // evaluator's shift_*_value.
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic: {
      if (!integer) return refuse(instruction, "a shift of a non-integer type");
      const bool wide = type == "long long" || type == "unsigned long long";
      const std::string u = wide ? "unsigned long long" : "unsigned int", s = wide ? "long long" : "int";
      // The amount against the type's own width; a narrow value shifted right logically is its
      // own bits, zero-extended.
      const int bits = wide ? 64 : type == "short" || type == "unsigned short" ? 16
                                 : type == "signed char" || type == "unsigned char" ? 8 : 32;
      const std::string bits_of_a = bits == 16 ? str_cat("(unsigned short)", a) : bits == 8 ? str_cat("(unsigned char)", a) : a;
      const std::string out_of_range = str_cat("((", u, ")", b, " >= ", bits, "u)");
      if (instruction.opcode() == Opcode::kShiftLeft)
        return str_cat("(", out_of_range, " ? (", type, ")0 : (", type, ")((", u, ")", a, " << ", b, "))");
      if (instruction.opcode() == Opcode::kShiftRightLogical)
        return str_cat("(", out_of_range, " ? (", type, ")0 : (", type, ")((", u, ")", bits_of_a, " >> ", b, "))");
      return str_cat("(", out_of_range, " ? (", type, ")((", s, ")", a, " < 0 ? -1 : 0) : (", type, ")((", s, ")", a,
                     " >> ", b, "))");
    }
    default: return refuse(instruction, "this op is not generated yet");
  }
}

}  // namespace

std::string kernel_prelude() {
  return R"(// insitu's CUDA prelude: the evaluator's semantics where CUDA's own functions differ.
// bf16 and f16 as the evaluator keeps them (support/float16.h): 16 bits in memory, computed in
// float, rounded to nearest even wherever a value of the type is made (each op's result).
struct insitu_bf16 {
  unsigned short bits;
  insitu_bf16() = default;
  __device__ insitu_bf16(float value) {
    const unsigned int u = (unsigned int)__float_as_int(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) bits = (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
    else bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __device__ operator float() const { return __int_as_float((int)((unsigned int)bits << 16)); }
};
struct insitu_f16 {
  unsigned short bits;
  insitu_f16() = default;
  __device__ insitu_f16(float value) {
    const unsigned int u = (unsigned int)__float_as_int(value);
    const unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
    unsigned int magnitude = u & 0x7fffffffu;
    if (magnitude > 0x7f800000u) { bits = sign | 0x7e00u; return; }    // NaN
    if (magnitude >= 0x477ff000u) { bits = sign | 0x7c00u; return; }   // overflow: inf
    if (magnitude < 0x38800000u) {                                     // subnormal or zero
      const float scaled = __int_as_float((int)magnitude) * 16777216.0f;
      unsigned int units = (unsigned int)scaled;
      const float fraction = scaled - (float)units;
      if (fraction > 0.5f || (fraction == 0.5f && (units & 1u))) ++units;
      bits = (unsigned short)(sign | units);
      return;
    }
    magnitude += 0xc8000fffu + ((magnitude >> 13) & 1u);  // rebias and round to nearest even
    bits = (unsigned short)(sign | (magnitude >> 13));
  }
  __device__ operator float() const {
    const unsigned int sign = ((unsigned int)bits & 0x8000u) << 16;
    const unsigned int exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0)
      return __int_as_float((int)((unsigned int)__float_as_int((float)mantissa * (1.0f / 16777216.0f)) | sign));
    if (exponent == 31) return __int_as_float((int)(sign | 0x7f800000u | (mantissa << 13)));
    return __int_as_float((int)(sign | ((exponent + 112) << 23) | (mantissa << 13)));
  }
};
static __device__ __forceinline__ float insitu_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return __float_as_int(a) < 0 ? b : a;
  return a < b ? b : a;
}
static __device__ __forceinline__ float insitu_min(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return __float_as_int(a) < 0 ? a : b;
  return b < a ? b : a;
}
static __device__ __forceinline__ double insitu_max(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return __double_as_longlong(a) < 0 ? b : a;
  return a < b ? b : a;
}
// A float's bits as a signed integer ordered like the IEEE total order (-NaN < -inf < ... < -0 <
// 0 < ... < inf < NaN): compare's type=TOTALORDER.
static __device__ __forceinline__ int insitu_total_order(float x) {
  const int bits = __float_as_int(x);
  return bits < 0 ? (int)((unsigned int)bits ^ 0x7fffffffu) : bits;
}
static __device__ __forceinline__ long long insitu_total_order(double x) {
  const long long bits = __double_as_longlong(x);
  return bits < 0 ? (long long)((unsigned long long)bits ^ 0x7fffffffffffffffull) : bits;
}
// bitcast-convert: the bits of `from` read as a `To` of the same width.
template <typename To, typename From>
static __device__ __forceinline__ To insitu_bitcast(From from) {
  union {
    From from;
    To to;
  } bits;
  bits.from = from;
  return bits.to;
}
static __device__ __forceinline__ long long insitu_clamp(long long x, long long hi) {
  return x < 0 ? 0 : (x > hi ? hi : x);
}
static __device__ __forceinline__ double insitu_min(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return __double_as_longlong(a) < 0 ? a : b;
  return b < a ? b : a;
}
)" + custom_kernel_prelude();
}

namespace {

// The kernel computing `body` elementwise into an array of `result_shape`, or into each array
// of a multi-output fusion's tuple (its root a tuple; the arrays of one shape's dimensions)
// (`fusion`: where errors about the whole point).
StatusOr<GeneratedKernel> generate_for_body(const Computation& body, const Shape& result_shape, const Instruction& fusion,
                                            const std::string& name, bool device_function = false,
                                            const std::vector<int64_t>& written_operands = {}) {
  std::vector<const Shape*> results;
  if (result_shape.is_array()) {
    results.push_back(&result_shape);
  } else {
    if (body.root()->opcode() != Opcode::kTuple || body.root()->operand_count() != result_shape.tuple_size() ||
        result_shape.tuple_size() == 0)
      return refuse(fusion, "a tuple-shaped fusion whose root is not a tuple of its outputs");
    for (int64_t k = 0; k < result_shape.tuple_size(); ++k) {
      const Shape& leaf = result_shape.tuple_shape(k);
      if (!leaf.is_array() || leaf.dimensions() != result_shape.tuple_shape(0).dimensions())
        return refuse(fusion, "a multi-output fusion whose outputs are not arrays of one shape's dimensions");
      results.push_back(&leaf);
    }
  }
  const Shape& out_shape = *results[0];
  const std::vector<int64_t>& dims = out_shape.dimensions();
  const std::vector<int64_t> out_strides = strides_of(dims);
  std::string code;
  // One pointer per fusion operand, in parameter order (read or not).
  std::vector<std::string> params(static_cast<size_t>(body.parameter_count()));
  for (int64_t p = 0; p < body.parameter_count(); ++p) {
    const Instruction* parameter = body.parameter(p);
    if (parameter == nullptr) return refuse(fusion, str_cat("parameter ", p, " of the fused computation is missing"));
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(*parameter, parameter->shape().element_type()));
    if (device_function && parameter->shape().rank() != 0)
      return refuse(*parameter, "a computation over arrays, not scalars, as a device function");
    const bool written = std::find(written_operands.begin(), written_operands.end(), p) != written_operands.end();
    const char* restrict = written ? "* " : "* __restrict__ ";  // written over: aliased
    params[p] = device_function ? str_cat("const ", type, " p", p, ", ") : str_cat("const ", type, restrict, "p", p, ", ");
  }
  std::unordered_map<const Instruction*, std::string> values;  // instruction -> C++ expression/variable
  // Parameters of another shape than the result's: read only through broadcasts, by index.
  std::unordered_map<const Instruction*, std::string> indexed;
  int64_t next = 0;
  for (const Instruction* instruction : body.instructions()) {
    const Shape& shape = instruction->shape();
    if (instruction == body.root() && results.size() > 1) break;  // the outputs' tuple: written below
    if (!shape.is_array()) return refuse(*instruction, "tuples inside the fusion are not generated yet");
    const bool scalar = shape.rank() == 0;
    INSITU_ASSIGN_OR_RETURN(std::string type, cuda_type(*instruction, shape.element_type()));
    if (instruction->opcode() == Opcode::kParameter && !scalar && shape.dimensions() != dims) {
      // Named at the instruction that reads it (a fusion's parameter has no place in the text).
      const auto reader = std::find_if(instruction->users().begin(), instruction->users().end(),
                                       [](const Instruction* user) { return user->opcode() != Opcode::kBroadcast; });
      if (reader != instruction->users().end())
        return refuse(**reader, str_cat("it reads a fusion operand of shape ", shape.to_string(false),
                                        ", not the fusion's ", out_shape.to_string(false),
                                        " (only elementwise reads and broadcasts inside a fusion are generated)"));
      indexed[instruction] = str_cat("p", instruction->parameter_number);
      continue;
    }
    if (!scalar && shape.dimensions() != dims)
      return refuse(*instruction, str_cat("shape ", shape.to_string(false), " is not the fusion's ",
                                          out_shape.to_string(false), " (only elementwise fusions are generated)"));
    auto operand = [&](int64_t k) { return values.at(instruction->operand(k)); };
    const std::string compute = compute_type(type);  // bf16 and f16 compute in float
    std::string expression;
    switch (instruction->opcode()) {
      case Opcode::kParameter:
        expression = str_cat("p", instruction->parameter_number, device_function ? "" : scalar ? "[0]" : "[i]");
        if (compute != type) expression = str_cat("(", compute, ")", expression);  // a narrow float, as float
        break;
      case Opcode::kConstant:
        if (!scalar) return refuse(*instruction, "array constants are not generated yet");
        expression = literal_text(instruction->literal);
        break;
      case Opcode::kBroadcast: {
        const Instruction& source = *instruction->operand(0);
        if (source.shape().rank() == 0) {
          expression = operand(0);
          break;
        }
        if (!indexed.count(&source))
          return refuse(*instruction, "a broadcast of a computed array is not generated yet (only of a parameter)");
        // The source element of output element i: its coordinates along the mapped dimensions.
        const std::vector<int64_t> source_strides = strides_of(source.shape().dimensions());
        std::string index;
        for (size_t k = 0; k < instruction->dimensions.size(); ++k) {
          const int64_t d = instruction->dimensions[k];
          if (!index.empty()) index += " + ";
          index += str_cat("(i / ", out_strides[d], "ll % ", dims[d], "ll) * ", source_strides[k], "ll");
        }
        expression = str_cat(indexed.at(&source), "[", index, "]");
        if (compute != type) expression = str_cat("(", compute, ")", expression);
        break;
      }
      case Opcode::kClamp: {  // clamp(lo, x, hi) = min(max(x, lo), hi), the evaluator's order
        const std::string lo = operand(0), x = operand(1), hi = operand(2);
        const bool floating = compute == "float" || compute == "double";
        expression = floating ? str_cat("insitu_min(insitu_max(", x, ", ", lo, "), ", hi, ")")
                              : str_cat("(", hi, " < (", x, " < ", lo, " ? ", lo, " : ", x, ") ? ", hi, " : (", x, " < ",
                                        lo, " ? ", lo, " : ", x, "))");  // hi wins when lo > hi
        break;
      }
      case Opcode::kIsFinite: {  // neither NaN nor infinite
        const PrimitiveType from = instruction->operand(0)->shape().element_type();
        expression = str_cat(from == PrimitiveType::kF32 ? "fabsf(" : "fabs(", operand(0), ") <= ",
                             from == PrimitiveType::kF32 ? "0x1.fffffep+127f" : "0x1.fffffffffffffp+1023");
        break;
      }
      case Opcode::kIota: {
        const int64_t d = instruction->iota_dimension;
        if (d < 0 || d >= static_cast<int64_t>(dims.size())) return refuse(*instruction, "iota_dimension out of range");
        expression = str_cat("(i / ", out_strides[d], "ll % ", dims[d], "ll)");
        break;
      }
      case Opcode::kConvert: {
        INSITU_ASSIGN_OR_RETURN(expression, convert_expression(*instruction, operand(0), type));
        break;
      }
      case Opcode::kStochasticConvert: {
        INSITU_ASSIGN_OR_RETURN(expression, stochastic_convert_expression(*instruction, operand(0), operand(1), type));
        break;
      }
      case Opcode::kSelect: expression = str_cat("(", operand(0), " ? ", operand(1), " : ", operand(2), ")"); break;
      case Opcode::kBitcastConvert: {  // the same bits as another type of the same width
        const PrimitiveType from = instruction->operand(0)->shape().element_type();
        if (byte_width(from) != byte_width(shape.element_type()) || from == PrimitiveType::kPred ||
            shape.element_type() == PrimitiveType::kPred)
          return refuse(*instruction, "a bitcast-convert between types of different widths");
        INSITU_ASSIGN_OR_RETURN(std::string from_type, cuda_type(*instruction, from));
        expression = str_cat("insitu_bitcast<", type, ", ", from_type, ">(", operand(0), ")");
        break;
      }
      case Opcode::kCompare: {
        static const char* const kSymbols[] = {"==", "!=", ">=", ">", "<=", "<"};  // ComparisonDirection order
        const PrimitiveType compared = instruction->operand(0)->shape().element_type();
        // type=TOTALORDER on floats: the storage bits ordered as the IEEE total order (the
        // evaluator's total_order_key); on other types the plain order.
        const bool total = instruction->comparison_type == ComparisonType::kTotalOrder &&
                           (compared == PrimitiveType::kF32 || compared == PrimitiveType::kF64 ||
                            compared == PrimitiveType::kBF16 || compared == PrimitiveType::kF16);
        const std::string a = total ? str_cat("insitu_total_order(", operand(0), ")") : operand(0);
        const std::string b = total ? str_cat("insitu_total_order(", operand(1), ")") : operand(1);
        expression = str_cat("(", a, " ", kSymbols[static_cast<int>(instruction->comparison_direction)], " ", b, ")");
        break;
      }
      default:
        if (instruction->operand_count() == 1) {
          INSITU_ASSIGN_OR_RETURN(expression, unary(*instruction, operand(0), compute));
        } else if (instruction->operand_count() == 2) {
          INSITU_ASSIGN_OR_RETURN(expression, binary(*instruction, operand(0), operand(1), compute));
        } else {
          return refuse(*instruction, "this op is not generated yet");
        }
    }
    // Every value in its own register variable, rounded to its type once (as the CPU computes).
    // (A bf16 or f16 value is kept as a float holding the rounded value: the expressions see
    // floats only, the 16-bit types appear where values are loaded, rounded and stored.)
    const std::string variable = str_cat("v", next++);
    code += compute == type ? str_cat("    const ", type, " ", variable, " = (", type, ")(", expression, ");\n")
                            : str_cat("    const ", compute, " ", variable, " = (", compute, ")(", type, ")(", expression, ");\n");
    values[instruction] = variable;
  }
  const std::vector<const Instruction*> roots =
      results.size() > 1 ? std::vector<const Instruction*>(body.root()->operands().begin(), body.root()->operands().end())
                         : std::vector<const Instruction*>{body.root()};
  std::string signature, stores;
  for (const std::string& param : params) signature += param;
  for (size_t k = 0; k < roots.size(); ++k) {
    if (!values.count(roots[k])) return refuse(*roots[k], "the fusion's root is not computed elementwise");
    INSITU_ASSIGN_OR_RETURN(std::string out_type, cuda_type(fusion, results[k]->element_type()));
    const std::string out = results.size() > 1 ? str_cat("out", k) : "out";
    signature += str_cat(out_type, !written_operands.empty() ? "* " : "* __restrict__ ", out, ", ");
    stores += str_cat("    ", out, device_function ? "[0]" : "[i]", " = ", values.at(roots[k]), ";\n");
  }
  GeneratedKernel kernel;
  kernel.name = name;
  if (device_function) {  // (params..., outs...): the computation on one set of scalars
    signature.resize(signature.size() - 2);
    kernel.source = str_cat("static __device__ __forceinline__ void ", name, "(", signature, ") {\n", code, stores, "}\n");
    return kernel;
  }
  kernel.source = str_cat("extern \"C\" __global__ void ", name, "(", signature,
                          "long long n) {\n  const long long i = (long long)blockIdx.x * blockDim.x + "
                          "threadIdx.x;\n  if (i < n) {\n",
                          code, stores, "  }\n}\n");
  return kernel;
}

}  // namespace

StatusOr<GeneratedKernel> generate_scalar_function(const Computation& computation, const Instruction& user,
                                                   const std::string& name) {
  const Instruction* root = computation.root();
  if (root == nullptr) return refuse(user, "an empty computation");
  return generate_for_body(computation, root->shape(), user, name, /*device_function=*/true);
}

StatusOr<GeneratedKernel> generate_elementwise_kernel(const Instruction& fusion, const std::string& name,
                                                      const std::vector<int64_t>& written_operands) {
  if (fusion.opcode() != Opcode::kFusion || fusion.called_computations().empty())
    return refuse(fusion, "not a fusion");
  StatusOr<GeneratedKernel> kernel =
      generate_for_body(*fusion.to_apply(), fusion.shape(), fusion, name, /*device_function=*/false, written_operands);
  if (!kernel.ok()) return kernel.status().with_location(fusion.location());  // where a fused op has none
  return kernel;
}

bool is_op_kernel_opcode(Opcode opcode) {
  return is_elementwise(opcode) || opcode == Opcode::kBroadcast || opcode == Opcode::kIota || opcode == Opcode::kConvert ||
         opcode == Opcode::kBitcastConvert ||
         opcode == Opcode::kSelect || opcode == Opcode::kCompare || opcode == Opcode::kClamp || opcode == Opcode::kIsFinite;
}

StatusOr<GeneratedKernel> generate_op_kernel(const Instruction& op, const std::string& name,
                                             const std::vector<int64_t>& written_operands) {
  const Opcode opcode = op.opcode();
  if (!is_op_kernel_opcode(opcode)) return refuse(op, "no CUDA form for this op yet");
  // The op alone, as a computation of one parameter per operand.
  Computation body(str_cat(op.name(), ".alone"));
  auto copy = std::make_unique<Instruction>(opcode, op.name(), op.shape());
  copy->attributes() = op.attributes();
  copy->set_called_computations(op.called_computations());
  copy->set_location(op.location());
  for (int64_t i = 0; i < op.operand_count(); ++i) {
    auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("p", i), op.operand(i)->shape());
    parameter->parameter_number = i;
    copy->append_operand(body.add_instruction(std::move(parameter)));
  }
  body.set_root(body.add_instruction(std::move(copy)));
  return generate_for_body(body, op.shape(), op, name, /*device_function=*/false, written_operands);
}

#ifdef INSITU_HAVE_NVRTC

bool cuda_available() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "?";
  return str_cat(major, ".", minor);
}

StatusOr<std::string> compile_to_ptx(const std::string& source, const std::string& program_name,
                                     const std::string& arch) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return internal_error("nvrtcCreateProgram failed");
  const std::string arch_option = "--gpu-architecture=" + arch;
  // No --use_fast_math: expf/tanhf stay IEEE-accurate to their documented ulps.
  const char* options[] = {arch_option.c_str(), "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 2, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  if (compiled != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    return invalid_argument(str_cat("NVRTC could not compile ", program_name, " for ", arch, ": ",
                                    nvrtcGetErrorString(compiled), "\n", log));
  }
  size_t ptx_size = 0;
  nvrtcGetPTXSize(program, &ptx_size);
  std::string ptx(ptx_size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  return ptx;
}

#else

bool cuda_available() { return false; }

std::string nvrtc_version() { return ""; }

StatusOr<std::string> compile_to_ptx(const std::string&, const std::string&, const std::string&) {
  return unimplemented("this insitu was built without the CUDA toolkit (NVRTC): configure with -DINSITU_CUDA=ON "
                       "where it is installed");
}

#endif

}  // namespace insitu::cuda
