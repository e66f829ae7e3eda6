// libFuzzer target: the StableHLO reader (MLIR bytecode container, VHLO attributes and types,
// the op mapping, jax.export's FlatBuffer, StableHLO text) must never crash or read out of bounds, whatever the
// bytes; whatever it reads must verify and print.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "insitu/ir/printer.h"
#include "insitu/ir/verifier.h"
#include "insitu/stablehlo/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto module = insitu::stablehlo::read_vhlo(std::span<const uint8_t>(data, size));
  if (!module.ok()) return 0;
  (void)insitu::verify_module(**module);
  (void)insitu::print_module(**module);
  return 0;
}
