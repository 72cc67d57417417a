// libFuzzer target for the command line itself: argv -> flag parsing -> scenario building ->
// the command's work, in process, for `perfsim predict`, `lower`, `validate`, `fit`, `sweep` and
// `step`.
//
// Input: the first byte picks the command; the rest, split at '\0' and '\n', are its
// arguments. Arguments that would write files (--trace, --csv, --out, --inputs-dir,
// --save-outputs, --write) or read paths (anything with a '/', '.textproto' or '.csv', routing
// files, --space, --hlo) are dropped, so that the fuzzer never touches the file system;
// standard input is empty. What stays is every flag and value a user can type for a
// built-in scenario, and they are where the number-range defects of issue 16 were.
//
// Bounded work per input: `validate` and `sweep` evaluate a whole matrix or space by default
// (74 s and 9 s here, more under ASan), so flags that pin the size of the matrix or space are
// appended after the fuzzed ones (the last value of a flag wins): validate runs the nano
// model, one device, forward, one router and routing, under a 64 MiB memory budget (so large
// sizes are refused by the budget's estimate, which is what the fuzzer exercises); sweep runs
// the nano model on a 2x2x1 v5p slice; step drops --sweep (a whole-step sweep of a large job
// simulates hundreds of blocks) and keeps every other flag fuzzed. Every other flag of theirs
// stays fuzzed.
//
// Checked: nothing crashes, hangs or trips a sanitizer; the exit code is 0, 1 or 2 (3 is an
// internal error, a bug whatever the input); a non-zero exit says why on stderr, starting
// "perfsim: " or with the usage text; a zero exit writes something to stdout.
//
//   ./cli_fuzzer -max_len=512 fuzz-corpus/cli
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cli/cli.h"

namespace {

constexpr const char* kCommands[] = {"predict", "lower", "validate", "fit", "sweep", "step"};

// Flags whose value is a path to write or read.
constexpr const char* kPathFlags[] = {"trace", "csv", "out", "inputs-dir", "save-outputs",
                                      "write", "space", "hlo", "hardware-dir", "inputs"};

bool NamesPath(absl::string_view arg) {
  return absl::StrContains(arg, '/') || absl::StrContains(arg, ".textproto") ||
         absl::StrContains(arg, ".csv") || absl::StrContains(arg, ".hlo") ||
         absl::StrContains(arg, ".npy") || absl::StartsWith(arg, "file:") ||
         absl::StrContains(arg, "=file:");
}

bool IsPathFlag(absl::string_view arg) {
  absl::string_view name = arg;
  while (absl::ConsumePrefix(&name, "-")) {
  }
  name = name.substr(0, name.find('='));
  for (const char* flag : kPathFlags) {
    if (name == flag) return true;
  }
  return false;
}

void Fail(const char* what, const std::vector<std::string>& args, const std::string& err) {
  fprintf(stderr, "cli_fuzzer: broken contract: %s\nargs:", what);
  for (const std::string& a : args) fprintf(stderr, " '%s'", a.c_str());
  fprintf(stderr, "\nstderr: %s\n", err.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<std::string> args = {kCommands[data[0] % std::size(kCommands)]};
  const absl::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  bool skip_value = false;
  for (absl::string_view arg : absl::StrSplit(rest, absl::ByAnyChar(std::string("\n\0", 2)))) {
    if (skip_value) {  // the separate value of a dropped path flag
      skip_value = false;
      continue;
    }
    if (IsPathFlag(arg)) {
      skip_value = !absl::StrContains(arg, '=');
      continue;
    }
    if (NamesPath(arg)) continue;
    args.emplace_back(arg);
  }
  if (args[0] == "step") {
    std::erase(args, std::string("--sweep"));
  }
  if (args.size() > 64) args.resize(64);
  if (args[0] == "validate") {
    args.insert(args.end(), {"--model", "nano", "--devices", "1", "--parallelism", "ep=1",
                             "--phase", "fwd", "--router", "softmax_topk", "--routing",
                             "random", "--memory-budget", "64MiB"});
  } else if (args[0] == "sweep") {
    args.insert(args.end(), {"--model", "nano", "--hw", "tpu_v5p", "--mesh", "2x2x1", "--jobs",
                             "1", "--quiet"});
  }
  std::istringstream in;
  std::ostringstream out;
  std::ostringstream err;
  const int code = perfsim::RunPerfsim(args, in, out, err);
  if (code != perfsim::kExitOk && code != perfsim::kExitCheckFailed &&
      code != perfsim::kExitBadInput) {
    Fail("exit code 0, 1 or 2", args, err.str());
  }
  if (code != perfsim::kExitOk && err.str().empty() && out.str().empty()) {
    Fail("a failure says why", args, err.str());
  }
  if (code == perfsim::kExitOk && out.str().empty()) Fail("a success prints something", args, "");
  return 0;
}
