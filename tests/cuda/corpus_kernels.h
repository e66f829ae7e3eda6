// Test support for the CUDA code generators: every kernel the generators make for insitu's own
// optimized JAX corpus modules (and a module of data movement), each with random inputs and the
// reference evaluator's result. host_run_test.cc runs them on the host, gpu_run_test.cc on a GPU.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_set>

#include "insitu/cuda/codegen.h"
#include "insitu/support/float16.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/optimize.h"
#include "insitu/support/str.h"

namespace insitu::cuda::testing {

namespace fs = std::filesystem;

// What a generated kernel needs from CUDA, for the host compiler: the qualifiers gone,
// blockIdx/blockDim/threadIdx as globals the caller's grid loop sets, the bit casts, rsqrt.
inline constexpr const char* kHostShim = R"(#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
struct insitu_dim3 { unsigned x = 0, y = 1, z = 1; };
static insitu_dim3 blockIdx, blockDim, threadIdx;
static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
)";


inline const char* c_type(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32: return "float";
    case PrimitiveType::kF64: return "double";
    case PrimitiveType::kS32: return "int";
    case PrimitiveType::kS64: return "long long";
    case PrimitiveType::kU32: return "unsigned int";
    case PrimitiveType::kU64: return "unsigned long long";
    case PrimitiveType::kPred: return "bool";
    case PrimitiveType::kS8: return "signed char";
    case PrimitiveType::kU8: return "unsigned char";
    case PrimitiveType::kS16: return "short";
    case PrimitiveType::kU16: return "unsigned short";
    case PrimitiveType::kBF16: return "insitu_bf16";  // the kernel prelude's
    case PrimitiveType::kF16: return "insitu_f16";
    default: return nullptr;
  }
}

// Values that exercise the rules: mostly ordinary, sometimes NaN, infinities, signed zeros.
inline Literal random_input(const Shape& shape, std::mt19937& rng) {
  Literal literal(shape);
  std::uniform_real_distribution<double> uniform(-4.0, 4.0);
  const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0, 1.0};
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    const bool special = rng() % 8 == 0;
    const double value = special ? specials[rng() % 6] : uniform(rng);
    switch (shape.element_type()) {
      case PrimitiveType::kF32: literal.data<float>()[i] = static_cast<float>(value); break;
      case PrimitiveType::kF64: literal.data<double>()[i] = value; break;
      case PrimitiveType::kS32: literal.data<int32_t>()[i] = static_cast<int32_t>(rng() % 19) - 9; break;
      case PrimitiveType::kS64: literal.data<int64_t>()[i] = static_cast<int64_t>(rng() % 19) - 9; break;
      case PrimitiveType::kU32: literal.data<uint32_t>()[i] = rng() % 19; break;
      case PrimitiveType::kU64: literal.data<uint64_t>()[i] = (uint64_t{rng()} << 32) | rng(); break;
      case PrimitiveType::kPred: literal.data<bool>()[i] = rng() % 2; break;
      // Narrow integers over their whole range (so arithmetic wraps); narrow floats rounded.
      case PrimitiveType::kS8: literal.data<int8_t>()[i] = static_cast<int8_t>(rng() % 256); break;
      case PrimitiveType::kU8: literal.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256); break;
      case PrimitiveType::kS16: literal.data<int16_t>()[i] = static_cast<int16_t>(rng() % 65536); break;
      case PrimitiveType::kU16: literal.data<uint16_t>()[i] = static_cast<uint16_t>(rng() % 65536); break;
      case PrimitiveType::kBF16: literal.data<BFloat16>()[i] = BFloat16::from_float(static_cast<float>(value)); break;
      case PrimitiveType::kF16: literal.data<Half>()[i] = Half::from_float(static_cast<float>(value)); break;
      default: break;
    }
  }
  return literal;
}

