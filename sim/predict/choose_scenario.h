// The parts of a predict scenario the user did not name, derived from the model and the chip.
//
//   ScenarioRequest r{.options = o, .mesh_given = false, .parallelism_given = false,
//                     .batch_given = false};
//   PERFSIM_ASSIGN_OR_RETURN(ChosenScenario c, ChooseScenario(r));
//   c.options;   // mixtral_8x7b on gpu_h100: mesh 8, ep=8, batch 64 x seq 4096
//   c.flags;     // "--mesh 8 --parallelism ep=8 --batch 64 --seq 4096" (copyable)
//
// What is chosen, each only when the request does not fix it:
//   - the mesh: the chip's default slice (one NVLink node of a GPU, e.g. 8 H100s or 72 GB200s;
//     a TPU's default slice, e.g. v7x 4x4x4), or `options.mesh` when it is not empty;
//   - the parallelism: every device of the mesh, ep = gcd(E, devices) (the most experts'
//     shards that divide both), dp = devices / ep; tp = fsdp = 1;
//   - the batch: the largest u·2^k <= max(512, u) whose per-device HBM plan fits (Prediction's
//     MemoryUse.fits), with u the smallest batch whose batch·seq splits over dp·fsdp·ep token
//     shards. Each try is one prediction without detail (a few ms).
// Explicit values are kept as they are; an inconsistent explicit combination is refused by
// PrepareStep as without a choice. A model that fits no batch is InvalidArgument saying so:
//   "deepseek_v3 does not fit tpu_v5e 1x1 (1 device) even at batch 1 x seq 4096: 67.0 GiB of
//    16.0 GiB HBM per device; try a smaller --seq, a larger --mesh or --phase fwd".
#ifndef PERFSIM_SIM_PREDICT_CHOOSE_SCENARIO_H_
#define PERFSIM_SIM_PREDICT_CHOOSE_SCENARIO_H_

#include <string>

#include "absl/status/statusor.h"
#include "sim/predict/predict.h"

namespace perfsim {

struct ScenarioRequest {
  PredictOptions options;  // what the user named; the rest holds placeholders
  bool mesh_given = false;
  bool parallelism_given = false;
  bool batch_given = false;
};

struct ChosenScenario {
  PredictOptions options;  // mesh filled in, parallelism and batch chosen
  // "--mesh M --parallelism P --batch B --seq S", the whole scenario shape as flags.
  std::string flags;
};

// The largest batch the search starts from (the embedded default's batch).
inline constexpr int64_t kMaxChosenBatch = 512;

absl::StatusOr<ChosenScenario> ChooseScenario(const ScenarioRequest& request);

// "dp=2,ep=256": the axes above 1 (ep=1 when all are 1), in ParseParallelism's syntax.
std::string CompactParallelism(const Parallelism& p);

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_CHOOSE_SCENARIO_H_
