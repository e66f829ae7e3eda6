// Native elementwise kernels: add, subtract, multiply, divide, maximum, minimum, negate, abs,
// remainder, power, sign, exp, log, sqrt, rsqrt, tanh, is-finite, compare and select over
// f32/f64/s32/s64/bf16/f16, and/or/xor/not and compare over pred and every integer type, shifts
// over the integer types, with scalar
// operands (unmaterialized broadcasts) read as scalars. Large arrays split over the pool:
// every element is computed independently, so the split cannot change a result. Semantics are
// the reference evaluator's (elementwise_binary.cc, elementwise_unary.cc,
// elementwise_compare.cc), checked bit for bit in tests/runtime/kernels_test.cc.
#include <cmath>
#include <cstring>
#include <limits>

#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/kernels.h"

namespace insitu {

namespace kernels {
namespace {

// out[i] = fn(a[i]) with the operand possibly a scalar.
template <typename T, typename Out, typename Fn>
void map_unary(const ArrayView& a, const ArrayView& out, ThreadPool& pool, Fn fn) {
  const T* x = reinterpret_cast<const T*>(a.data);
  Out* o = reinterpret_cast<Out*>(out.data);
  const bool scalar = a.scalar;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if (!scalar) {
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i])));
    } else {
      const Out value = to_stored<Out>(fn(to_compute(x[0])));
      for (int64_t i = begin; i < end; ++i) o[i] = value;
    }
  });
}

// out[i] = fn(a[i], b[i]). Array-array and array-scalar (an unmaterialized broadcast) each get
// a unit-stride loop the compiler can vectorize: a runtime stride of 0 or 1 would keep the
// loop scalar (bench/elementwise_bench.cc measured the scalar-broadcast multiply at about half
// of memcpy bandwidth that way). Every case computes the same fn on the same values.
template <typename T, typename Out, typename Fn>
void map_binary(const ArrayView& a, const ArrayView& b, const ArrayView& out, ThreadPool& pool, Fn fn) {
  const T* x = reinterpret_cast<const T*>(a.data);
  const T* y = reinterpret_cast<const T*>(b.data);
  Out* o = reinterpret_cast<Out*>(out.data);
  const bool x_scalar = a.scalar;
  const bool y_scalar = b.scalar;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if (!x_scalar && !y_scalar) {
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i]), to_compute(y[i])));
    } else if (!x_scalar) {
      const auto rhs = to_compute(y[0]);
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i]), rhs));
    } else if (!y_scalar) {
      const auto lhs = to_compute(x[0]);
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(lhs, to_compute(y[i])));
    } else {
      const Out value = to_stored<Out>(fn(to_compute(x[0]), to_compute(y[0])));
      for (int64_t i = begin; i < end; ++i) o[i] = value;
    }
  });
}

template <typename T>
T divide_value(T lhs, T rhs) {
  if constexpr (std::is_integral_v<T>) {
    if (rhs == 0) return static_cast<T>(-1);  // signed types only reach here
    if (rhs == -1 && lhs == std::numeric_limits<T>::min()) return lhs;
    return static_cast<T>(lhs / rhs);
  } else {
    return lhs / rhs;
  }
}

// Calls fn(T{}) for pred and the integer types (the operands of and/or/xor/not).
template <typename Fn>
bool dispatch_bitwise(PrimitiveType type, Fn&& fn) {
  switch (type) {
    case PrimitiveType::kPred: fn(bool{}); return true;
    case PrimitiveType::kS8: fn(int8_t{}); return true;
    case PrimitiveType::kS16: fn(int16_t{}); return true;
    case PrimitiveType::kS32: fn(int32_t{}); return true;
    case PrimitiveType::kS64: fn(int64_t{}); return true;
    case PrimitiveType::kU8: fn(uint8_t{}); return true;
    case PrimitiveType::kU16: fn(uint16_t{}); return true;
    case PrimitiveType::kU32: fn(uint32_t{}); return true;
    case PrimitiveType::kU64: fn(uint64_t{}); return true;
    default: return false;
  }
}

bool run_bitwise_binary(Opcode opcode, const ArrayView& a, const ArrayView& b, const ArrayView& out,
                        ThreadPool& pool) {
  bool handled = true;
  const bool native = dispatch_bitwise(a.type(), [&](auto tag) {
    using T = decltype(tag);
    switch (opcode) {
      case Opcode::kAnd: map_binary<T, T>(a, b, out, pool, [](T x, T y) { return static_cast<T>(x & y); }); break;
      case Opcode::kOr: map_binary<T, T>(a, b, out, pool, [](T x, T y) { return static_cast<T>(x | y); }); break;
      case Opcode::kXor: map_binary<T, T>(a, b, out, pool, [](T x, T y) { return static_cast<T>(x ^ y); }); break;
      default:
        if constexpr (std::is_same_v<T, bool>) {
          handled = false;  // shifts take integers only
        } else if (opcode == Opcode::kShiftLeft) {
          map_binary<T, T>(a, b, out, pool, [](T x, T y) { return shift_left_value(x, y); });
        } else if (opcode == Opcode::kShiftRightLogical) {
          map_binary<T, T>(a, b, out, pool, [](T x, T y) { return shift_right_logical_value(x, y); });
        } else {
          map_binary<T, T>(a, b, out, pool, [](T x, T y) { return shift_right_arithmetic_value(x, y); });
        }
    }
  });
  return native && handled;
}

