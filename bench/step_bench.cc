// Whole-step prediction speed (sim/step/step_time.h, issue 13): the blocks lowered and
// simulated once per distinct layer kind, then composed. Targets: a DeepSeek-V3 61-layer step
// on 8192 devices under 50 ms.
//   BM_PredictStepDeepSeekV3_8192   deepseek_v3 on tpu_v7x 16x16x16 (8192 devices), GBS 8192 x
//                                   4096, PP8 VP2 EP64 FSDP16, MBS 1, 16 micro-batches
//   BM_PredictStepMixtral_8xH100    mixtral_8x7b on 8 H100s, EP8, GBS 64 x 4096
// Each iteration builds a fresh timer: nothing is cached across iterations.
#include <benchmark/benchmark.h>

#include <string>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip_registry.h"
#include "sim/step/block_timer.h"
#include "sim/step/step_time.h"
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

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
