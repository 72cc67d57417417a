// Runs the perfsim command line in-process for tests: RunPerfsim with the given arguments and
// standard input, capturing standard output, standard error and the exit code.
//
//   CliResult r = RunCli({"fit", "--kernel", "gmm", ...});
//   EXPECT_EQ(r.code, kExitOk) << r.err;
#ifndef PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_
#define PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <utility>
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

// `perfsim lower` arguments for the small step tests lower and validate: `flags`, then for each
// of --model, --batch, --seq, --phase, --hw and --mesh that `flags` does not name: nano, batch
// 4 x seq 16, forward, a row of TPU v5p chips (one device each) as many as --parallelism uses
// (ep=2: --mesh 2x1x1; none named: 1x1x1). lower's own defaults are predict's (DeepSeek-V3 at
// batch 512 on TPU v7x 4x8x8), and it refuses a slice of another device count as predict does.
//   RunCli(NanoLowerArgs({"--backend", "ep_ragged_a2a", "--parallelism", "ep=2"}));
inline std::vector<std::string> NanoLowerArgs(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"lower"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto named = [&](const std::string& flag) {
    for (const std::string& f : flags) {
      if (f == flag || f.rfind(flag + "=", 0) == 0) return true;
    }
    return false;
  };
  auto value = [&](const std::string& flag) -> std::string {
    for (size_t i = 0; i + 1 < flags.size(); ++i) {
      if (flags[i] == flag) return flags[i + 1];
    }
    return "";
  };
  const std::vector<std::pair<std::string, std::string>> defaults = {
      {"--model", "nano"}, {"--batch", "4"}, {"--seq", "16"}, {"--phase", "fwd"}};
  for (const auto& [flag, default_value] : defaults) {
    if (!named(flag)) args.insert(args.end(), {flag, default_value});
  }
  if (!named("--hw") && !named("--mesh")) {
    int devices = 1;  // the product of the parallelism's axes, "dp=2,ep=2" -> 4
    std::string parallelism = value("--parallelism");
    for (size_t at = parallelism.find('='); at != std::string::npos;
         at = parallelism.find('=', at + 1)) {
      devices *= std::stoi(parallelism.substr(at + 1));
    }
    args.insert(args.end(), {"--hw", "tpu_v5p", "--mesh", std::to_string(devices) + "x1x1"});
  }
  return args;
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_CLI_CLI_TEST_UTIL_H_
