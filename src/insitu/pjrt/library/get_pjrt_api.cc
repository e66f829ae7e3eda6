// libinsitu_pjrt.so: the PJRT plugin (../plugin.h) as a library of its own, for a PJRT host that
// loads plugins by path and looks up GetPjrtApi (jax's register_plugin(library_path=...), a C++
// host). The Python package does not need it: it hands jax the same table as a capsule.
#include <pjrt_c_api.h>

#include "insitu/pjrt/plugin.h"

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() { return insitu::pjrt::api(); }
