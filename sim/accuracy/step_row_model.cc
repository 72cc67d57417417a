// PredictStepRow (step_row_model.h).
#include "sim/accuracy/step_row_model.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "sim/comm/topology.h"
#include "sim/step/block_timer.h"
#include "sim/step/step_time.h"
#include "sim/step/training_step.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<StepRowPrediction> PredictStepRow(const StepRowScenario& row,
                                                 const ChipFactors& factors) {
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ChipWithFactors(row.chip, factors));
  PERFSIM_ASSIGN_OR_RETURN(TrainingStep step, TrainingStep::FromProto(row.step));
  PERFSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(chip, row.mesh));
  SimulatedBlockTimer timer(chip, topology);
  PERFSIM_ASSIGN_OR_RETURN(StepPrediction p, PredictStep(step, chip, topology, timer));
  StepRowPrediction out;
  switch (row.metric) {
    case StepMetric::kStepSeconds:
      out.value = ValueInUnit(p.step_seconds, 0, row.unit);
      break;
    case StepMetric::kTokensPerSecondPerDevice:
      out.value = p.tokens_per_second_per_device;
      break;
    case StepMetric::kModelTflopsPerDevice:
      out.value = row.megatron_flops ? p.model_tflops_per_device_megatron
                                     : p.model_tflops_per_device_maxtext;
      break;
  }
  const StepBreakdown& b = p.breakdown;
  out.detail = fmt::format(
      "step {:.4g} s: attention {:.3g} s, MoE {:.3g} s, dense FFN {:.3g} s, embedding+head "
      "{:.3g} s (recompute {:.3g} s), optimizer {:.3g} s, exposed FSDP {:.3g} s, DP {:.3g} s, "
      "ZeRO gather {:.3g} s, bubble {:.3g} s ({:.1f}%); HBM {:.1f} of {:.1f} GiB{}",
      p.step_seconds, b.attention_seconds, b.moe_seconds, b.dense_ffn_seconds,
      b.embedding_head_seconds, b.recompute_seconds, b.optimizer_seconds,
      b.exposed_fsdp_seconds, b.exposed_dp_seconds, b.exposed_param_gather_seconds,
      b.bubble_seconds, 100 * p.bubble_fraction, p.memory.total_bytes / (1 << 30),
      static_cast<double>(p.memory.capacity_bytes) / (1 << 30),
      p.memory.fits ? "" : " (does not fit)");
  if (p.lower_bound) absl::StrAppend(&out.detail, "; lower bound (untimed ops)");
  return out;
}

}  // namespace perfsim
