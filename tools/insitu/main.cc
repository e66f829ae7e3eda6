// insitu: the command-line tool (stub: being written).
#include <cstdio>

int main() {
  std::printf("insitu: not written yet\n");
  return 0;
}
