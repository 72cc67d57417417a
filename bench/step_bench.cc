// Whole-step prediction speed (sim/step/step_time.h, issue 13): the blocks lowered and
// simulated once per distinct layer kind, then composed. Targets: a DeepSeek-V3 61-layer step
// on 8192 devices under 50 ms.
//   BM_PredictStepDeepSeekV3_8192   deepseek_v3 on tpu_v7x 16x16x16 (8192 devices), GBS 8192 x
//                                   4096, PP8 VP2 EP64 FSDP16, MBS 1, 16 micro-batches
//   BM_PredictStepMixtral_8xH100    mixtral_8x7b on 8 H100s, EP8, GBS 64 x 4096
//   BM_StepSweepMixtral_64xH100     the default sweep space (sim/step/step_sweep.h) of
//                                   mixtral_8x7b on 64 H100s, GBS 512 x 4096: items_per_second is
//                                   plans per second (target: 1,000 or more on one core)
// Each iteration builds a fresh timer: nothing is cached across iterations.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip_registry.h"
#include "sim/step/block_timer.h"
#include "sim/step/step_sweep.h"
#include "sim/step/step_time.h"
#include "sim/moe/model_registry.h"
#include "sim/step/training_step.h"

namespace perfsim {
namespace {

void RunStep(benchmark::State& state, const std::string& hw, const std::string& mesh,
             TrainingStepSpec proto, const std::string& parallelism) {
  absl::StatusOr<Chip> chip = ResolveChip(hw);
  absl::StatusOr<Topology> topology =
      chip.ok() ? Topology::Create(*chip, mesh) : absl::StatusOr<Topology>(chip.status());
  if (!topology.ok()) {
    state.SkipWithError(std::string(topology.status().message()).c_str());
    return;
  }
  proto.set_hw(hw);
  if (absl::Status s = ApplyParallelismString(parallelism, proto); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  if (!step.ok()) {
    state.SkipWithError(std::string(step.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    SimulatedBlockTimer timer(*chip, *topology);
    absl::StatusOr<StepPrediction> p = PredictStep(*step, *chip, *topology, timer);
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(p->step_seconds);
  }
}

// The reference: one of the step's block timings alone, DeepSeek-V3's MoE layer (forward and
// forward+backward lowered and simulated) in the same plan.
void BM_TimeOneMoeBlockDeepSeekV3_8192(benchmark::State& state) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v7x");
  absl::StatusOr<Topology> topology =
      chip.ok() ? Topology::Create(*chip, "16x16x16") : absl::StatusOr<Topology>(chip.status());
  TrainingStepSpec proto;
  proto.set_model("deepseek_v3");
  proto.set_hw("tpu_v7x");
  proto.set_devices(8192);
  proto.set_global_batch(8192);
  proto.set_seq_len(4096);
  proto.mutable_parallelism()->set_uneven_pipeline(true);
  absl::Status parsed = ApplyParallelismString("PP8 VP2 EP64 FSDP16 MBS1", proto);
  absl::StatusOr<TrainingStep> step =
      parsed.ok() ? TrainingStep::FromProto(proto) : absl::StatusOr<TrainingStep>(parsed);
  if (!topology.ok() || !step.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  for (auto _ : state) {
    SimulatedBlockTimer timer(*chip, *topology);
    absl::StatusOr<BlockTiming> t = timer.Ffn(*step, /*layer=*/3);
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(t->forward_seconds);
  }
}
BENCHMARK(BM_TimeOneMoeBlockDeepSeekV3_8192)->Unit(benchmark::kMillisecond);

void BM_PredictStepDeepSeekV3_8192(benchmark::State& state) {
  TrainingStepSpec proto;
  proto.set_model("deepseek_v3");
  proto.set_devices(8192);
  proto.set_global_batch(8192);
  proto.set_seq_len(4096);
  proto.mutable_parallelism()->set_uneven_pipeline(true);
  RunStep(state, "tpu_v7x", "16x16x16", proto, "PP8 VP2 EP64 FSDP16 MBS1");
}
BENCHMARK(BM_PredictStepDeepSeekV3_8192)->Unit(benchmark::kMillisecond);

void BM_PredictStepMixtral_8xH100(benchmark::State& state) {
  TrainingStepSpec proto;
  proto.set_model("mixtral_8x7b");
  proto.set_devices(8);
  proto.set_global_batch(64);
  proto.set_seq_len(4096);
  RunStep(state, "gpu_h100", "8", proto, "EP8 MBS1");
}
BENCHMARK(BM_PredictStepMixtral_8xH100)->Unit(benchmark::kMillisecond);

void BM_StepSweepMixtral_64xH100(benchmark::State& state) {
  absl::StatusOr<Chip> chip = ResolveChip("gpu_h100");
  absl::StatusOr<Topology> topology =
      chip.ok() ? Topology::Create(*chip, "64") : absl::StatusOr<Topology>(chip.status());
  absl::StatusOr<ModelConfig> model = ResolveModel("mixtral_8x7b");
  if (!topology.ok() || !model.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  TrainingStepSpec base;
  base.set_model("mixtral_8x7b");
  base.set_hw("gpu_h100");
  base.set_devices(64);
  base.set_global_batch(512);
  base.set_seq_len(4096);
  base.set_force_balanced_routing(true);
  base.mutable_parallelism()->set_zero(ZERO_1);
  const StepSweepSpace space = DefaultStepSweepSpace(base, *model, *chip);
  int64_t plans = 0;
  for (auto _ : state) {
    CachedBlockTimer timer(std::make_unique<SimulatedBlockTimer>(*chip, *topology));
    absl::StatusOr<StepSweepResult> r = SweepSteps(base, *model, space, *chip, *topology, timer);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    plans += r->plans;
    benchmark::DoNotOptimize(r->ranked.size());
  }
  state.SetItemsProcessed(plans);
}
BENCHMARK(BM_StepSweepMixtral_64xH100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
