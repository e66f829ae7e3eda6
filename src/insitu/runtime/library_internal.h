// Internal to the files that call the GEMM and convolution library (library_gemm.cc,
// library_convolution.cc): how a library call runs on the calling thread alone.
#pragma once

#ifdef INSITU_HAVE_ONEDNN
#include <omp.h>

namespace insitu::kernels {

// For one library call: the library runs on this thread alone, and the caller's own OpenMP
// setting (the calling thread may be an application's OpenMP thread) comes back.
class SingleThreadedLibrary {
 public:
  SingleThreadedLibrary() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreadedLibrary() { omp_set_num_threads(saved_); }
  SingleThreadedLibrary(const SingleThreadedLibrary&) = delete;
  SingleThreadedLibrary& operator=(const SingleThreadedLibrary&) = delete;

 private:
  int saved_;
};

}  // namespace insitu::kernels
#endif
