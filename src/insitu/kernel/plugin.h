// A kernel plugin (`insitu --plugin LIB.so`, Python's insitu.load_plugin): a shared library
// whose static initializers register custom-call kernels into CustomCallTable::global()
// (kernel/registry.h). The insitu binary exports its symbols (ENABLE_EXPORTS), so a plugin may
// leave the table's symbols undefined and bind to the binary's single table.
#pragma once

#include <string>

#include "insitu/support/status.h"

namespace insitu {

// dlopens `path` (a bare file name in the working directory is tried as ./NAME first). The
// library stays loaded for the life of the process. Errors carry dlerror()'s reason.
Status load_plugin(const std::string& path);

}  // namespace insitu
