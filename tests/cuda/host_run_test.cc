// The generated CUDA kernels run on the host and agree with the reference evaluator.
//
// CI has no GPU, but a generated kernel is plain C++ inside a __global__ function: compiled by
// the host's C++ compiler with a small shim for CUDA's built-ins (blockIdx, __float_as_int, ...)
// and run over its grid in CUDA's order (every block, every thread), it computes what the GPU
// would, except for the transcendental functions (libm's here, libdevice's there: both within a
// few ulps). So every elementwise fusion, reduce and dynamic-update-slice that insitu's own
// pipeline makes for the JAX corpus is generated, run on the same random inputs (NaN,
// infinities and signed zeros among them; start indices past either end) as the evaluator,
// and compared: bit for bit where it has no transcendental op, within 1e-5 relative where it
// has. What this checks: the index arithmetic of broadcasts, reductions and data movement
// (slices, dynamic slices, transposes, reverses, concatenates), the fold order and
// the double sum of reduces, clamped start indices, the NaN and signed-zero rules of
// max/min/compare/select, saturating float -> integer converts, the parameter order of the
// signature. NVRTC compiles the same source for sm_90 beside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_set>

#include "insitu/cuda/codegen.h"
#include "insitu/evaluator/evaluator.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/parser.h"
#include "insitu/passes/flatten_calls.h"
#include "insitu/passes/optimize.h"
#include "insitu/support/str.h"

namespace insitu::cuda {
namespace {

namespace fs = std::filesystem;

constexpr const char* kShim = R"(#include <cmath>
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
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
)";

const char* c_type(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32: return "float";
    case PrimitiveType::kF64: return "double";
    case PrimitiveType::kS32: return "int";
    case PrimitiveType::kS64: return "long long";
    case PrimitiveType::kU32: return "unsigned int";
    case PrimitiveType::kPred: return "bool";
    default: return nullptr;
  }
}

// Values that exercise the rules: mostly ordinary, sometimes NaN, infinities, signed zeros.
Literal random_input(const Shape& shape, std::mt19937& rng) {
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
      case PrimitiveType::kPred: literal.data<bool>()[i] = rng() % 2; break;
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

bool has_transcendental(const Computation& body) {
  for (const Instruction* instruction : body.instructions())
    switch (instruction->opcode()) {
      case Opcode::kExp: case Opcode::kLog: case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kRsqrt:
        return true;
      default: break;
    }
  return false;
}

// Bit for bit (any NaN matches any NaN), or within `tolerance` relative for floats.
std::string mismatch(const Literal& actual, const Literal& expected, bool tolerant) {
  const PrimitiveType type = expected.shape().element_type();
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    if (type == PrimitiveType::kF32 || type == PrimitiveType::kF64) {
      const double a = actual.get_double(i), e = expected.get_double(i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(e)) continue;
      if (tolerant && std::isfinite(a) && std::isfinite(e) && std::fabs(a - e) <= 1e-6 + 1e-5 * std::fabs(e)) continue;
      return str_cat("element ", i, ": kernel ", a, ", evaluator ", e);
    }
    if (actual.get_integer(i) != expected.get_integer(i))
      return str_cat("element ", i, ": kernel ", actual.get_integer(i), ", evaluator ", expected.get_integer(i));
  }
  return "";
}

