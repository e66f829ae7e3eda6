// Native elementwise kernels: add, subtract, multiply, divide, maximum, minimum, negate, abs,
// remainder, power, sign, exp, log, sqrt, rsqrt, tanh, is-finite, compare and select over
// f32/f64/s32/s64/bf16/f16, and/or/xor/not and compare over pred and every integer type, shifts
// over the integer types, with scalar operands (unmaterialized broadcasts) read as scalars.
// select_elementwise checks the types and shapes once and picks the instantiation for them;
// the kernel it returns only computes. Large arrays split over the pool: every element is
// computed independently, so the split cannot change a result. Semantics are the reference
// evaluator's (elementwise_binary.cc, elementwise_unary.cc, elementwise_compare.cc), checked
// bit for bit in tests/runtime/kernels_test.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/elementwise_internal.h"

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
      #pragma GCC unroll 4
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
struct BinaryLoop {
  [[gnu::always_inline]] static inline void run(const T* x, const T* y, Out* o, bool x_scalar, bool y_scalar,
                                                int64_t begin, int64_t end) {
    Fn fn;
    if (!x_scalar && !y_scalar) {
      #pragma GCC unroll 4
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i]), to_compute(y[i])));
    } else if (!x_scalar) {
      const auto rhs = to_compute(y[0]);
      #pragma GCC unroll 4
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i]), rhs));
    } else if (!y_scalar) {
      const auto lhs = to_compute(x[0]);
      #pragma GCC unroll 4
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(lhs, to_compute(y[i])));
    } else {
      const Out value = to_stored<Out>(fn(to_compute(x[0]), to_compute(y[0])));
      for (int64_t i = begin; i < end; ++i) o[i] = value;
    }
  }
};

// f32/f64 loops also run in AVX-512/AVX2 variants (cpu_level.h): divide and sqrt are 4x faster
// in wider vectors, and every variant performs the same IEEE operations, so the same bits.
template <typename T>
inline constexpr bool kWideVariants = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T, typename Out, typename Fn>
void map_binary(const ArrayView& a, const ArrayView& b, const ArrayView& out, ThreadPool& pool, Fn) {
  const T* x = reinterpret_cast<const T*>(a.data);
  const T* y = reinterpret_cast<const T*>(b.data);
  Out* o = reinterpret_cast<Out*>(out.data);
  const bool x_scalar = a.scalar;
  const bool y_scalar = b.scalar;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if constexpr (kWideVariants<T>) run_at_cpu_level<BinaryLoop<T, Out, Fn>>(x, y, o, x_scalar, y_scalar, begin, end);
    else BinaryLoop<T, Out, Fn>::run(x, y, o, x_scalar, y_scalar, begin, end);
  });
}

template <typename T, typename Out, typename Fn>
Status unary_kernel(const KernelCall& call) {
  map_unary<T, Out>(call.operands[0], call.out(), call.pool, Fn{});
  return ok_status();
}

template <typename T, typename Out, typename Fn>
Status binary_kernel(const KernelCall& call) {
  map_binary<T, Out>(call.operands[0], call.operands[1], call.out(), call.pool, Fn{});
  return ok_status();
}

// The kernel applying fn, a captureless lambda (default-constructible, so the kernel makes its
// own): out[i] = fn(a[i]) or fn(a[i], b[i]) with operands of storage type T.
template <typename T, typename Out, typename Fn>
KernelFn unary_kernel_of(Fn) {
  return &unary_kernel<T, Out, Fn>;
}

