// explain's verdict for a frontend-compiled program: every copy the optimized module still has,
// with its bytes and the reason copy insertion recorded (ir/copy_reason.h), and the
// input/output aliases. The same facts `insitu explain` prints for an HLO file.
#pragma once

#include <string>
#include <vector>

#include "insitu/ir/module.h"

namespace insitu {

struct CopyVerdict {
  std::string name;      // the copy instruction
  std::string computation;
  int64_t bytes = 0;     // one execution
  std::string reason;    // a copy reason code ("live-after-in-place-write"), or "unknown"
  std::string detail;
};

// Every copy instruction in every computation, in program order.
std::vector<CopyVerdict> list_copies(const Module& optimized);

// "copies: none" or one line per copy, then one line per input/output alias.
std::string explain_verdict(const Module& optimized);

}  // namespace insitu
