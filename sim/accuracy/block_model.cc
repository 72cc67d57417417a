// PredictBlock (block_model.h).
#include "sim/accuracy/block_model.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "sim/moe/model_config.h"
#include "sim/predict/predict.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<BlockPrediction> PredictBlock(const BlockScenario& block,
                                             const ChipFactors& factors) {
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ChipWithFactors(block.chip, factors));
  PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ModelConfig::FromProto(block.model));
  PredictOptions options{.spec = StepSpec::Defaults(model)};
  options.spec.batch = 1;
  options.spec.seq = block.tokens;
  options.spec.phase = Phase::kForward;
  options.spec.backend = block.backend;
  options.spec.parallelism = Parallelism{.ep = block.devices};
  options.hw = block.chip;
  options.chip = std::move(chip);
  options.mesh = block.mesh;
  PERFSIM_ASSIGN_OR_RETURN(Prediction p, Predict(options));
  BlockPrediction out;
  out.value = ValueInUnit(p.step_seconds, 0, block.unit);
  for (const PhaseTotal& phase : p.phases) {
    absl::StrAppend(&out.detail, out.detail.empty() ? "" : ", ", phase.phase, " ",
                    fmt::format("{:.4g}", ValueInUnit(phase.seconds, 0, block.unit)), " ",
                    MeasurementUnitName(block.unit));
  }
  return out;
}

}  // namespace perfsim