bool run_binary(Opcode opcode, const ArrayView& a, const ArrayView& b, const ArrayView& out, ThreadPool& pool) {
  if (a.type() != b.type() || out.type() != a.type()) return false;
  switch (opcode) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic: return run_bitwise_binary(opcode, a, b, out, pool);
    default: break;
  }
  bool handled = true;
  const bool native = dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    switch (opcode) {
      case Opcode::kAdd:
        map_binary<T, T>(a, b, out, pool, [](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) + as_unsigned(y));
          else return x + y;
        });
        break;
      case Opcode::kSubtract:
        map_binary<T, T>(a, b, out, pool, [](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) - as_unsigned(y));
          else return x - y;
        });
        break;
      case Opcode::kMultiply:
        map_binary<T, T>(a, b, out, pool, [](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) * as_unsigned(y));
          else return x * y;
        });
        break;
      case Opcode::kDivide: map_binary<T, T>(a, b, out, pool, [](C x, C y) { return divide_value(x, y); }); break;
      case Opcode::kMaximum: map_binary<T, T>(a, b, out, pool, [](C x, C y) { return maximum_value(x, y); }); break;
      case Opcode::kMinimum: map_binary<T, T>(a, b, out, pool, [](C x, C y) { return minimum_value(x, y); }); break;
      case Opcode::kRemainder: map_binary<T, T>(a, b, out, pool, [](C x, C y) { return remainder_value(x, y); }); break;
      case Opcode::kPower: map_binary<T, T>(a, b, out, pool, [](C x, C y) { return power_value(x, y); }); break;
      default: handled = false;
    }
  });
  return native && handled;
}

bool run_unary(Opcode opcode, const ArrayView& a, const ArrayView& out, ThreadPool& pool) {
  if (opcode == Opcode::kIsFinite) {
    if (out.type() != PrimitiveType::kPred || !is_floating(a.type())) return false;
    return dispatch_native_numeric(a.type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_integral_v<T>)
        map_unary<T, bool>(a, out, pool, [](ComputeType<T> x) { return static_cast<bool>(std::isfinite(x)); });
    });
  }
  if (out.type() != a.type()) return false;
  if (opcode == Opcode::kNot) {
    return dispatch_bitwise(a.type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) map_unary<T, T>(a, out, pool, [](T x) { return !x; });
      else map_unary<T, T>(a, out, pool, [](T x) { return static_cast<T>(~x); });
    });
  }
  bool handled = true;
  const bool native = dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    if constexpr (std::is_integral_v<C>) {
      switch (opcode) {
        case Opcode::kNegate:
          map_unary<T, T>(a, out, pool, [](C x) { return static_cast<C>(0u - as_unsigned(x)); });
          break;
        case Opcode::kAbs:
          map_unary<T, T>(a, out, pool, [](C x) { return x < 0 ? static_cast<C>(0u - as_unsigned(x)) : x; });
          break;
        case Opcode::kSign: map_unary<T, T>(a, out, pool, [](C x) { return sign_value(x); }); break;
        case Opcode::kClz: map_unary<T, T>(a, out, pool, [](C x) { return count_leading_zeros(x); }); break;
        case Opcode::kPopulationCount: map_unary<T, T>(a, out, pool, [](C x) { return population_count(x); }); break;
        default: handled = false;
      }
    } else {
      switch (opcode) {
        case Opcode::kNegate: map_unary<T, T>(a, out, pool, [](C x) { return -x; }); break;
        case Opcode::kAbs: map_unary<T, T>(a, out, pool, [](C x) { return std::abs(x); }); break;
        case Opcode::kSign: map_unary<T, T>(a, out, pool, [](C x) { return sign_value(x); }); break;
        default:
          handled = with_float_unary(opcode, [&](auto function, auto) {
            map_unary<T, T>(a, out, pool, [function](C x) { return static_cast<C>(function(x)); });
          });
      }
    }
  });
  return native && handled;
}

