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

#include <cstdio>

#include "corpus_kernels.h"

namespace insitu::cuda {
namespace {

using namespace testing;


TEST(CudaHostRun, CorpusKernelsAgreeWithTheEvaluator) {
  CorpusKernels corpus = corpus_kernels();
  std::vector<Case>& cases = corpus.cases;
  const int refused = corpus.refused, repeated = corpus.repeated;
  ASSERT_GE(cases.size(), 50u) << cases.size() << " generated, " << refused << " refused";

  // One host program: shim, prelude, every kernel, and a driver that runs kernel K over its grid.
  const fs::path dir = fs::temp_directory_path() / str_cat("insitu_cuda_host_", ::getpid());
  fs::create_directories(dir);
  std::string program = str_cat(kHostShim, kernel_prelude());
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
    reduces += c.opcode == Opcode::kReduce || c.opcode == Opcode::kReduceWindow;
    updates += c.opcode == Opcode::kDynamicUpdateSlice;
    alone += c.opcode != Opcode::kFusion && c.opcode != Opcode::kReduce && c.opcode != Opcode::kReduceWindow &&
             c.opcode != Opcode::kDynamicUpdateSlice;
  }
  fs::remove_all(dir);
  std::printf("CUDA kernels run on the host: %zu corpus kernels (%d reduces and reduce-windows, %d in-place "
              "dynamic-update-slices, %d "
              "ops outside fusions, the rest fusions) agree with the evaluator (%d bit for bit, %d within 1e-5); the "
              "generators refused %d other instructions; %d repeated a kernel already run\n",
              cases.size(), reduces, updates, alone, exact, tolerant, refused, repeated);
}

}  // namespace
}  // namespace insitu::cuda
