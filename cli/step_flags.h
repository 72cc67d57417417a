// Flags that describe a StepSpec, shared by `perfsim lower`, `validate` and `predict`.
//
//   --model NAME|FILE  --batch B  --seq S  --phase fwd|fwd_bwd  --parallelism ep=4,tp=1,dp=2
//   --backend NAME  --tiling-wi tm,tk,tn[,tm,tk,tn,tm,tk,tn]  --tiling-wo ...
//   --capacity-factor X  --align-size A  --ragged-buffer-factor X  --fused-tiling f|d
//   --fused-tile N  --grouped-matmul native|ragged_dot|masked_dot
#ifndef PERFSIM_CLI_STEP_FLAGS_H_
#define PERFSIM_CLI_STEP_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/flags.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

std::vector<FlagSpec> StepFlagSpecs();

// Help text for the flags above.
extern const char kStepFlagsHelp[];

struct StepFlagDefaults {
  std::string model = "nano";
  int64_t batch = 4;
  int64_t seq = 16;
  std::string phase = "fwd";
  std::string backend = "dense_einsum";
};

// The spec the flags describe (not yet validated against a backend). Bad values are
// InvalidArgument naming the flag: "--batch: expected a positive integer; got 'x'".
absl::StatusOr<StepSpec> StepSpecFromFlags(const ParsedFlags& flags,
                                           const StepFlagDefaults& defaults);

}  // namespace perfsim

#endif  // PERFSIM_CLI_STEP_FLAGS_H_