// out[i] = direction(key(a[i]), key(b[i])) where key maps a storage value to what is compared.
template <typename T, typename KeyFn>
void compare_with(ComparisonDirection direction, const ArrayView& a, const ArrayView& b, const ArrayView& out,
                  ThreadPool& pool, KeyFn key) {
  const T* x = reinterpret_cast<const T*>(a.data);
  const T* y = reinterpret_cast<const T*>(b.data);
  bool* o = reinterpret_cast<bool*>(out.data);
  const int64_t sx = a.scalar ? 0 : 1;
  const int64_t sy = b.scalar ? 0 : 1;
  auto loop = [&](auto compare) {
    run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = compare(key(x[i * sx]), key(y[i * sy]));
    });
  };
  switch (direction) {
    case ComparisonDirection::kEq: loop([](auto l, auto r) { return l == r; }); break;
    case ComparisonDirection::kNe: loop([](auto l, auto r) { return l != r; }); break;
    case ComparisonDirection::kLt: loop([](auto l, auto r) { return l < r; }); break;
    case ComparisonDirection::kLe: loop([](auto l, auto r) { return l <= r; }); break;
    case ComparisonDirection::kGt: loop([](auto l, auto r) { return l > r; }); break;
    case ComparisonDirection::kGe: loop([](auto l, auto r) { return l >= r; }); break;
  }
}

bool run_compare(const Instruction& instruction, const ArrayView& a, const ArrayView& b, const ArrayView& out,
                 ThreadPool& pool) {
  if (a.type() != b.type() || out.type() != PrimitiveType::kPred) return false;
  const ComparisonType type = instruction.comparison_type;
  const ComparisonDirection direction = instruction.comparison_direction;
  bool handled = true;
  if (a.type() == PrimitiveType::kPred || is_unsigned_integral(a.type()) || a.type() == PrimitiveType::kS8 ||
      a.type() == PrimitiveType::kS16) {
    // pred compares as unsigned (false < true); the narrow and unsigned integers as themselves
    const bool fits = type == ComparisonType::kDefault ||
                      type == (is_signed_integral(a.type()) ? ComparisonType::kSigned : ComparisonType::kUnsigned);
    if (!fits) return false;  // the fallback reports the mismatch
    return dispatch_bitwise(a.type(), [&](auto tag) {
      using T = decltype(tag);
      compare_with<T>(direction, a, b, out, pool, [](T v) { return v; });
    });
  }
  const bool native = dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      if (type != ComparisonType::kDefault && type != ComparisonType::kSigned) {
        handled = false;  // the fallback reports the mismatch
        return;
      }
      compare_with<T>(direction, a, b, out, pool, [](T v) { return v; });
    } else if (type == ComparisonType::kTotalOrder) {
      compare_with<T>(direction, a, b, out, pool, [](T v) { return total_order_key(v); });  // storage bits
    } else if (type == ComparisonType::kDefault || type == ComparisonType::kFloat) {
      compare_with<T>(direction, a, b, out, pool, [](T v) { return to_compute(v); });
    } else {
      handled = false;
    }
  });
  return native && handled;
}

// select(pred, on_true, on_false) as element copies of the result's width.
template <typename Word>
void select_words(const ArrayView& pred, const ArrayView& on_true, const ArrayView& on_false, const ArrayView& out,
                  ThreadPool& pool) {
  const bool* p = reinterpret_cast<const bool*>(pred.data);
  const Word* t = reinterpret_cast<const Word*>(on_true.data);
  const Word* f = reinterpret_cast<const Word*>(on_false.data);
  Word* o = reinterpret_cast<Word*>(out.data);
  const int64_t sp = (pred.scalar || pred.shape->rank() == 0) ? 0 : 1;
  const int64_t st = on_true.scalar ? 0 : 1;
  const int64_t sf = on_false.scalar ? 0 : 1;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = p[i * sp] ? t[i * st] : f[i * sf];
  });
}

bool run_select(std::span<const ArrayView> operands, const ArrayView& out, ThreadPool& pool) {
  const ArrayView& pred = operands[0];
  if (pred.type() != PrimitiveType::kPred || operands[1].type() != out.type() || operands[2].type() != out.type())
    return false;
  if (!pred.scalar && pred.shape->rank() != 0 && pred.element_count() != out.element_count()) return false;
  switch (byte_width(out.type())) {
    case 1: select_words<uint8_t>(pred, operands[1], operands[2], out, pool); return true;
    case 2: select_words<uint16_t>(pred, operands[1], operands[2], out, pool); return true;
    case 4: select_words<uint32_t>(pred, operands[1], operands[2], out, pool); return true;
    case 8: select_words<uint64_t>(pred, operands[1], operands[2], out, pool); return true;
    default: return false;
  }
}

