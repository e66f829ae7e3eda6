// Example: kv_cache_decode (see programs.h). Usage: kv_cache_decode_example [THREADS]
#include "examples/frontend/programs.h"

int main(int argc, char** argv) { return insitu::examples::example_main(argc, argv, &insitu::examples::run_kv_cache_decode); }
