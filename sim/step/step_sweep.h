// A sweep over whole-step plans (issue 13): every combination of PP x VP x EP x TP x FSDP x
// micro-batch x remat (dp takes the devices the others leave) is validated, predicted and
// ranked by tokens/s per device among the plans that fit HBM.
//
//   StepSweepSpace space = DefaultStepSweepSpace(base_step_proto, model, chip);
//   CachedBlockTimer timer(std::make_unique<SimulatedBlockTimer>(chip, topology));
//   PERFSIM_ASSIGN_OR_RETURN(StepSweepResult r, SweepSteps(base, space, chip, topology, timer));
//   r.ranked[0];            // the fastest plan that fits
//   r.infeasible;           // {"does not fit HBM", 113}, {"tp 16 does not divide ...", 4}, ...
//
// Block timings depend on only a few of a plan's knobs (tp, ep, cp, sequence parallelism, the
// micro-batch and the layer kind), so CachedBlockTimer simulates each distinct block once for
// the whole sweep; the rest of a plan (pipeline schedule, collectives, memory) is composed per
// plan. Plans are evaluated in a fixed order and ranked with a deterministic tie-break (the
// enumeration order), so a sweep prints the same ranking every run.
#ifndef PERFSIM_SIM_STEP_STEP_SWEEP_H_
#define PERFSIM_SIM_STEP_STEP_SWEEP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "proto/step.pb.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/moe/model_config.h"
#include "sim/step/step_time.h"

namespace perfsim {

// Memoises another timer's answers by what a block's timing depends on: the block, the layer
// kind (MoE or dense; attention scope; rope), tp, ep, cp, sequence parallelism, micro-batch,
// sequence, MoE backend and routing; the optimizer by its element count and gradient bytes.
class CachedBlockTimer : public BlockTimer {
 public:
  explicit CachedBlockTimer(std::unique_ptr<BlockTimer> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<BlockTiming> Attention(const TrainingStep& step, int64_t layer) override;
  absl::StatusOr<BlockTiming> Ffn(const TrainingStep& step, int64_t layer) override;
  absl::StatusOr<BlockTiming> Embedding(const TrainingStep& step) override;
  absl::StatusOr<BlockTiming> LmHead(const TrainingStep& step) override;
  absl::StatusOr<double> OptimizerSeconds(const TrainingStep& step, double elements) override;
  // Answers given from the cache, and simulations run (one per miss).
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  absl::StatusOr<BlockTiming> Cached(const std::string& key,
                                     const std::function<absl::StatusOr<BlockTiming>()>& compute);
  std::unique_ptr<BlockTimer> inner_;
  absl::flat_hash_map<std::string, absl::StatusOr<BlockTiming>> blocks_;
  absl::flat_hash_map<std::string, absl::StatusOr<double>> optimizer_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

struct StepSweepSpace {
  std::vector<int64_t> pp = {1};
  std::vector<int64_t> vp = {1};
  std::vector<int64_t> ep = {1};
  std::vector<int64_t> tp = {1};
  std::vector<int64_t> fsdp = {1};  // 0: every data device (what pp, tp and cp leave)
  std::vector<int64_t> cp = {1};
  std::vector<int64_t> micro_batch = {1};
  std::vector<StepRemat> remat = {StepRemat()};
  int64_t size() const;
};

// Powers of two up to each axis's natural limit that the model allows: pp up to 16 (and the
// layers), vp 1/2/4, ep dividing E, tp up to the NVLink domain (GPU) or 8 (TPU) dividing the
// heads, fsdp 1 or every data device (0), cp 1, micro-batch 1..8, remat none, full, and
// selective core_attn (+ mlp, moe_act).
StepSweepSpace DefaultStepSweepSpace(const TrainingStepSpec& base, const ModelConfig& model,
                                     const Chip& chip);

struct StepSweepPlan {
  TrainingStepSpec spec;  // validated, defaults applied
  double step_seconds = 0;
  double tokens_per_second_per_device = 0;
  double mfu_megatron = 0;
  double hbm_bytes = 0;
  double bubble_fraction = 0;
};

struct StepSweepResult {
  int64_t plans = 0;      // combinations enumerated
  int64_t evaluated = 0;  // valid plans predicted
  // The plans that fit HBM, fastest (tokens/s per device) first.
  std::vector<StepSweepPlan> ranked;
  // Plans that did not make it, by reason (the first line of the validation error, numbers
  // included, or "does not fit HBM"), counted; in first-seen order.
  std::vector<std::pair<std::string, int64_t>> infeasible;
  int64_t block_simulations = 0;  // CachedBlockTimer misses
};

// `base` gives the model, hw, devices, batch, sequence, precision and the knobs the space does
// not vary. The first 'keep' ranked plans are returned (all with keep <= 0).
absl::StatusOr<StepSweepResult> SweepSteps(const TrainingStepSpec& base, const ModelConfig& model,
                                           const StepSweepSpace& space, const Chip& chip,
                                           const Topology& topology, CachedBlockTimer& timer,
                                           int64_t keep = 0);

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_STEP_SWEEP_H_
