// Example: plus_one_donated (see programs.h). Usage: plus_one_donated_example [THREADS]
#include "examples/frontend/programs.h"

int main(int argc, char** argv) { return insitu::examples::example_main(argc, argv, &insitu::examples::run_plus_one_donated); }
