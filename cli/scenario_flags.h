// Flags that describe a predict scenario (PredictOptions), shared by `perfsim predict` and
// `perfsim lower`, so that
//   perfsim lower FLAGS > m.hlo;  perfsim predict --hlo m.hlo --hw H --mesh M
// is the scenario of `perfsim predict FLAGS` (H and M the chip and slice predict uses or chose).
//
//   the step flags (step_flags.h)  --hw NAME|FILE  --mesh AxBxC  --adam
//   --routing uniform|zipf:S|hot:P|file:PATH
//
//   PERFSIM_ASSIGN_OR_RETURN(FlaggedScenario s, ScenarioFromFlags(flags));
//   s.options;  // PredictOptions: the embedded default with every named flag applied
//   s.chose;    // "--mesh 8 --parallelism ep=8 --batch 64 --seq 4096" or "" (nothing chosen)
//
// With none of the flags: DefaultPredictOptions() (DeepSeek-V3, fwd_bwd, TPU v7x 4x8x8,
// ep_ragged_a2a dp=2,ep=256, batch 512 x seq 4096, uniform routing). A step flag that is not
// named takes the default's value. Naming --model, --hw, --mesh or --parallelism leaves the
// default's slice, parallelism and batch behind: what is not named is derived by
// ChooseScenario (sim/predict/choose_scenario.h), which may predict a few batches to find the
// largest whose HBM plan fits. --hw without --mesh takes the chip's default slice.
// Errors are InvalidArgument naming the flag ("--batch: expected a positive integer; got
// 'x'"), or ChooseScenario's (a model that fits no batch; a kernel tiling that does not fit is
// a failed check, sim/fit IsMisfit).
#ifndef PERFSIM_CLI_SCENARIO_FLAGS_H_
#define PERFSIM_CLI_SCENARIO_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/flags.h"
#include "sim/predict/predict.h"

namespace perfsim {

// StepFlagSpecs() followed by hw, mesh, routing (with values) and adam (boolean).
std::vector<FlagSpec> ScenarioFlagSpecs();

struct FlaggedScenario {
  PredictOptions options;
  // What was derived, as flags to copy and edit (ChosenScenario::flags); empty when none of
  // --model, --hw, --mesh, --parallelism was named.
  std::string chose;
};

absl::StatusOr<FlaggedScenario> ScenarioFromFlags(const ParsedFlags& flags);

}  // namespace perfsim

#endif  // PERFSIM_CLI_SCENARIO_FLAGS_H_
