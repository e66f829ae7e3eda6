// libFuzzer target: the HLO text parser, printer and verifier must never crash, whatever the
// input. Anything that parses must print, re-parse and print to the same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "insitu/ir/parser.h"
#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = insitu::parse_module(text);
  if (!module.ok()) return 0;
  (void)insitu::verify_module(**module);
  std::string printed = insitu::print_module(**module);
  auto reparsed = insitu::parse_module(printed);
  if (!reparsed.ok()) {
    std::fprintf(stderr, "printed module does not parse: %s\n%s\n", reparsed.status().to_string().c_str(),
                 printed.c_str());
    std::abort();
  }
  if (insitu::print_module(**reparsed) != printed) {
    std::fprintf(stderr, "printing is not stable:\n%s\n", printed.c_str());
    std::abort();
  }
  return 0;
}
