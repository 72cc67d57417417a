// Pipeline-schedule simulation speed (sim/step/pipeline_schedule.h): one SimulatePipeline of an
// interleaved 1F1B step with p = 16 devices, v = 4 chunks each and m = 256 micro-batches
// (2 p v m = 32,768 tasks). items_per_second is tasks per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "sim/step/pipeline_schedule.h"

namespace perfsim {
namespace {

void BM_SimulateInterleavedPipeline(benchmark::State& state) {
  const PipelineSpec spec{.stages = state.range(0),
                          .microbatches = state.range(2),
                          .virtual_stages = state.range(1),
                          .kind = PipelineScheduleKind::kInterleavedOneFOneB};
  const PipelineStageCosts costs = PipelineStageCosts::Uniform(spec, 1e-3, 2e-3, 1e-5);
  for (auto _ : state) {
    absl::StatusOr<PipelineTimeline> timeline = SimulatePipeline(spec, costs);
    if (!timeline.ok()) {
      state.SkipWithError(std::string(timeline.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(timeline->step_seconds);
  }
  state.SetItemsProcessed(state.iterations() * 2 * spec.num_chunks() * spec.microbatches);
}
BENCHMARK(BM_SimulateInterleavedPipeline)
    ->Args({16, 4, 256})
    ->Args({8, 2, 64})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