// clamp(lo, x, hi) with the evaluator's element function; lo and hi may be scalars.
template <typename T>
void clamp_elements(std::span<const ArrayView> operands, const ArrayView& out, ThreadPool& pool) {
  const T* lo = reinterpret_cast<const T*>(operands[0].data);
  const T* x = reinterpret_cast<const T*>(operands[1].data);
  const T* hi = reinterpret_cast<const T*>(operands[2].data);
  T* o = reinterpret_cast<T*>(out.data);
  const int64_t sl = (operands[0].scalar || operands[0].shape->rank() == 0) ? 0 : 1;
  const int64_t sx = operands[1].scalar ? 0 : 1;
  const int64_t sh = (operands[2].scalar || operands[2].shape->rank() == 0) ? 0 : 1;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = clamp_value(lo[i * sl], x[i * sx], hi[i * sh]);
  });
}

// bitcast-convert between element types of one width: the same bits, read as the result type.
template <typename Word>
void copy_words(const ArrayView& a, const ArrayView& out, ThreadPool& pool) {
  const Word* x = reinterpret_cast<const Word*>(a.data);
  Word* o = reinterpret_cast<Word*>(out.data);
  const int64_t sx = (a.scalar || a.shape->rank() == 0) ? 0 : 1;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = x[i * sx];
  });
}

bool run_bitcast_convert(const ArrayView& a, const ArrayView& out, ThreadPool& pool) {
  if (byte_width(a.type()) != byte_width(out.type())) return false;  // a dimension is added or removed
  switch (byte_width(out.type())) {
    case 1: copy_words<uint8_t>(a, out, pool); return true;
    case 2: copy_words<uint16_t>(a, out, pool); return true;
    case 4: copy_words<uint32_t>(a, out, pool); return true;
    case 8: copy_words<uint64_t>(a, out, pool); return true;
    default: return false;
  }
}

bool run_clamp(std::span<const ArrayView> operands, const ArrayView& out, ThreadPool& pool) {
  for (const ArrayView& operand : operands)
    if (operand.type() != out.type()) return false;
  switch (out.type()) {
    case PrimitiveType::kF32: clamp_elements<float>(operands, out, pool); return true;
    case PrimitiveType::kF64: clamp_elements<double>(operands, out, pool); return true;
    case PrimitiveType::kS8: clamp_elements<int8_t>(operands, out, pool); return true;
    case PrimitiveType::kS16: clamp_elements<int16_t>(operands, out, pool); return true;
    case PrimitiveType::kS32: clamp_elements<int32_t>(operands, out, pool); return true;
    case PrimitiveType::kS64: clamp_elements<int64_t>(operands, out, pool); return true;
    case PrimitiveType::kU8: clamp_elements<uint8_t>(operands, out, pool); return true;
    case PrimitiveType::kU16: clamp_elements<uint16_t>(operands, out, pool); return true;
    case PrimitiveType::kU32: clamp_elements<uint32_t>(operands, out, pool); return true;
    case PrimitiveType::kU64: clamp_elements<uint64_t>(operands, out, pool); return true;
    default: return false;  // f16/bf16 (compute in f32) and pred: the evaluator's path
  }
}

}  // namespace
}  // namespace kernels

bool run_elementwise_kernel(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out,
                            ThreadPool& pool) {
  if (!out.shape->is_array()) return false;
  for (const ArrayView& operand : operands) {
    if (!operand.shape->is_array()) return false;
    // Shapes must agree (a scalar view stands for the whole shape); otherwise the fallback
    // reports the evaluator's error.
    if (!operand.scalar && operand.element_count() != out.element_count() &&
        !(instruction.opcode() == Opcode::kSelect && &operand == &operands[0] && operand.shape->rank() == 0) &&
        !(instruction.opcode() == Opcode::kClamp && &operand != &operands[1] && operand.shape->rank() == 0))
      return false;
  }
  const Opcode opcode = instruction.opcode();
  switch (opcode) {
    case Opcode::kCompare:
      return operands.size() == 2 && kernels::run_compare(instruction, operands[0], operands[1], out, pool);
    case Opcode::kSelect: return operands.size() == 3 && kernels::run_select(operands, out, pool);
    case Opcode::kClamp: return operands.size() == 3 && kernels::run_clamp(operands, out, pool);
    case Opcode::kBitcastConvert: return operands.size() == 1 && kernels::run_bitcast_convert(operands[0], out, pool);
    case Opcode::kConvert: return operands.size() == 1 && run_convert_kernel(instruction, operands[0], out, pool);
    case Opcode::kIsFinite: return operands.size() == 1 && kernels::run_unary(opcode, operands[0], out, pool);
    default: break;
  }
  if (operands.size() == 2 && is_elementwise_binary(opcode))
    return kernels::run_binary(opcode, operands[0], operands[1], out, pool);
  if (operands.size() == 1 && is_elementwise_unary(opcode)) return kernels::run_unary(opcode, operands[0], out, pool);
  return false;
}

}  // namespace insitu
