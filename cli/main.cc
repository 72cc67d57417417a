// perfsim: ahead-of-time performance simulator for the MoE step. See README.md.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const int code = perfsim::RunPerfsim(args, std::cin, std::cout, std::cerr);
  // Output that never arrived (a full disk, a closed pipe) is an error, not a success: every
  // write to standard output is checked here, once, after the command has written all of it.
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return code;
  const int error = errno;
  std::cerr << "perfsim: <stdout>: write failed"
            << (error != 0 ? std::string(": ") + std::strerror(error) : std::string()) << "\n";
  return code == perfsim::kExitOk ? perfsim::kExitInternal : code;
}