template <typename T, typename Out, typename Fn>
KernelFn binary_kernel_of(Fn) {
  return &binary_kernel<T, Out, Fn>;
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

// The choose_* functions below return the kernel for an op on its operands' and result's types,
// or nullptr when it has no native path for them (the step then runs the fallback).

KernelFn choose_bitwise_binary(Opcode opcode, PrimitiveType type) {
  KernelFn chosen = nullptr;
  dispatch_bitwise(type, [&](auto tag) {
    using T = decltype(tag);
    switch (opcode) {
      case Opcode::kAnd: chosen = binary_kernel_of<T, T>([](T x, T y) { return static_cast<T>(x & y); }); break;
      case Opcode::kOr: chosen = binary_kernel_of<T, T>([](T x, T y) { return static_cast<T>(x | y); }); break;
      case Opcode::kXor: chosen = binary_kernel_of<T, T>([](T x, T y) { return static_cast<T>(x ^ y); }); break;
      default:
        if constexpr (!std::is_same_v<T, bool>) {  // shifts take integers only
          if (opcode == Opcode::kShiftLeft)
            chosen = binary_kernel_of<T, T>([](T x, T y) { return shift_left_value(x, y); });
          else if (opcode == Opcode::kShiftRightLogical)
            chosen = binary_kernel_of<T, T>([](T x, T y) { return shift_right_logical_value(x, y); });
          else
            chosen = binary_kernel_of<T, T>([](T x, T y) { return shift_right_arithmetic_value(x, y); });
        }
    }
  });
  return chosen;
}

KernelFn choose_binary(Opcode opcode, const ArrayView& a, const ArrayView& b, const ArrayView& out) {
  if (a.type() != b.type() || out.type() != a.type()) return nullptr;
  switch (opcode) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic: return choose_bitwise_binary(opcode, a.type());
    default: break;
  }
  KernelFn chosen = nullptr;
  dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    switch (opcode) {
      case Opcode::kAdd:
        chosen = binary_kernel_of<T, T>([](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) + as_unsigned(y));
          else return x + y;
        });
        break;
      case Opcode::kSubtract:
        chosen = binary_kernel_of<T, T>([](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) - as_unsigned(y));
          else return x - y;
        });
        break;
      case Opcode::kMultiply:
        chosen = binary_kernel_of<T, T>([](C x, C y) -> C {
          if constexpr (std::is_integral_v<C>) return static_cast<C>(as_unsigned(x) * as_unsigned(y));
          else return x * y;
        });
        break;
      case Opcode::kDivide: chosen = binary_kernel_of<T, T>([](C x, C y) { return divide_value(x, y); }); break;
      case Opcode::kMaximum: chosen = binary_kernel_of<T, T>([](C x, C y) { return maximum_value(x, y); }); break;
      case Opcode::kMinimum: chosen = binary_kernel_of<T, T>([](C x, C y) { return minimum_value(x, y); }); break;
      case Opcode::kRemainder: chosen = binary_kernel_of<T, T>([](C x, C y) { return remainder_value(x, y); }); break;
      case Opcode::kPower: chosen = binary_kernel_of<T, T>([](C x, C y) { return power_value(x, y); }); break;
      default: break;
    }
  });
  return chosen;
}

// One of with_float_unary's functions (a captureless lambda) as a kernel's element function.
template <typename C, typename Function>
struct FloatUnary {
  C operator()(C x) const { return static_cast<C>(Function{}(x)); }
};

// An f32 unary function over [begin, end) (float_functions.h's exp, log, tanh, logistic and
// expm1 are branch-free and run 2-4x faster in wider vectors), at this CPU's level.
template <typename Fn>
struct FloatUnaryLoop {
  [[gnu::always_inline]] static inline void run(const float* x, float* o, int64_t begin, int64_t end) {
    #pragma GCC unroll 4
    for (int64_t i = begin; i < end; ++i) o[i] = Fn{}(x[i]);
  }
};

template <typename Fn>
Status float_unary_kernel(const KernelCall& call) {
  const ArrayView& a = call.operands[0];
  if (a.scalar) return unary_kernel<float, float, Fn>(call);
  const float* x = reinterpret_cast<const float*>(a.data);
  float* o = reinterpret_cast<float*>(call.out().data);
  run_range(call.pool, call.out().element_count(), kParallelElements,
            [&](int64_t begin, int64_t end) { run_at_cpu_level<FloatUnaryLoop<Fn>>(x, o, begin, end); });
  return ok_status();
}

