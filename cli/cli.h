// The perfsim command line as a library, so tests can drive it without a subprocess.
//
//   std::ostringstream out, err;
//   int code = RunPerfsim({"hlo", "check", "moe.hlo"}, std::cin, out, err);
//
// Exit codes (a stable contract, DESIGN.md "Command line"):
//   0 ok; 1 the check failed (validation mismatch, tiling does not fit);
//   2 bad input or usage, with "file:line:col: ..." where there is a file; 3 internal error.
// This is the only place in perfsim that turns an absl::Status into an exit code.
#ifndef PERFSIM_CLI_CLI_H_
#define PERFSIM_CLI_CLI_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace perfsim {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,
  kExitBadInput = 2,
  kExitInternal = 3,
};

// Streams a command reads from and writes to.
struct CliIo {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
};

// args excludes the program name: {"hw", "show", "tpu_v5p"}.
int RunPerfsim(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
               std::ostream& err);

// Prints "perfsim: <message>" to io.err and returns the exit code for the status: OK gives 0;
// a status marked as a failed check gives 1 whatever its code — today the fit check's misfit,
// marked with the payload sim/fit/module_fit.h kMisfitPayloadUrl (IsMisfit), e.g. a lowering
// whose kernel tiling does not fit VMEM in `perfsim predict`; internal, unknown and data-loss
// errors give 3; every other error 2 (input caused it), RESOURCE_EXHAUSTED without the mark
// (the interpreter's memory budget) included.
int ReportStatus(const absl::Status& status, CliIo& io);

// Subcommands. `args` excludes the subcommand name itself.
int RunHloCommand(const std::vector<std::string>& args, CliIo& io);
int RunHwCommand(const std::vector<std::string>& args, CliIo& io);
int RunModelsCommand(const std::vector<std::string>& args, CliIo& io);
int RunRunCommand(const std::vector<std::string>& args, CliIo& io);
int RunFitCommand(const std::vector<std::string>& args, CliIo& io);
int RunCostCommand(const std::vector<std::string>& args, CliIo& io);
int RunLowerCommand(const std::vector<std::string>& args, CliIo& io);
int RunValidateCommand(const std::vector<std::string>& args, CliIo& io);
int RunPredictCommand(const std::vector<std::string>& args, CliIo& io);
int RunAccuracyCommand(const std::vector<std::string>& args, CliIo& io);
int RunCalibrateCommand(const std::vector<std::string>& args, CliIo& io);
int RunSweepCommand(const std::vector<std::string>& args, CliIo& io);
int RunTrainStepCommand(const std::vector<std::string>& args, CliIo& io);

}  // namespace perfsim

#endif  // PERFSIM_CLI_CLI_H_
