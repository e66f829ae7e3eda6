// Native elementwise kernels: add, subtract, multiply, divide, maximum, minimum, negate, abs,
// remainder, power, sign, exp, log, sqrt, rsqrt, tanh, is-finite over f32/f64/s32/s64/bf16/f16,
// and/or/xor/not over pred and every integer type, shifts over the integer types, with scalar
// operands (unmaterialized broadcasts) read as scalars; compare, select, clamp and bitcast-convert
// come from compare_select_kernels.cc, convert from convert_kernels.cc. select_elementwise checks
// the types and shapes once and picks the instantiation for them; the kernel it returns only
// computes, and the block loops (select_block_loops) are its loop alone, for a fused op. Large arrays split over the pool: every element is
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

// out[i] = fn(x[i]) over [begin, end), or fn(x[0]) everywhere for a scalar operand.
template <typename T, typename Out, typename Fn>
struct UnaryLoop {
  [[gnu::always_inline]] static inline void run(const T* x, Out* o, bool scalar, int64_t begin, int64_t end) {
    Fn fn;
    if (!scalar) {
      #pragma GCC unroll 4
      for (int64_t i = begin; i < end; ++i) o[i] = to_stored<Out>(fn(to_compute(x[i])));
    } else {
      const Out value = to_stored<Out>(fn(to_compute(x[0])));
      for (int64_t i = begin; i < end; ++i) o[i] = value;
    }
  }
};

// f32/f64 loops also run in AVX-512/AVX2 variants (cpu_level.h): divide and sqrt are 4x faster
// in wider vectors, and every variant performs the same IEEE operations, so the same bits.
template <typename T>
inline constexpr bool kWideVariants = std::is_same_v<T, float> || std::is_same_v<T, double>;

// The exact f32/f64 unary ops (is-finite, negate, abs, sign: no rounding at all) run in those
// variants too, marked by their lambda type being an ExactUnary; the others (FloatUnary of f64,
// integer ops) once, at the baseline. `all(isfinite(g))` over an optimizer's gradients ran its
// f32 -> pred loop at the baseline's four lanes: 8% of a skip-unless-finite Adam step.
template <typename Fn>
struct ExactUnary : Fn {};
template <typename Fn>
struct is_exact_unary : std::false_type {};
template <typename Fn>
struct is_exact_unary<ExactUnary<Fn>> : std::true_type {};
template <typename T, typename Fn>
inline constexpr bool kWideUnary = kWideVariants<T> && is_exact_unary<Fn>::value;