KernelFn choose_unary(Opcode opcode, const ArrayView& a, const ArrayView& out) {
  KernelFn chosen = nullptr;
  if (opcode == Opcode::kIsFinite) {
    if (out.type() != PrimitiveType::kPred || !is_floating(a.type())) return nullptr;
    dispatch_native_numeric(a.type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_integral_v<T>)
        chosen = unary_kernel_of<T, bool>([](ComputeType<T> x) { return static_cast<bool>(std::isfinite(x)); });
    });
    return chosen;
  }
  if (out.type() != a.type()) return nullptr;
  if (opcode == Opcode::kNot) {
    dispatch_bitwise(a.type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) chosen = unary_kernel_of<T, T>([](T x) { return !x; });
      else chosen = unary_kernel_of<T, T>([](T x) { return static_cast<T>(~x); });
    });
    return chosen;
  }
  dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    if constexpr (std::is_integral_v<C>) {
      switch (opcode) {
        case Opcode::kNegate:
          chosen = unary_kernel_of<T, T>([](C x) { return static_cast<C>(0u - as_unsigned(x)); });
          break;
        case Opcode::kAbs:
          chosen = unary_kernel_of<T, T>([](C x) { return x < 0 ? static_cast<C>(0u - as_unsigned(x)) : x; });
          break;
        case Opcode::kSign: chosen = unary_kernel_of<T, T>([](C x) { return sign_value(x); }); break;
        case Opcode::kClz: chosen = unary_kernel_of<T, T>([](C x) { return count_leading_zeros(x); }); break;
        case Opcode::kPopulationCount: chosen = unary_kernel_of<T, T>([](C x) { return population_count(x); }); break;
        default: break;
      }
    } else {
      switch (opcode) {
        case Opcode::kNegate: chosen = unary_kernel_of<T, T>([](C x) { return -x; }); break;
        case Opcode::kAbs: chosen = unary_kernel_of<T, T>([](C x) { return std::abs(x); }); break;
        case Opcode::kSign: chosen = unary_kernel_of<T, T>([](C x) { return sign_value(x); }); break;
        default:
          with_float_unary(opcode, [&](auto function, auto) {
            using Fn = FloatUnary<C, decltype(function)>;
            if constexpr (std::is_same_v<T, float>) chosen = &float_unary_kernel<Fn>;
            else chosen = &unary_kernel<T, T, Fn>;
          });
      }
    }
  });
  return chosen;
}

// What compare compares: the stored value, its compute value (f16/bf16 widened to f32), or a
// float's total-order key (its storage bits).
struct StoredKey {
  template <typename T>
  T operator()(T v) const { return v; }
};
struct ComputeKey {
  template <typename T>
  auto operator()(T v) const { return to_compute(v); }
};
struct TotalOrderKey {
  template <typename T>
  auto operator()(T v) const { return total_order_key(v); }
};

