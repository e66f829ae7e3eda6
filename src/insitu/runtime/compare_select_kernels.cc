// Native compare, select, clamp and same-width bitcast-convert kernels: elementwise_kernels.cc's
// choose_elementwise picks them (elementwise_internal.h). Semantics are the reference evaluator's
// (elementwise_compare.cc, elementwise.cc), checked bit for bit in tests/runtime/kernels_test.cc.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "insitu/runtime/cpu_level.h"
#include "insitu/runtime/element_compute.h"
#include "insitu/runtime/elementwise_internal.h"

namespace insitu::kernels {
namespace {

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

// out[i] = compare(key(x[i]), key(y[i])) over [begin, end): unit-stride loops per scalar case,
// as in map_binary (a runtime stride keeps them scalar).
template <typename T, typename KeyFn, typename Compare>
struct CompareLoop {
  [[gnu::always_inline]] static inline void run(const T* x, const T* y, bool* o, bool x_scalar, bool y_scalar,
                                                int64_t begin, int64_t end) {
    KeyFn key;
    Compare compare;
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
  }
};

// Comparisons are exact, so the loops of the 4- and 8-byte types also run at the CPU's vector
// width (cpu_level.h): the same results, and a fused one-hot `iota == broadcast(target)` over
// [512, 8192] spent 11% of its row fusion in the x86-64 baseline's loop.
template <typename T>
inline constexpr bool kWideCompare = std::is_arithmetic_v<T> && sizeof(T) >= 4;

// out[i] = direction(key(a[i]), key(b[i])) where key maps a storage value to what is compared.
template <typename T, typename KeyFn>
void compare_with(ComparisonDirection direction, const ArrayView& a, const ArrayView& b, const ArrayView& out,
                  ThreadPool& pool, KeyFn) {
  const T* x = reinterpret_cast<const T*>(a.data);
  const T* y = reinterpret_cast<const T*>(b.data);
  bool* o = reinterpret_cast<bool*>(out.data);
  const bool x_scalar = a.scalar;
  const bool y_scalar = b.scalar;
  auto loop = [&](auto compare) {
    using Body = CompareLoop<T, KeyFn, decltype(compare)>;
    run_range(pool, out.element_count(), kParallelElements, [&](int64_t begin, int64_t end) {
      if constexpr (kWideCompare<T>) run_at_cpu_level<Body>(x, y, o, x_scalar, y_scalar, begin, end);
      else Body::run(x, y, o, x_scalar, y_scalar, begin, end);
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

}  // namespace

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

namespace {

// o[i] = p[i] ? t[i] : f[i] with t's and f's strides constants (0: a scalar, 1: an array),
// written as a mask so that the loop vectorizes (GCC leaves `p ? t : f` a branch per element,
// mispredicted half the time on a ReLU gradient: 4 ns per element).
template <typename Word, int kSt, int kSf>
[[gnu::always_inline]] inline void select_words(const bool* p, const Word* t, const Word* f, Word* o, int64_t begin,
                                                int64_t end) {
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(p);
  for (int64_t i = begin; i < end; ++i) {
    const Word mask = static_cast<Word>(Word{0} - static_cast<Word>(bytes[i] != 0));
    o[i] = static_cast<Word>((t[i * kSt] & mask) | (f[i * kSf] & static_cast<Word>(~mask)));
  }
}

// select_words per scalar case. Copies of words give the same result at every CPU level, so
// this runs at the CPU's vector width (run_at_cpu_level).
template <typename Word>
struct SelectLoop {
  [[gnu::always_inline]] static inline void run(const bool* p, const Word* t, const Word* f, Word* o, bool t_scalar,
                                                bool f_scalar, int64_t begin, int64_t end) {
    if (!t_scalar && !f_scalar) select_words<Word, 1, 1>(p, t, f, o, begin, end);
    else if (!t_scalar) select_words<Word, 1, 0>(p, t, f, o, begin, end);
    else if (!f_scalar) select_words<Word, 0, 1>(p, t, f, o, begin, end);
    else select_words<Word, 0, 0>(p, t, f, o, begin, end);
  }
};

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
    run_at_cpu_level<SelectLoop<Word>>(p, t, f, o, on_true.scalar, on_false.scalar, begin, end);
  });
  return ok_status();
}

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace insitu::kernels
