// `perfsim lower`: the per-device HLO module a backend lowers the MoE step to.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/step_flags.h"
#include "sim/ir/hlo_printer.h"
#include "sim/lowering/lowering.h"

namespace perfsim {
namespace {

constexpr char kLowerUsage[] = R"(usage: perfsim lower --backend NAME [step flags]

Prints the per-device SPMD module (HLO text) that backend NAME lowers one MoE layer step to:
entry parameters x, router_w, [router_bias], wi_0, wi_1, wo, [ws_0, ws_1, ws_o], [dy]; root
tuple (y[, dx, d_router_w, d_wi_0, d_wi_1, d_wo, ...]). Each instruction's metadata op_name
names its stage (moe/router, moe/dispatch, ...). The module is verified before printing.
)";

}  // namespace

int RunLowerCommand(const std::vector<std::string>& args, CliIo& io) {
  std::vector<FlagSpec> specs = StepFlagSpecs();
  specs.push_back({"help", false});
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kLowerUsage << "\n" << kStepFlagsHelp;
    return kExitOk;
  }
  if (!flags->positional().empty()) {
    return ReportStatus(absl::InvalidArgumentError(absl::StrCat(
                            "expected no positional arguments; got '", flags->positional()[0],
                            "'")),
                        io);
  }
  absl::StatusOr<StepSpec> spec = StepSpecFromFlags(*flags, StepFlagDefaults());
  if (!spec.ok()) return ReportStatus(spec.status(), io);
  absl::StatusOr<LoweredStep> step = LowerStep(*spec);
  if (!step.ok()) return ReportStatus(step.status(), io);
  io.out << PrintModule(*step->module);
  return kExitOk;
}

}  // namespace perfsim
