// perfsim: ahead-of-time performance simulator for the MoE step. See README.md.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return perfsim::RunPerfsim(args, std::cin, std::cout, std::cerr);
}