// out[i] = direction(key(a[i]), key(b[i])) where key maps a storage value to what is compared.
template <typename T, typename KeyFn>
void compare_with(ComparisonDirection direction, const ArrayView& a, const ArrayView& b, const ArrayView& out,
                  ThreadPool& pool, KeyFn key) {
  const T* x = reinterpret_cast<const T*>(a.data);
  const T* y = reinterpret_cast<const T*>(b.data);
  bool* o = reinterpret_cast<bool*>(out.data);
  const bool x_scalar = a.scalar;
  const bool y_scalar = b.scalar;
  // unit-stride loops per scalar case, as in map_binary (a runtime stride keeps them scalar)
  auto loop = [&](auto compare) {
    run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
      if (!x_scalar && !y_scalar) {
        for (int64_t i = begin; i < end; ++i) o[i] = compare(key(x[i]), key(y[i]));
      } else if (!x_scalar) {
        const auto rhs = key(y[0]);
        for (int64_t i = begin; i < end; ++i) o[i] = compare(key(x[i]), rhs);
      } else if (!y_scalar) {
        const auto lhs = key(x[0]);
        for (int64_t i = begin; i < end; ++i) o[i] = compare(lhs, key(y[i]));
      } else {
        const bool value = compare(key(x[0]), key(y[0]));
        for (int64_t i = begin; i < end; ++i) o[i] = value;
      }
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

// The direction is read per call (one switch outside the loop), not instantiated six ways.
template <typename T, typename KeyFn>
Status compare_kernel(const KernelCall& call) {
  compare_with<T>(call.instruction.comparison_direction, call.operands[0], call.operands[1], call.out(), call.pool,
                  KeyFn{});
  return ok_status();
}

KernelFn choose_compare(const Instruction& instruction, const ArrayView& a, const ArrayView& b, const ArrayView& out) {
  if (a.type() != b.type() || out.type() != PrimitiveType::kPred) return nullptr;
  const ComparisonType type = instruction.comparison_type;
  KernelFn chosen = nullptr;
  if (a.type() == PrimitiveType::kPred || is_unsigned_integral(a.type()) || a.type() == PrimitiveType::kS8 ||
      a.type() == PrimitiveType::kS16) {
    // pred compares as unsigned (false < true); the narrow and unsigned integers as themselves
    const bool fits = type == ComparisonType::kDefault ||
                      type == (is_signed_integral(a.type()) ? ComparisonType::kSigned : ComparisonType::kUnsigned);
    if (!fits) return nullptr;  // the fallback reports the mismatch
    dispatch_bitwise(a.type(), [&](auto tag) { chosen = &compare_kernel<decltype(tag), StoredKey>; });
    return chosen;
  }
  dispatch_native_numeric(a.type(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      // other comparison types: the fallback reports the mismatch
      if (type == ComparisonType::kDefault || type == ComparisonType::kSigned) chosen = &compare_kernel<T, StoredKey>;
    } else if (type == ComparisonType::kTotalOrder) {
      chosen = &compare_kernel<T, TotalOrderKey>;
    } else if (type == ComparisonType::kDefault || type == ComparisonType::kFloat) {
      chosen = &compare_kernel<T, ComputeKey>;
    }
  });
  return chosen;
}

// o[i] = p[i] ? t[i] : f[i] with t's and f's strides constants (0: a scalar, 1: an array),
// written as a mask so that the loop vectorizes (GCC leaves `p ? t : f` a branch per element,
// mispredicted half the time on a ReLU gradient: 4 ns per element).
template <typename Word, int kSt, int kSf>
void select_words(const bool* p, const Word* t, const Word* f, Word* o, int64_t begin, int64_t end) {
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(p);
  for (int64_t i = begin; i < end; ++i) {
    const Word mask = static_cast<Word>(Word{0} - static_cast<Word>(bytes[i] != 0));
    o[i] = static_cast<Word>((t[i * kSt] & mask) | (f[i * kSf] & static_cast<Word>(~mask)));
  }
}

template <typename Word>
void select_words(const bool* p, const Word* t, const Word* f, Word* o, bool t_scalar, bool f_scalar,
                  int64_t begin, int64_t end) {
  if (!t_scalar && !f_scalar) select_words<Word, 1, 1>(p, t, f, o, begin, end);
  else if (!t_scalar) select_words<Word, 1, 0>(p, t, f, o, begin, end);
  else if (!f_scalar) select_words<Word, 0, 1>(p, t, f, o, begin, end);
  else select_words<Word, 0, 0>(p, t, f, o, begin, end);
}

// select(pred, on_true, on_false) as element copies of the result's width.
template <typename Word>
Status select_words_kernel(const KernelCall& call) {
  const ArrayView& pred = call.operands[0];
  const ArrayView& on_true = call.operands[1];
  const ArrayView& on_false = call.operands[2];
  const ArrayView& out = call.out();
  const bool* p = reinterpret_cast<const bool*>(pred.data);
  const Word* t = reinterpret_cast<const Word*>(on_true.data);
  const Word* f = reinterpret_cast<const Word*>(on_false.data);
  Word* o = reinterpret_cast<Word*>(out.data);
  const bool p_scalar = pred.scalar || pred.shape->rank() == 0;
  if (p_scalar) {
    // one predicate for every element (`where(all_finite, new, old)` over a whole state): the
    // chosen operand's elements, copied (nothing to do where the result is written over it)
    const bool pick = *reinterpret_cast<const uint8_t*>(p) != 0;
    const Word* from = pick ? t : f;
    const bool from_scalar = pick ? on_true.scalar : on_false.scalar;
    if (!from_scalar && from == o) return ok_status();
    run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
      if (from_scalar) std::fill(o + begin, o + end, from[0]);
      else std::memcpy(o + begin, from + begin, static_cast<size_t>(end - begin) * sizeof(Word));
    });
    return ok_status();
  }
  run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    select_words<Word>(p, t, f, o, on_true.scalar, on_false.scalar, begin, end);
  });
  return ok_status();
}