// `instruction` alone: a computation of one parameter per operand and a copy of it as root.
StatusOr<Literal> evaluate_alone(const Instruction& instruction, std::span<const Literal* const> inputs) {
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

// Start indices of a dynamic-update-slice: in range, or past either end (clamped).
Literal random_index(const Shape& shape, std::mt19937& rng) {
  Literal literal(shape);
  const int64_t value = static_cast<int64_t>(rng() % 12) - 3;
  if (shape.element_type() == PrimitiveType::kS64) literal.data<int64_t>()[0] = value;
  else if (shape.element_type() == PrimitiveType::kU32) literal.data<uint32_t>()[0] = static_cast<uint32_t>(value < 0 ? 0 : value);
  else literal.data<int32_t>()[0] = static_cast<int32_t>(value);
  return literal;
}

bool is_data_movement(Opcode opcode) {
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

TEST(CudaHostRun, CorpusKernelsAgreeWithTheEvaluator) {
  std::vector<Case> cases;
  std::unordered_set<std::string> distinct;
  int refused = 0, repeated = 0;
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
    ASSERT_TRUE(parsed.ok()) << source_name << ": " << parsed.status().to_string();
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
          const bool index = (opcode == Opcode::kDynamicUpdateSlice && i >= 2) || (opcode == Opcode::kDynamicSlice && i >= 1);
          c.inputs.push_back(index ? random_index(shape, rng) : random_input(shape, rng));
        }
        for (const Literal& input : c.inputs) pointers.push_back(&input);
        StatusOr<Literal> expected = opcode == Opcode::kFusion ? evaluate_computation(*instruction->to_apply(), pointers)
                                                               : evaluate_alone(*instruction, pointers);
        ASSERT_TRUE(expected.ok()) << c.where << ": " << expected.status().to_string();
        c.expected = std::move(expected).value();
        c.tolerant = opcode == Opcode::kFusion ? has_transcendental(*instruction->to_apply())
                                               : opcode == Opcode::kExp || opcode == Opcode::kLog ||
                                                     opcode == Opcode::kTanh || opcode == Opcode::kLogistic ||
                                                     opcode == Opcode::kRsqrt;
        cases.push_back(std::move(c));
      }
  }
  ASSERT_GE(cases.size(), 50u) << cases.size() << " generated, " << refused << " refused";

  // One host program: shim, prelude, every kernel, and a driver that runs kernel K over its grid.
  const fs::path dir = fs::temp_directory_path() / str_cat("insitu_cuda_host_", ::getpid());
  fs::create_directories(dir);
  std::string program = str_cat(kShim, kernel_prelude());
  for (const Case& c : cases) program += c.kernel.source;
  program += "static void run(int k, std::vector<std::vector<char>>& in, std::vector<char>& out, long long n) {\n"
             "  blockDim.x = 128;\n  switch (k) {\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::string out_type = c_type(c.expected.shape().element_type());
    std::string arguments, before;
    long long threads = c.expected.element_count();
    if (c.opcode == Opcode::kDynamicUpdateSlice) {
      // In place: the output starts as the operand; one thread per update element.
      before = "      std::memcpy(out.data(), in[0].data(), out.size() - 1);\n";
      arguments = str_cat("(", out_type, "*)out.data(), ");
      for (size_t i = 1; i < c.inputs.size(); ++i)
        arguments += str_cat("(const ", c_type(c.inputs[i].shape().element_type()), "*)in[", i, "].data(), ");
      threads = c.inputs[1].element_count();
    } else {
      for (size_t i = 0; i < c.inputs.size(); ++i)
        arguments += str_cat("(const ", c_type(c.inputs[i].shape().element_type()), "*)in[", i, "].data(), ");
      arguments += str_cat("(", out_type, "*)out.data(), ");
    }
    program += str_cat("    case ", k, ":\n", before, "      for (blockIdx.x = 0; (long long)blockIdx.x * 128 < ", threads,
                       "ll; ++blockIdx.x)\n        for (threadIdx.x = 0; threadIdx.x < 128; ++threadIdx.x) ",
                       c.kernel.name, "(", arguments, threads, "ll);\n      break;\n");
  }
  program += R"(  }
}
// kernel n out_bytes out_path in_path...
int main(int argc, char** argv) {
  std::vector<std::vector<char>> in;
  for (int a = 5; a < argc; ++a) {
    FILE* f = std::fopen(argv[a], "rb");
    std::fseek(f, 0, SEEK_END);
    std::vector<char> bytes(std::ftell(f) + 1);
    std::fseek(f, 0, SEEK_SET);
    if (std::fread(bytes.data(), 1, bytes.size() - 1, f) != bytes.size() - 1) return 2;
    std::fclose(f);
    in.push_back(std::move(bytes));
  }
  std::vector<char> out(std::atoll(argv[3]) + 1);
  run(std::atoi(argv[1]), in, out, std::atoll(argv[2]));
  FILE* f = std::fopen(argv[4], "wb");
  std::fwrite(out.data(), 1, out.size() - 1, f);
  return std::fclose(f) == 0 ? 0 : 3;
}
)";
  {
    std::ofstream source(dir / "kernels.cc");
    source << program;
  }
  if (cuda_available()) {  // the same kernels, for the GPU
    std::string source = kernel_prelude();
    for (const Case& c : cases) source += c.kernel.source;
    StatusOr<std::string> ptx = compile_to_ptx(source, "corpus_fusions.cu");
    ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  }
  const std::string compile = str_cat(INSITU_HOST_CXX, " -std=c++17 -O1 -ffp-contract=off -w -o ", (dir / "kernels").string(),
                                      " ", (dir / "kernels.cc").string(), " 2>", (dir / "compile.log").string());
  ASSERT_EQ(std::system(compile.c_str()), 0) << "the host compiler refused the generated source: "
                                             << (dir / "compile.log") << ", " << (dir / "kernels.cc");

  int exact = 0, tolerant = 0, reduces = 0, updates = 0, alone = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    std::string command = str_cat((dir / "kernels").string(), " ", k, " ", c.expected.element_count(), " ",
                                  c.expected.size_bytes(), " ", (dir / "out.bin").string());
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const fs::path path = dir / str_cat("in", i, ".bin");
      std::ofstream file(path, std::ios::binary);
      file.write(reinterpret_cast<const char*>(c.inputs[i].untyped_data()), c.inputs[i].size_bytes());
      command += " " + path.string();
    }
    ASSERT_EQ(std::system(command.c_str()), 0) << c.where;
    Literal actual(c.expected.shape());
    std::ifstream out(dir / "out.bin", std::ios::binary);
    out.read(reinterpret_cast<char*>(actual.untyped_data()), actual.size_bytes());
    const std::string difference = mismatch(actual, c.expected, c.tolerant);
    EXPECT_EQ(difference, "") << c.where << "\n" << c.kernel.source;
    ++(c.tolerant ? tolerant : exact);
    reduces += c.opcode == Opcode::kReduce;
    updates += c.opcode == Opcode::kDynamicUpdateSlice;
    alone += c.opcode != Opcode::kFusion && c.opcode != Opcode::kReduce && c.opcode != Opcode::kDynamicUpdateSlice;
  }
  fs::remove_all(dir);
  std::printf("CUDA kernels run on the host: %zu corpus kernels (%d reduces, %d in-place dynamic-update-slices, %d "
              "ops outside fusions, the rest fusions) agree with the evaluator (%d bit for bit, %d within 1e-5); the "
              "generators refused %d other instructions; %d repeated a kernel already run\n",
              cases.size(), reduces, updates, alone, exact, tolerant, refused, repeated);
}

}  // namespace
}  // namespace insitu::cuda
