// Example: adam_step (see programs.h). Usage: adam_step_example [THREADS]
#include "examples/frontend/programs.h"

int main(int argc, char** argv) { return insitu::examples::example_main(argc, argv, &insitu::examples::run_adam_step); }
