// Command-line parsing with CLI11 (Debian's libcli11-dev): subcommands, --help everywhere,
// typed and validated options, without hand-rolled argv handling.
#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli/fmt_command.h"
#include "cli/opt_command.h"
#include "insitu/passes/pipeline.h"
#include "cli/run_command.h"
#include "insitu/runtime/thread_pool.h"
#include "insitu/support/str.h"

#ifndef INSITU_VERSION
#define INSITU_VERSION "0.0.0"
#endif

namespace insitu::cli {

// Input files are read up to a cap (INSITU_MAX_INPUT_BYTES, default 2 GiB), in chunks, so a
// device or a pipe that never ends (/dev/zero) is an error, not an exhausted machine.
int64_t max_input_bytes() {
  if (const char* value = std::getenv("INSITU_MAX_INPUT_BYTES")) {
    char* end = nullptr;
    const long long parsed = std::strtoll(value, &end, 10);
    if (end != value && *end == '\0' && parsed > 0) return parsed;
  }
  return int64_t{2} << 30;
}

StatusOr<std::string> read_text_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return invalid_argument(str_cat("cannot read '", path, "': it is a directory"));
  const int64_t cap = max_input_bytes();
  const auto too_large = [&] {
    return resource_exhausted(str_cat("cannot read '", path, "': it is larger than ", cap,
                                      " bytes (set INSITU_MAX_INPUT_BYTES to read more)"));
  };
  if (std::filesystem::is_regular_file(path, error)) {
    const auto size = std::filesystem::file_size(path, error);
    if (!error && static_cast<int64_t>(size) > cap) return too_large();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return not_found(str_cat("cannot read '", path, "': ", std::strerror(errno)));
  std::string text;
  try {
    constexpr size_t kChunk = 1 << 20;
    while (file) {
      const size_t old_size = text.size();
      if (static_cast<int64_t>(old_size) >= cap) {
        if (file.peek() == std::char_traits<char>::eof()) break;
        return too_large();
      }
      const size_t chunk = std::min<size_t>(kChunk, static_cast<size_t>(cap) - old_size);
      text.resize(old_size + chunk);
      file.read(text.data() + old_size, static_cast<std::streamsize>(chunk));
      text.resize(old_size + static_cast<size_t>(file.gcount()));
    }
  } catch (const std::bad_alloc&) {
    return resource_exhausted(str_cat("cannot read '", path, "': not enough memory for ", text.size(), " bytes"));
  }
  if (file.bad()) return invalid_argument(str_cat("cannot read '", path, "': ", std::strerror(errno)));
  return text;
}

int report_error(CliContext& context, const Status& status, const std::string& file) {
  // One write of the whole line: under MPI every rank writes to one stderr, and a message and
  // its newline written apart ran two ranks' errors together on one line.
  const std::string line = status.location().valid() && !file.empty()
                               ? status.to_string(file) + "\n"
                               : str_cat("insitu: error: ", status.message(), "\n");
  context.err.write(line.data(), static_cast<std::streamsize>(line.size()));
  context.err.flush();
  return 1;
}

namespace {

// `--device cpu|cuda` (cpu the default) of a subcommand, saying what cuda means there.
void add_device_option(CLI::App& app, std::string& device, const std::string& help) {
  app.add_option("--device", device, help)->check(CLI::IsMember({"cpu", "cuda"}))->type_name("DEVICE");
}

// What every subcommand's module argument may be.
constexpr const char* kModuleHelp =
    "HLO text (XLA's format), StableHLO text (.mlir, as jax.jit(f).lower(x).as_text() prints it), MLIR bytecode "
    "(.mlirbc: a VHLO artifact, as JAX hands a PJRT plugin) or a jax.export artifact (Exported.serialize())";

}  // namespace

int run_insitu(const std::vector<std::string>& args, CliContext& context) {
  CLI::App app("insitu: a tensor compiler and runtime in which in-place updates are first class.", "insitu");
  app.set_version_flag("--version", "insitu " INSITU_VERSION);
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_app = app.add_subcommand("run", "Run a module's entry computation and print its result.");
  run_app->add_option("module", run.module_path, kModuleHelp)->required()->type_name("MODULE.hlo");
  run_app->add_option("--arg", run.arg_paths,
                      "A .npy file for the next entry-parameter leaf (tuple parameters flattened "
                      "depth-first); give one per leaf, or none for deterministic default values "
                      "(element i = (i % 7) + 1; pred alternates true, false)")
      ->allow_extra_args(false)
      ->type_name("FILE.npy");
  run_app->add_option("--save", run.save_dir, "Write the result leaves to DIR/output_0.npy, output_1.npy, ...")
      ->type_name("DIR");
  run_app->add_option("--stats", run.stats_path,
                      "Write run statistics as JSON (copies_executed, bytes_copied, bytes_written: what the "
                      "steps wrote, an in-place update its update; peak_memory_bytes, compile_seconds, run_seconds)")
      ->type_name("FILE.json");
  run_app->add_option("--plugin", run.plugins, "Load a kernel plugin (.so) before running; repeatable")
      ->allow_extra_args(false)
      ->type_name("LIB.so");
  run_app
      ->add_option_function<std::string>(
          "--max-memory",
          [&run](const std::string& text) {
            // BYTES with an optional K, M or G suffix (powers of 1024).
            size_t used = 0;
            long long value = 0;
            try {
              value = std::stoll(text, &used);
            } catch (const std::exception&) {
              throw CLI::ValidationError("--max-memory", "expected BYTES, e.g. 8G, 512M or 1048576, got '" + text + "'");
            }
            const std::string suffix = text.substr(used);
            const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
            if (shift < 0 || value <= 0 || value > (std::numeric_limits<int64_t>::max() >> shift))
              throw CLI::ValidationError("--max-memory", "expected BYTES, e.g. 8G, 512M or 1048576, got '" + text + "'");
            run.max_memory_bytes = static_cast<int64_t>(value) << shift;
          },
          "Memory budget: refuse a module whose peak memory exceeds it (default: what this machine can give)")
      ->type_name("BYTES[K|M|G]");
  run_app
      ->add_option("--timeout", run.timeout_seconds,
                   "End the run with an error after this many seconds (checked between steps and at loop back-edges)")
      ->check(CLI::PositiveNumber)
      ->type_name("SECONDS");
  run_app
      ->add_option("--collective-timeout", run.collective_timeout_seconds,
                   "On a module for many devices: how long a device waits at a collective for the rest of its "
                   "group before the run ends with an error naming them (default 60)")
      ->check(CLI::PositiveNumber)
      ->type_name("SECONDS");
  run_app->add_option("--threads", run.threads, "Worker threads (default: all cores)")
      ->check(CLI::Range(1, ThreadPool::kMaxThreads))
      ->type_name("N");
  run_app->add_flag("--reference", run.reference, "Run the reference evaluator instead of the optimized runtime");
  add_device_option(*run_app, run.device,
                    "cpu (default), or cuda: the optimized module on GPU 0 (arguments copied in and results out, "
                    "counted in --stats)");
  run_app->add_flag("--check-races", run.check_races, "Report kernel grid steps that race on a buffer");
  run_app->add_flag("--strict-donation", run.strict_donation, "Make an unusable donated buffer an error");

  FmtOptions fmt;
  CLI::App* fmt_app = app.add_subcommand("fmt", "Parse, verify and print a module in canonical HLO text.");
  fmt_app->add_option("module", fmt.module_path, kModuleHelp)->required()->type_name("MODULE.hlo");
  fmt_app->add_flag("--short", fmt.short_form, "Short form: bare names, no operand shapes");
  fmt_app->add_option("--to", fmt.to, "What to print the module read as (hlo: HLO text, the only form written)")
      ->check(CLI::IsMember({"hlo"}))
      ->default_val("hlo");
  fmt_app->add_flag("--no-verify", fmt.no_verify,
                    "Parse and print without verifying, as XLA's parser does (a module a verifier would refuse "
                    "prints as written; run, opt and explain always verify)");

  OptOptions opt;
  CLI::App* opt_app = app.add_subcommand("opt", "Optimize a module (copies only where needed) and print it.");
  opt_app->add_option("module", opt.module_path, kModuleHelp)->required()->type_name("MODULE.hlo");
  opt_app->add_option("--dump-to", opt.dump_to,
                      "Write XLA-style stage files (before/after optimizations, each pass, buffer assignment, "
                      "memory-usage report) into DIR")
      ->type_name("DIR");
  opt_app->add_option("--plugin", opt.plugins, "Load a kernel plugin (.so); repeatable")
      ->allow_extra_args(false)
      ->type_name("LIB.so");
  opt_app->add_flag("--strict-donation", opt.strict_donation, "Make an unusable donated buffer an error");
  add_device_option(*opt_app, opt.device,
                    "cpu (default) prints the optimized module; cuda prints its plan for the GPU (kernels, GEMMs, "
                    "copies) or names the first op without a CUDA form");
  opt_app
      ->add_option("--passes", opt.passes,
                   str_cat("Run only these passes, in this order, and print the module after them (no buffer "
                           "assignment); --passes=help says what each does. Passes: ",
                           str_join(optimization_pass_names(), ",")))
      ->delimiter(',')
      ->type_name("A,B,...");
  opt_app->add_flag("--time-passes", opt.time_passes,
                    "Write each pass's seconds (and its verification's) to stderr, then buffer assignment's");

  ExplainOptions explain;
  CLI::App* explain_app =
      app.add_subcommand("explain", "Say why every copy of the optimized module exists, what aliases what, and "
                                    "why a donated buffer could not be used.");
  explain_app->add_option("module", explain.module_path, kModuleHelp)
      ->required()
      ->type_name("MODULE.hlo");
  explain_app->add_option("--plugin", explain.plugins, "Load a kernel plugin (.so); repeatable")
      ->allow_extra_args(false)
      ->type_name("LIB.so");
  CLI::Option* json_flag = explain_app->add_flag("--json", explain.json, "JSON: copies, peak_memory_bytes, aliases, unused_donors");
  explain_app->add_flag("--dot", explain.dot, "Graphviz: copies in red with their reasons, aliased parameters marked")
      ->excludes(json_flag);
  add_device_option(*explain_app, explain.device,
                    "cpu (default), or cuda: the module as the CUDA device runs it (its reduce fusions inlined) and "
                    "its buffers as the device holds them (peak memory the device's)");

  // `insitu opt --passes=help`: the pass table, one line per pass with why it sits where it does
  // (no module needed).
  if (args.size() > 1 && args[1] == "opt")
    for (size_t i = 2; i < args.size(); ++i)
      if (args[i] == "--passes=help" || (args[i] == "--passes" && i + 1 < args.size() && args[i + 1] == "help")) {
        context.out << describe_optimization_passes();
        return 0;
      }

  // CLI11 would call an unknown word a stray positional; name it instead.
  if (args.size() > 1 && !args[1].empty() && args[1][0] != '-' && args[1] != "run" && args[1] != "fmt" &&
      args[1] != "opt" && args[1] != "explain") {
    context.err << "insitu: error: unknown command '" << args[1]
                << "' (commands: run, opt, explain, fmt)\nRun 'insitu --help' for usage.\n";
    return 1;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  if (!reversed.empty()) reversed.pop_back();  // the program name
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, context.out, context.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, context.out, context.err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, context.out, context.err);
  } catch (const CLI::ParseError& e) {
    context.err << "insitu: error: " << e.what() << "\nRun 'insitu --help' for usage.\n";
    return 1;
  }

  // The last line of defence: memory the machine could not give while building values (the
  // reference evaluator's Literals, parsed constants) is an error, not an abort. The runtime
  // checks its budget before allocating.
  try {
    if (run_app->parsed()) return run_command(run, context);
    if (fmt_app->parsed()) return fmt_command(fmt, context);
    if (opt_app->parsed()) return opt_command(opt, context);
    if (explain_app->parsed()) return explain_command(explain, context);
  } catch (const std::bad_alloc&) {
    return report_error(context, resource_exhausted("out of memory: the module's values do not fit in what this "
                                                    "machine can give"));
  }
  context.err << "insitu: error: no command given\n";
  return 1;
}

}  // namespace insitu::cli