// Data movement the corpus has few of: permutations that are not their own inverse, strided
// and reversed slices, three-way concatenates, a dynamic slice of a stacked tensor.
constexpr const char* kDataMovement = R"(HloModule data_movement
ENTRY main {
  a = f32[3,4,5] parameter(0)
  b = f32[2,3,4,5] parameter(1)
  i = s32[] parameter(2)
  t1 = f32[5,3,4] transpose(a), dimensions={2,0,1}
  t2 = f32[4,5,3] transpose(a), dimensions={1,2,0}
  t3 = f32[4,2,5,3] transpose(b), dimensions={2,0,3,1}
  s = f32[2,2,2] slice(a), slice={[1:3], [0:4:2], [1:5:2]}
  r = f32[3,4,5] reverse(a), dimensions={0,2}
  c = f32[3,12,5] concatenate(a, a, a), dimensions={1}
  d = f32[1,3,4,5] dynamic-slice(b, i, i, i, i), dynamic_slice_sizes={1,3,4,5}
  ROOT out = (f32[5,3,4], f32[4,5,3], f32[4,2,5,3], f32[2,2,2], f32[3,4,5], f32[3,12,5], f32[1,3,4,5]) tuple(t1, t2, t3, s, r, c, d)
}
)";

// Libm's here, libdevice's on the GPU, insitu's own in the evaluator: within a few ulps.
inline bool is_transcendental(Opcode opcode) {
  switch (opcode) {
    case Opcode::kExp: case Opcode::kLog: case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kRsqrt:
    case Opcode::kSin: case Opcode::kCos: case Opcode::kPower: case Opcode::kLog1p: case Opcode::kExpm1:
      return true;
    default: return false;
  }
}

inline bool has_transcendental(const Computation& body) {
  for (const Instruction* instruction : body.instructions())
    if (is_transcendental(instruction->opcode())) return true;
  return false;
}

// Bit for bit (any NaN matches any NaN), or within `tolerance` relative for floats.
inline std::string mismatch(const Literal& actual, const Literal& expected, bool tolerant) {
  const PrimitiveType type = expected.shape().element_type();
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    if (is_floating(type)) {  // (bf16 and f16 are exact as doubles too; tolerant: a step of theirs)
      const double a = actual.get_double(i), e = expected.get_double(i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(e)) continue;
      const double relative = type == PrimitiveType::kBF16 ? 8e-3 : type == PrimitiveType::kF16 ? 1e-3 : 1e-5;
      if (tolerant && std::isfinite(a) && std::isfinite(e) && std::fabs(a - e) <= relative * (0.1 + std::fabs(e))) continue;
      return str_cat("element ", i, ": kernel ", a, ", evaluator ", e);
    }
    if (actual.get_integer(i) != expected.get_integer(i))
      return str_cat("element ", i, ": kernel ", actual.get_integer(i), ", evaluator ", expected.get_integer(i));
  }
  return "";
}

// `instruction` alone: a computation of one parameter per operand and a copy of it as root.
inline StatusOr<Literal> evaluate_alone(const Instruction& instruction, std::span<const Literal* const> inputs) {
  Computation computation("alone");
  auto copy = clone_without_operands(instruction, "root");
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("p", i), instruction.operand(i)->shape());
    parameter->parameter_number = i;
    copy->append_operand(computation.add_instruction(std::move(parameter)));
  }
  computation.set_root(computation.add_instruction(std::move(copy)));
  return evaluate_computation(computation, inputs);
}

// Start indices (of a dynamic slice or update, a gather's): in range, or past either end
// (clamped).
inline Literal random_index(const Shape& shape, std::mt19937& rng) {
  Literal literal(shape);
  for (int64_t i = 0; i < shape.element_count(); ++i) {
    const int64_t value = static_cast<int64_t>(rng() % 12) - 3;
    if (shape.element_type() == PrimitiveType::kS64) literal.data<int64_t>()[i] = value;
    else if (shape.element_type() == PrimitiveType::kU32) literal.data<uint32_t>()[i] = static_cast<uint32_t>(value < 0 ? 0 : value);
    else literal.data<int32_t>()[i] = static_cast<int32_t>(value);
  }
  return literal;
}

inline bool is_data_movement(Opcode opcode) {
  return opcode == Opcode::kSlice || opcode == Opcode::kDynamicSlice || opcode == Opcode::kTranspose ||
         opcode == Opcode::kReverse || opcode == Opcode::kConcatenate;
}

struct Case {
  std::string where;
  GeneratedKernel kernel;
  std::vector<Literal> inputs;
  Literal expected;
  bool tolerant = false;
  Opcode opcode = Opcode::kFusion;
};

struct CorpusKernels {
  std::vector<Case> cases;
  int refused = 0;   // instructions the generators refused
  int repeated = 0;  // kernels already among the cases
};