KernelFn choose_select(std::span<const ArrayView> operands, const ArrayView& out) {
  const ArrayView& pred = operands[0];
  if (pred.type() != PrimitiveType::kPred || operands[1].type() != out.type() || operands[2].type() != out.type())
    return nullptr;
  if (!pred.scalar && pred.shape->rank() != 0 && pred.element_count() != out.element_count()) return nullptr;
  switch (byte_width(out.type())) {
    case 1: return &select_words_kernel<uint8_t>;
    case 2: return &select_words_kernel<uint16_t>;
    case 4: return &select_words_kernel<uint32_t>;
    case 8: return &select_words_kernel<uint64_t>;
    default: return nullptr;
  }
}

// clamp(lo, x, hi) with the evaluator's element function; lo and hi may be scalars.
template <typename T>
Status clamp_kernel(const KernelCall& call) {
  const std::span<const ArrayView> operands = call.operands;
  const ArrayView& out = call.out();
  const T* lo = reinterpret_cast<const T*>(operands[0].data);
  const T* x = reinterpret_cast<const T*>(operands[1].data);
  const T* hi = reinterpret_cast<const T*>(operands[2].data);
  T* o = reinterpret_cast<T*>(out.data);
  const int64_t sl = (operands[0].scalar || operands[0].shape->rank() == 0) ? 0 : 1;
  const int64_t sx = operands[1].scalar ? 0 : 1;
  const int64_t sh = (operands[2].scalar || operands[2].shape->rank() == 0) ? 0 : 1;
  run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if (sl == 0 && sx == 1 && sh == 0) {  // the common case (scalar bounds) as a unit-stride loop
      const T low = lo[0], high = hi[0];
      for (int64_t i = begin; i < end; ++i) o[i] = clamp_value(low, x[i], high);
    } else {
      for (int64_t i = begin; i < end; ++i) o[i] = clamp_value(lo[i * sl], x[i * sx], hi[i * sh]);
    }
  });
  return ok_status();
}

KernelFn choose_clamp(std::span<const ArrayView> operands, const ArrayView& out) {
  for (const ArrayView& operand : operands)
    if (operand.type() != out.type()) return nullptr;
  switch (out.type()) {
    case PrimitiveType::kF32: return &clamp_kernel<float>;
    case PrimitiveType::kF64: return &clamp_kernel<double>;
    case PrimitiveType::kS8: return &clamp_kernel<int8_t>;
    case PrimitiveType::kS16: return &clamp_kernel<int16_t>;
    case PrimitiveType::kS32: return &clamp_kernel<int32_t>;
    case PrimitiveType::kS64: return &clamp_kernel<int64_t>;
    case PrimitiveType::kU8: return &clamp_kernel<uint8_t>;
    case PrimitiveType::kU16: return &clamp_kernel<uint16_t>;
    case PrimitiveType::kU32: return &clamp_kernel<uint32_t>;
    case PrimitiveType::kU64: return &clamp_kernel<uint64_t>;
    default: return nullptr;  // f16/bf16 (compute in f32) and pred: the evaluator's path
  }
}

