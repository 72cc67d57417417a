// Runs the perfsim command line in-process for tests: RunPerfsim with the given arguments and
// standard input, capturing standard output, standard error and the exit code.
//
//   CliResult r = RunCli({"fit", "--kernel", "gmm", ...});
//   EXPECT_EQ(r.code, kExitOk) << r.err;
#ifndef PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_
#define PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace perfsim {
namespace testing {

struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};

inline CliResult RunCli(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  CliResult r;
  r.code = RunPerfsim(args, in, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_