// Every distinct kernel of the corpus (gtest failures for a module that does not parse, an
// evaluator error).
inline CorpusKernels corpus_kernels() {
  CorpusKernels result;
  std::vector<Case>& cases = result.cases;
  int& refused = result.refused;
  int& repeated = result.repeated;
  std::unordered_set<std::string> distinct;
  std::mt19937 rng(2026);
  std::vector<std::pair<std::string, std::string>> sources = {{"data movement", kDataMovement}};
  for (const auto& entry : fs::directory_iterator(fs::path(INSITU_SOURCE_DIR) / "tests" / "data" / "jax")) {
    std::ifstream in(entry.path() / "before_optimizations.hlo");
    std::stringstream text;
    text << in.rdbuf();
    sources.emplace_back(entry.path().filename().string(), text.str());
  }
  for (const auto& [source_name, source_text] : sources) {
    StatusOr<std::unique_ptr<Module>> parsed = parse_module(source_text);
    EXPECT_TRUE(parsed.ok()) << source_name << ": " << parsed.status().to_string();
    if (!parsed.ok()) continue;
    StatusOr<OptimizedModule> optimized = optimize_module(std::move(parsed).value());
    // (a corpus module for several devices does not optimize alone: not this test's)
    if (!optimized.ok()) {
      EXPECT_NE(source_name, "data movement") << optimized.status().to_string();
      continue;
    }
    const fs::path entry_name = source_name;
    for (const Computation* computation : optimized->module->computations())
      for (const Instruction* instruction : computation->instructions()) {
        const Opcode opcode = instruction->opcode();
        if (opcode == Opcode::kParameter || opcode == Opcode::kConstant || opcode == Opcode::kTuple ||
            opcode == Opcode::kGetTupleElement || !instruction->shape().is_array())
          continue;
        const std::string name = str_cat("k", cases.size());
        StatusOr<GeneratedKernel> kernel = opcode == Opcode::kFusion ? generate_elementwise_kernel(*instruction, name)
                                           : opcode == Opcode::kReduce ? generate_reduce_kernel(*instruction, name)
                                           : opcode == Opcode::kReduceWindow ? generate_reduce_window_kernel(*instruction, name)
                                           : opcode == Opcode::kGather ? generate_gather_kernel(*instruction, name)
                                           : opcode == Opcode::kPad ? generate_pad_kernel(*instruction, name)
                                           : opcode == Opcode::kDynamicUpdateSlice
                                               ? generate_dynamic_update_slice_kernel(*instruction, name)
                                           : is_data_movement(opcode) ? generate_data_movement_kernel(*instruction, name)
                                                                      : generate_op_kernel(*instruction, name);
        if (!kernel.ok()) {
          ++refused;
          continue;
        }
        // Each distinct kernel once (the same op on the same shapes recurs across programs).
        std::string body = kernel->source.substr(kernel->source.find('('));
        if (!distinct.insert(body).second) {
          ++repeated;
          continue;
        }
        Case c;
        c.where = str_cat(entry_name.string(), " %", instruction->name());
        c.kernel = std::move(kernel).value();
        c.opcode = opcode;
        std::vector<const Literal*> pointers;
        for (int64_t i = 0; i < instruction->operand_count(); ++i) {
          const Shape& shape = instruction->operand(i)->shape();
          const bool index = (opcode == Opcode::kDynamicUpdateSlice && i >= 2) ||
                             (opcode == Opcode::kDynamicSlice && i >= 1) || (opcode == Opcode::kGather && i == 1);
          c.inputs.push_back(index ? random_index(shape, rng) : random_input(shape, rng));
        }
        for (const Literal& input : c.inputs) pointers.push_back(&input);
        StatusOr<Literal> expected = opcode == Opcode::kFusion ? evaluate_computation(*instruction->to_apply(), pointers)
                                                               : evaluate_alone(*instruction, pointers);
        EXPECT_TRUE(expected.ok()) << c.where << ": " << expected.status().to_string();
        if (!expected.ok()) continue;
        c.expected = std::move(expected).value();
        c.tolerant = opcode == Opcode::kFusion ? has_transcendental(*instruction->to_apply())
                                               : is_transcendental(opcode);
        cases.push_back(std::move(c));
      }
  }
  return result;
}

}  // namespace insitu::cuda::testing
