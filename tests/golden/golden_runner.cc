// insitu_golden: runs golden .hlo tests (format in tests/golden/README.md) in-process through
// the insitu CLI library and matches the output with the FileCheck-like matcher.
//
//   insitu_golden [-v] FILE.hlo...   exit status 0 when every case of every file passes;
//                                   -v prints every case's command, output and errors
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "file_check.h"
#include "cli/cli.h"

namespace insitu::golden {
namespace {

bool verbose = false;

struct GoldenCase {
  int first_line = 1;  // 1-based line of the case's first line in the file
  std::vector<std::string> lines;
  std::vector<std::string> run_args;  // after "// RUN:", e.g. {"run", "--reference"}
  std::vector<CheckDirective> output_checks;
  std::vector<CheckDirective> error_checks;    // CHECK-ERROR: matched against stderr, exit status 1
  std::vector<CheckDirective> warning_checks;  // CHECK-WARNING: matched against stderr, exit status 0
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

bool is_separator(const std::string& line) { return trim(line) == "// -----"; }

// Recognizes "// CHECK...: pattern" and "// RUN: ..." anywhere after a "//" on the line.
void read_directive(const std::string& line, int line_number, GoldenCase& golden_case) {
  size_t comment = line.find("//");
  if (comment == std::string::npos) return;
  std::string rest = trim(line.substr(comment + 2));
  if (rest.rfind("RUN:", 0) == 0) {
    std::istringstream words(rest.substr(4));
    golden_case.run_args.clear();
    for (std::string word; words >> word;) golden_case.run_args.push_back(word);
    return;
  }
  if (rest.rfind("CHECK-ERROR:", 0) == 0) {
    golden_case.error_checks.push_back({CheckKind::kCheck, rest.substr(12), line_number});
    return;
  }
  if (rest.rfind("CHECK-WARNING:", 0) == 0) {
    golden_case.warning_checks.push_back({CheckKind::kCheck, rest.substr(14), line_number});
    return;
  }
  if (auto check = parse_check_directive(rest, line_number)) golden_case.output_checks.push_back(*check);
}

std::vector<GoldenCase> split_cases(const std::string& text) {
  std::vector<GoldenCase> cases(1);
  std::istringstream input(text);
  int line_number = 0;
  for (std::string line; std::getline(input, line);) {
    ++line_number;
    if (is_separator(line)) {
      cases.emplace_back();
      cases.back().first_line = line_number + 1;
      continue;
    }
    cases.back().lines.push_back(line);
    read_directive(line, line_number, cases.back());
  }
  return cases;
}

// The module text of a case: earlier lines and full-line comments blanked, so the parser's
// line:column positions are those of the golden file itself.
std::string module_text(const GoldenCase& golden_case) {
  std::string text(static_cast<size_t>(golden_case.first_line - 1), '\n');
  for (const std::string& line : golden_case.lines) {
    if (trim(line).rfind("//", 0) != 0) text += line;
    text += '\n';
  }
  return text;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Runs one case; returns "" on success or a report of what went wrong.
std::string run_case(const std::string& path, const GoldenCase& golden_case, const std::vector<std::string>& run_args) {
  if (run_args.empty()) return "no '// RUN:' line (e.g. '// RUN: fmt')\n";
  if (golden_case.output_checks.empty() && golden_case.error_checks.empty())
    return "no CHECK or CHECK-ERROR lines: a case that checks nothing cannot fail\n";
  // argv: insitu SUBCOMMAND MODULE FLAGS...; %S in a flag is the golden file's folder.
  std::vector<std::string> args = {"insitu", run_args[0], base_name(path)};
  for (size_t i = 1; i < run_args.size(); ++i) {
    std::string arg = run_args[i];
    for (size_t at; (at = arg.find("%S")) != std::string::npos;) arg.replace(at, 2, directory_of(path));
    args.push_back(arg);
  }
  std::string text = module_text(golden_case);
  std::ostringstream out, err;
  cli::CliContext context{out, err, [&](const std::string&) -> StatusOr<std::string> { return text; }};
  int status = cli::run_insitu(args, context);

  std::string command;
  for (const std::string& arg : args) command += arg + " ";
  std::string transcript = "command: " + command + "\nexit status: " + std::to_string(status) +
                           "\n--- stdout ---\n" + out.str() + "--- stderr ---\n" + err.str() + "---\n";
  if (verbose) std::cout << base_name(path) << ":" << golden_case.first_line << ":\n" << transcript;
  bool expect_error = !golden_case.error_checks.empty();
  if (expect_error && status != 1) return "expected exit status 1 (CHECK-ERROR)\n" + transcript;
  if (!expect_error && status != 0) return "expected exit status 0\n" + transcript;
  std::string failure = match_checks(out.str(), golden_case.output_checks, path);
  if (failure.empty()) failure = match_checks(err.str(), golden_case.error_checks, path);
  if (failure.empty()) failure = match_checks(err.str(), golden_case.warning_checks, path);
  if (!failure.empty()) return failure + transcript;
  return "";
}

int run_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    std::cerr << path << ": error: cannot open the golden file\n";
    return 1;
  }
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::vector<GoldenCase> cases = split_cases(buffer.str());
  int failures = 0;
  std::vector<std::string> run_args = cases.front().run_args;  // the first case's RUN is the default
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<std::string>& args = cases[i].run_args.empty() ? run_args : cases[i].run_args;
    std::string failure = run_case(path, cases[i], args);
    if (!failure.empty()) {
      ++failures;
      std::cerr << path << ":" << cases[i].first_line << ": case " << i + 1 << " of " << cases.size()
                << " FAILED\n" << failure << "\n";
    }
  }
  std::cout << path << ": " << cases.size() - failures << " of " << cases.size() << " cases passed\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace insitu::golden

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: insitu_golden FILE.hlo...\n";
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-v") {
      insitu::golden::verbose = true;
      continue;
    }
    status |= insitu::golden::run_file(argv[i]);
  }
  return status;
}
