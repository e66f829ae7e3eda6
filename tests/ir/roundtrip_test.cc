// Round trip over the corpus (tests/corpus/*.hlo) and the seed modules (examples/seed/*.hlo):
// for both print forms, m = parse(file); t1 = print(m); m2 = parse(t1); then m2 equals m and
// print(m2) == t1 (printing is stable).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "insitu/ir/module_equal.h"
#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"

namespace insitu {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<fs::path> hlo_files(const fs::path& folder) {
  std::vector<fs::path> files;
  if (!fs::is_directory(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().extension() == ".hlo") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<fs::path> corpus_files() { return hlo_files(fs::path(INSITU_SOURCE_DIR) / "tests" / "corpus"); }
std::vector<fs::path> seed_files() { return hlo_files(fs::path(INSITU_SEED_DIR)); }

void expect_round_trip(const fs::path& path, bool long_form) {
  SCOPED_TRACE(path.filename().string() + (long_form ? " (long form)" : " (short form)"));
  auto parsed = parse_module(read_file(path));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string(path.string());
  const Module& m = **parsed;
  PrintOptions options;
  options.long_form = long_form;
  std::string t1 = print_module(m, options);
  auto reparsed = parse_module(t1);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().to_string("<printed>") << "\nprinted text:\n" << t1;
  std::string difference;
  EXPECT_TRUE(modules_equal(m, **reparsed, &difference)) << difference << "\nprinted text:\n" << t1;
  EXPECT_EQ(print_module(**reparsed, options), t1);
}

TEST(RoundTripTest, CorpusHasAtLeastThirtyModules) { EXPECT_GE(corpus_files().size(), 30u); }

TEST(RoundTripTest, SeedModulesArePresent) { EXPECT_EQ(seed_files().size(), 3u); }

TEST(RoundTripTest, CorpusLongForm) {
  for (const fs::path& path : corpus_files()) expect_round_trip(path, /*long_form=*/true);
}

TEST(RoundTripTest, CorpusShortForm) {
  for (const fs::path& path : corpus_files()) expect_round_trip(path, /*long_form=*/false);
}

TEST(RoundTripTest, SeedLongForm) {
  for (const fs::path& path : seed_files()) expect_round_trip(path, /*long_form=*/true);
}

TEST(RoundTripTest, SeedShortForm) {
  for (const fs::path& path : seed_files()) expect_round_trip(path, /*long_form=*/false);
}

// The seed dumps are XLA's own output: printing them in their own form reproduces them.
TEST(RoundTripTest, SeedPrintsAsXlaDumpedIt) {
  for (const char* name : {"ir_to_hlo.hlo", "sync_tensors_graph.before_optimizations.hlo",
                           "sync_tensors_graph.after_optimizations.hlo"}) {
    SCOPED_TRACE(name);
    std::string text = read_file(fs::path(INSITU_SEED_DIR) / name);
    auto parsed = parse_module(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string(name);
    PrintOptions options;
    options.long_form = std::string(name) == "ir_to_hlo.hlo";
    EXPECT_EQ(print_module(**parsed, options), text);
  }
}

// The corpus is written in the printer's own spelling (XLA's), in long form where ENTRY is
// written "ENTRY %name", so parsing and printing a corpus file gives the file back.
TEST(RoundTripTest, CorpusFilesAreWrittenAsThePrinterWritesThem) {
  for (const fs::path& path : corpus_files()) {
    SCOPED_TRACE(path.filename().string());
    std::string text = read_file(path);
    auto parsed = parse_module(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string(path.string());
    PrintOptions options;
    options.long_form = text.find("\nENTRY %") != std::string::npos;
    EXPECT_EQ(print_module(**parsed, options), text);
  }
}

}  // namespace
}  // namespace insitu
