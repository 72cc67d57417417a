#include "cli/cli.h"

#include "absl/strings/str_cat.h"
#include "sim/fit/module_fit.h"

namespace perfsim {
namespace {

constexpr char kUsage[] =
    R"(perfsim: ahead-of-time performance simulator for the Mixture-of-Experts step.

usage: perfsim <command> [flags]

commands:
  hlo check FILE     parse and verify HLO text ('-' reads stdin)
  hlo print FILE     parse, verify and print HLO text back
  hw list            list the described chips
  hw show NAME       show one chip and its interconnect
  models list        list the described MoE models
  models show NAME   show one model
  run FILE.hlo       interpret a module on CPU (random or .npy inputs), summarise outputs
  fit --kernel ...   does a kernel tiling fit VMEM / shared memory; --search: fastest that fits
  cost FILE.hlo --hw NAME   flops, bytes and time per instruction on a chip
  predict            step time of the MoE layer on a cluster (default: DeepSeek-V3 on v7x)
  step --model M --hw H ...  the whole training step: time, tokens/s, MFU, breakdown, HBM
  lower --backend NAME      print the per-device HLO a backend lowers the MoE step to
  validate [--backend NAME|all]  every backend against the dense reference, fwd and bwd
  accuracy FILE.csv  predicted vs measured rows (physics, calibrated, leave-one-out)
  calibrate FILE.csv fit the hardware files' efficiency factors on measurements
  sweep              rank plans (parallelism, backend, tiling, batch, routing); shard + merge

Run 'perfsim <command> --help' for the flags of a command.
Exit codes: 0 ok, 1 check failed, 2 bad input or usage, 3 internal error (or output that
could not be written), 130 interrupted.
Inputs are regular files or '-' (stdin); directories and devices are refused. Size limits:
1 GiB per input (HLO, CSV, sweep spaces), 4 GiB per .npy, 16 MiB per hardware or model
description, 64 MiB per routing file. Output files are replaced atomically.
)";

}  // namespace

int ReportStatus(const absl::Status& status, CliIo& io) {
  if (status.ok()) return kExitOk;
  io.err << "perfsim: " << status.message() << "\n";
  // A kernel tiling that does not fit is a failed check whatever its code (cli.h).
  if (IsMisfit(status)) return kExitCheckFailed;
  switch (status.code()) {
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
      return kExitInternal;
    default:
      return kExitBadInput;
  }
}

int RunPerfsim(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
               std::ostream& err) {
  CliIo io{in, out, err};
  if (args.empty()) {
    err << kUsage;
    return kExitBadInput;
  }
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    out << kUsage;
    return kExitOk;
  }
  if (command == "hlo") return RunHloCommand(rest, io);
  if (command == "hw") return RunHwCommand(rest, io);
  if (command == "models") return RunModelsCommand(rest, io);
  if (command == "run") return RunRunCommand(rest, io);
  if (command == "fit") return RunFitCommand(rest, io);
  if (command == "cost") return RunCostCommand(rest, io);
  if (command == "lower") return RunLowerCommand(rest, io);
  if (command == "validate") return RunValidateCommand(rest, io);
  if (command == "predict") return RunPredictCommand(rest, io);
  if (command == "accuracy") return RunAccuracyCommand(rest, io);
  if (command == "calibrate") return RunCalibrateCommand(rest, io);
  if (command == "sweep") return RunSweepCommand(rest, io);
  if (command == "step") return RunTrainStepCommand(rest, io);
  err << "perfsim: unknown command '" << command << "'\n\n" << kUsage;
  return kExitBadInput;
}

}  // namespace perfsim