template <typename T, typename Out, typename Fn>
void map_unary(const ArrayView& a, const ArrayView& out, ThreadPool& pool, Fn) {
  const T* x = reinterpret_cast<const T*>(a.data);
  Out* o = reinterpret_cast<Out*>(out.data);
  const bool scalar = a.scalar;
  run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
    if constexpr (kWideUnary<T, Fn>) run_at_cpu_level<UnaryLoop<T, Out, Fn>>(x, o, scalar, begin, end);
    else UnaryLoop<T, Out, Fn>::run(x, o, scalar, begin, end);
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

// The loops of map_unary and map_binary over one block of untyped pointers (BlockLoop), the
// same loop bodies at the same levels: map_binary's are compiled per CPU level for f32/f64,
// map_unary's for the exact f32/f64 ops (kWideUnary), the others once.
template <typename T, typename Out, typename Fn>
struct UnaryBlock {
  [[gnu::always_inline]] static inline void run(const uint8_t* x, const uint8_t*, uint8_t* o, bool x_scalar, bool,
                                                int64_t n) {
    UnaryLoop<T, Out, Fn>::run(reinterpret_cast<const T*>(x), reinterpret_cast<Out*>(o), x_scalar, 0, n);
  }
};

template <typename T, typename Out, typename Fn>
struct BinaryBlock {
  [[gnu::always_inline]] static inline void run(const uint8_t* x, const uint8_t* y, uint8_t* o, bool x_scalar,
                                                bool y_scalar, int64_t n) {
    BinaryLoop<T, Out, Fn>::run(reinterpret_cast<const T*>(x), reinterpret_cast<const T*>(y), reinterpret_cast<Out*>(o),
                                x_scalar, y_scalar, 0, n);
  }
};

template <typename Body>
void baseline_block(const uint8_t* x, const uint8_t* y, uint8_t* o, bool x_scalar, bool y_scalar, int64_t n) {
  Body::run(x, y, o, x_scalar, y_scalar, n);
}

// Body at every CPU level, or (wide = false) at the baseline for all three.
template <typename Body, bool wide>
constexpr BlockLoops block_loops() {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (wide)
    return {&baseline_block<Body>,
            &run_avx2_fma<Body, const uint8_t*, const uint8_t*, uint8_t*, bool, bool, int64_t>,
            &run_avx512<Body, const uint8_t*, const uint8_t*, uint8_t*, bool, bool, int64_t>};
#endif
  return {&baseline_block<Body>, &baseline_block<Body>, &baseline_block<Body>};
}

template <typename Body, bool wide>
inline constexpr BlockLoops kBlockLoops = block_loops<Body, wide>();

template <typename Body>
void baseline_pair(const uint8_t* x, const uint8_t* y, const uint8_t* z, uint8_t* o, bool xs, bool ys, bool zs,
                   int64_t n) {
  Body::run(x, y, z, o, xs, ys, zs, n);
}

template <typename Body>
constexpr PairLoops pair_loop_table() {
#if defined(__x86_64__) && defined(__GNUC__)
  return {&baseline_pair<Body>,
          &run_avx2_fma<Body, const uint8_t*, const uint8_t*, const uint8_t*, uint8_t*, bool, bool, bool, int64_t>,
          &run_avx512<Body, const uint8_t*, const uint8_t*, const uint8_t*, uint8_t*, bool, bool, bool, int64_t>};
#else
  return {&baseline_pair<Body>, &baseline_pair<Body>, &baseline_pair<Body>};
#endif
}

// One of with_float_unary's functions (a captureless lambda) as a kernel's element function.
template <typename C, typename Function>
struct FloatUnary {
  C operator()(C x) const { return static_cast<C>(Function{}(x)); }
};

// A pair's body (select_pair_loops; a multiply-add is the pair multiply, then add or subtract):
// the inner op, then the outer, each rounded as alone.
template <typename T>
[[gnu::always_inline]] inline T arithmetic(Opcode op, T a, T b) {  // add, subtract, multiply, divide
  switch (op) {
    case Opcode::kAdd: return a + b;
    case Opcode::kSubtract: return a - b;
    case Opcode::kMultiply: return a * b;
    default: return a / b;
  }
}

template <typename T, Opcode kInner, Opcode kOuter, int kForm>
struct PairBlock {
  [[gnu::always_inline]] static inline T pair(T x, T y, T z) {
    const T t = arithmetic<T>(kInner, x, y);
    if constexpr (kForm == 0) return arithmetic<T>(kOuter, t, z);
    else if constexpr (kForm == 1) return arithmetic<T>(kOuter, z, t);
    else return arithmetic<T>(kOuter, t, t);
  }
  // Each scalar operand read once before the loop (a scalar's element read in the loop could
  // alias the output and keep the loop from vectorizing), each block read element by element:
  // one vector loop for each of the eight cases.
  template <bool kXs, bool kYs, bool kZs>
  [[gnu::always_inline]] static inline void loop(const T* x, const T* y, const T* z, T* o, int64_t n) {
    const T a = x[0], b = y[0], c = z[0];
    #pragma GCC unroll 4
    for (int64_t i = 0; i < n; ++i) o[i] = pair(kXs ? a : x[i], kYs ? b : y[i], kZs ? c : z[i]);
  }
  [[gnu::always_inline]] static inline void run(const uint8_t* xb, const uint8_t* yb, const uint8_t* zb, uint8_t* ob,
                                                bool x_scalar, bool y_scalar, bool z_scalar, int64_t n) {
    if (n <= 0) return;
    const T* x = reinterpret_cast<const T*>(xb);
    const T* y = reinterpret_cast<const T*>(yb);
    const T* z = reinterpret_cast<const T*>(zb);
    T* o = reinterpret_cast<T*>(ob);
    switch ((x_scalar ? 4 : 0) | (y_scalar ? 2 : 0) | (z_scalar ? 1 : 0)) {
      case 0: return loop<false, false, false>(x, y, z, o, n);
      case 1: return loop<false, false, true>(x, y, z, o, n);  // (x + bias) - max
      case 2: return loop<false, true, false>(x, y, z, o, n);  // a weight times a block, plus a block
      case 3: return loop<false, true, true>(x, y, z, o, n);   // (x - mean) * rstd
      case 4: return loop<true, false, false>(x, y, z, o, n);
      case 5: return loop<true, false, true>(x, y, z, o, n);   // (1 - y) * c
      case 6: return loop<true, true, false>(x, y, z, o, n);
      default: return loop<true, true, true>(x, y, z, o, n);
    }
  }
};

template <typename T, Opcode kInner, Opcode kOuter, int kForm>
inline constexpr PairLoops kPairLoops = pair_loop_table<PairBlock<T, kInner, kOuter, kForm>>();

template <Opcode kInner, Opcode kOuter>
const PairLoops* pair_loops_of(int form) {
  switch (form) {
    case 0: return &kPairLoops<float, kInner, kOuter, 0>;
    case 1: return &kPairLoops<float, kInner, kOuter, 1>;
    case 2: return &kPairLoops<float, kInner, kOuter, 2>;
    default: return nullptr;
  }
}

// A unary pair's body (select_pair_loops, form 3): an f32 function of the inner op's result.
template <Opcode kInner, typename Fn>
struct UnaryPairBlock {
  template <bool kXs, bool kYs>  // (as PairBlock::loop)
  [[gnu::always_inline]] static inline void loop(const float* x, const float* y, float* o, int64_t n) {
    const float a = x[0], b = y[0];
    #pragma GCC unroll 4
    for (int64_t i = 0; i < n; ++i) o[i] = Fn{}(arithmetic<float>(kInner, kXs ? a : x[i], kYs ? b : y[i]));
  }
  [[gnu::always_inline]] static inline void run(const uint8_t* xb, const uint8_t* yb, const uint8_t*, uint8_t* ob,
                                                bool x_scalar, bool y_scalar, bool, int64_t n) {
    if (n <= 0) return;
    const float* x = reinterpret_cast<const float*>(xb);
    const float* y = reinterpret_cast<const float*>(yb);
    float* o = reinterpret_cast<float*>(ob);
    if (!x_scalar) return y_scalar ? loop<false, true>(x, y, o, n) : loop<false, false>(x, y, o, n);  // exp(x - max)
    return y_scalar ? loop<true, true>(x, y, o, n) : loop<true, false>(x, y, o, n);  // exp(c * y)
  }
};

template <Opcode kInner>
const PairLoops* unary_pair_loops_of(Opcode outer) {
  // float_functions.h's vectorizable functions only (the others are library calls a pass saves
  // little of)
  if (outer != Opcode::kExp && outer != Opcode::kExpm1 && outer != Opcode::kLog && outer != Opcode::kTanh &&
      outer != Opcode::kLogistic && outer != Opcode::kErf)
    return nullptr;
  const PairLoops* found = nullptr;
  with_float_unary(outer, [&](auto function, auto) {
    using Fn = FloatUnary<float, decltype(function)>;
    static constexpr PairLoops kLoops = pair_loop_table<UnaryPairBlock<kInner, Fn>>();
    found = &kLoops;
  });
  return found;
}

template <Opcode kInner>
const PairLoops* pair_loops_of(Opcode outer, int form) {
  if (form == 3) return unary_pair_loops_of<kInner>(outer);
  switch (outer) {
    case Opcode::kAdd: return pair_loops_of<kInner, Opcode::kAdd>(form);
    case Opcode::kSubtract: return pair_loops_of<kInner, Opcode::kSubtract>(form);
    case Opcode::kMultiply: return pair_loops_of<kInner, Opcode::kMultiply>(form);
    case Opcode::kDivide: return pair_loops_of<kInner, Opcode::kDivide>(form);
    default: return nullptr;
  }
}

// What a choose_* function picked: the kernel, and where it has them its block loops.
struct Choice {
  Choice(KernelFn kernel = nullptr, const BlockLoops* block = nullptr) : run(kernel), loops(block) {}
  KernelFn run;
  const BlockLoops* loops;
};

// The kernel applying fn, a captureless lambda (default-constructible, so the kernel makes its
// own): out[i] = fn(a[i]) or fn(a[i], b[i]) with operands of storage type T.
template <typename T, typename Out, typename Fn>
Choice unary_kernel_of(Fn) {
  return {&unary_kernel<T, Out, Fn>, &kBlockLoops<UnaryBlock<T, Out, Fn>, kWideUnary<T, Fn>>};
}

// An exact f32/f64 unary op (kWideUnary): every CPU level.
template <typename T, typename Out, typename Fn>
Choice exact_unary_kernel_of(Fn) {
  return unary_kernel_of<T, Out>(ExactUnary<Fn>{});
}

template <typename T, typename Out, typename Fn>
Choice binary_kernel_of(Fn) {
  return {&binary_kernel<T, Out, Fn>, &kBlockLoops<BinaryBlock<T, Out, Fn>, kWideVariants<T>>};
}

// The choose_* functions below return the kernel for an op on its operands' and result's types,
// or nullptr when it has no native path for them (the step then runs the fallback).

Choice choose_bitwise_binary(Opcode opcode, PrimitiveType type) {
  Choice chosen;
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

Choice choose_binary(Opcode opcode, const ArrayView& a, const ArrayView& b, const ArrayView& out) {
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
  Choice chosen;
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
struct FloatUnaryBlock {
  [[gnu::always_inline]] static inline void run(const uint8_t* x, const uint8_t*, uint8_t* o, bool x_scalar, bool,
                                                int64_t n) {
    const float* in = reinterpret_cast<const float*>(x);
    float* out = reinterpret_cast<float*>(o);
    if (x_scalar) return UnaryLoop<float, float, Fn>::run(in, out, true, 0, n);  // as float_unary_kernel
    FloatUnaryLoop<Fn>::run(in, out, 0, n);
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

Choice choose_unary(Opcode opcode, const ArrayView& a, const ArrayView& out) {
  Choice chosen;
  if (opcode == Opcode::kIsFinite) {
    if (out.type() != PrimitiveType::kPred || !is_floating(a.type())) return nullptr;
    dispatch_native_numeric(a.type(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_integral_v<T>)
        chosen = exact_unary_kernel_of<T, bool>([](ComputeType<T> x) { return static_cast<bool>(std::isfinite(x)); });
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
        case Opcode::kNegate: chosen = exact_unary_kernel_of<T, T>([](C x) { return -x; }); break;
        case Opcode::kAbs: chosen = exact_unary_kernel_of<T, T>([](C x) { return std::abs(x); }); break;
        case Opcode::kSign: chosen = exact_unary_kernel_of<T, T>([](C x) { return sign_value(x); }); break;
        default:
          with_float_unary(opcode, [&](auto function, auto) {
            using Fn = FloatUnary<C, decltype(function)>;
            if constexpr (std::is_same_v<T, float>)
              chosen = Choice(&float_unary_kernel<Fn>, &kBlockLoops<FloatUnaryBlock<Fn>, true>);
            else chosen = unary_kernel_of<T, T>(Fn{});
          });
      }
    }
  });
  return chosen;
}

Choice choose_elementwise(const Instruction& instruction, std::span<const ArrayView> operands, const ArrayView& out) {
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
    case Opcode::kStochasticConvert:
      return operands.size() == 2 ? choose_stochastic_convert(operands[0], operands[1], out) : nullptr;
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
  if (KernelFn run = kernels::choose_elementwise(instruction, operands, outputs[0]).run) return NativeKernel{run, nullptr};
  return std::nullopt;
}

const PairLoops* select_pair_loops(PrimitiveType type, Opcode inner, Opcode outer, int form) {
  if (type == PrimitiveType::kF64) {  // a product added (f32 and f64 are what fused loops compute in)
    if (inner != Opcode::kMultiply || form > 1) return nullptr;
    if (outer == Opcode::kAdd) return form == 0 ? &kernels::kPairLoops<double, Opcode::kMultiply, Opcode::kAdd, 0>
                                                : &kernels::kPairLoops<double, Opcode::kMultiply, Opcode::kAdd, 1>;
    if (outer == Opcode::kSubtract)
      return form == 0 ? &kernels::kPairLoops<double, Opcode::kMultiply, Opcode::kSubtract, 0>
                       : &kernels::kPairLoops<double, Opcode::kMultiply, Opcode::kSubtract, 1>;
    return nullptr;
  }
  if (type != PrimitiveType::kF32) return nullptr;
  switch (inner) {
    case Opcode::kAdd: return kernels::pair_loops_of<Opcode::kAdd>(outer, form);
    case Opcode::kSubtract: return kernels::pair_loops_of<Opcode::kSubtract>(outer, form);
    case Opcode::kMultiply: return kernels::pair_loops_of<Opcode::kMultiply>(outer, form);
    default: return nullptr;
  }
}

const BlockLoops* select_block_loops(const Instruction& instruction, std::span<const ArrayView> operands,
                                     const ArrayView& out) {
  return kernels::choose_elementwise(instruction, operands, out).loops;
}

}  // namespace insitu