// bitcast-convert between element types of one width: the same bits, read as the result type.
template <typename Word>
Status bitcast_kernel(const KernelCall& call) {
  const ArrayView& a = call.operands[0];
  const ArrayView& out = call.out();
  const Word* x = reinterpret_cast<const Word*>(a.data);
  Word* o = reinterpret_cast<Word*>(out.data);
  const int64_t sx = (a.scalar || a.shape->rank() == 0) ? 0 : 1;
  run_range(call.pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = x[i * sx];
  });
  return ok_status();
}

// bitcast-convert that changes the width (u32[n,2] <-> u64[n]): the same bytes in the same
// order, which is what the result's row-major elements are.
Status bitcast_bytes_kernel(const KernelCall& call) {
  std::memmove(call.out().data, call.operands[0].data, static_cast<size_t>(call.out().byte_size()));
  return ok_status();
}

KernelFn choose_bitcast_convert(const ArrayView& a, const ArrayView& out) {
  // A type narrower than its byte (s4, u2, f4e2m1fn, ...): its bits are not its byte (s4 -1 is
  // stored 0xff, u4 15 as 0x0f), so the evaluator's bit-level path does these.
  if (bit_width(a.type()) < 8 || bit_width(out.type()) < 8) return nullptr;
  if (byte_width(a.type()) != byte_width(out.type()))  // a dimension is added or removed
    return !a.scalar && a.byte_size() == out.byte_size() ? &bitcast_bytes_kernel : nullptr;
  switch (byte_width(out.type())) {
    case 1: return &bitcast_kernel<uint8_t>;
    case 2: return &bitcast_kernel<uint16_t>;
    case 4: return &bitcast_kernel<uint32_t>;
    case 8: return &bitcast_kernel<uint64_t>;
    default: return nullptr;
  }
}

KernelFn choose_elementwise(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out) {
  if (!out.shape->is_array()) return nullptr;
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kBitcastConvert && operands.size() == 1 && operands[0].shape->is_array() &&
      byte_width(operands[0].type()) != byte_width(out.type()))
    return choose_bitcast_convert(operands[0], out);  // element counts differ by design
  for (const ArrayView& operand : operands) {
    if (!operand.shape->is_array()) return nullptr;
    // Shapes must agree (a scalar view stands for the whole shape); otherwise the fallback
    // reports the evaluator's error.
    if (!operand.scalar && operand.element_count() != out.element_count() &&
        !(opcode == Opcode::kSelect && &operand == &operands[0] && operand.shape->rank() == 0) &&
        !(opcode == Opcode::kClamp && &operand != &operands[1] && operand.shape->rank() == 0))
      return nullptr;
  }
  switch (opcode) {
    case Opcode::kCompare: return operands.size() == 2 ? choose_compare(instruction, operands[0], operands[1], out) : nullptr;
    case Opcode::kSelect: return operands.size() == 3 ? choose_select(operands, out) : nullptr;
    case Opcode::kClamp: return operands.size() == 3 ? choose_clamp(operands, out) : nullptr;
    case Opcode::kBitcastConvert: return operands.size() == 1 ? choose_bitcast_convert(operands[0], out) : nullptr;
    case Opcode::kConvert: return operands.size() == 1 ? choose_convert(operands[0], out) : nullptr;
    case Opcode::kReal:
    case Opcode::kImag: return operands.size() == 1 ? choose_complex_part(opcode, operands[0], out) : nullptr;
    case Opcode::kIsFinite: return operands.size() == 1 ? choose_unary(opcode, operands[0], out) : nullptr;
    default: break;
  }
  if (operands.size() == 2 && is_elementwise_binary(opcode)) return choose_binary(opcode, operands[0], operands[1], out);
  if (operands.size() == 1 && is_elementwise_unary(opcode)) return choose_unary(opcode, operands[0], out);
  return nullptr;
}

}  // namespace
}  // namespace kernels

SelectedKernel select_elementwise(const Instruction& instruction, std::span<const ArrayView> operands,
                                  std::span<const ArrayView> outputs) {
  if (outputs.size() != 1) return std::nullopt;
  if (KernelFn run = kernels::choose_elementwise(instruction, operands, outputs[0])) return NativeKernel{run, nullptr};
  return std::nullopt;
}

}  // namespace insitu
