// Example: tiled_grid (see programs.h). Usage: tiled_grid_example [THREADS]
#include "examples/frontend/programs.h"

int main(int argc, char** argv) { return insitu::examples::example_main(argc, argv, &insitu::examples::run_tiled_grid); }
