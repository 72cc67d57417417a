// `perfsim predict` speed (issue 5 targets: the default scenario under 2 ms; the same on 8192
// chips with EP=256 under 100 ms), and the `validate` suite's per-case cost.
//
// Reference measured in the same run: BM_LowerDefault, lowering and verifying the default
// scenario's module alone (what any prediction must at least do), so the report can give
// predict time as a ratio to it.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "sim/lowering/lowering.h"
#include "sim/predict/predict.h"

namespace perfsim {
namespace {

void BM_PredictDefault(benchmark::State& state) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  if (!OkOrSkip(state, o)) return;
  PredictEachIteration(state, *o);
}
BENCHMARK(BM_PredictDefault)->Unit(benchmark::kMillisecond);

// 8192 TPU v7x chips (16x16x32, 16384 devices), EP = 256, DP = 64, the default's 4096 tokens
// per device.
void BM_Predict8192Chips(benchmark::State& state) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  if (!OkOrSkip(state, o)) return;
  o->mesh = "16x16x32";
  o->spec.parallelism = Parallelism{.dp = 64, .ep = 256};
  o->spec.batch = 16384;
  PredictEachIteration(state, *o);
}
BENCHMARK(BM_Predict8192Chips)->Unit(benchmark::kMillisecond);

// The routing-dependent stage alone on a prepared default scenario (what a sweep re-runs per
// routing), with zipf:1.2 so that the expert shards differ and the schedule has classes.
void BM_PredictWithRoutingZipf(benchmark::State& state) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  absl::StatusOr<RoutingSpec> routing = ParseRoutingSpec("zipf:1.2");
  if (!o.ok() || !routing.ok()) {
    state.SkipWithError("default scenario");
    return;
  }
  absl::StatusOr<PreparedStep> step = PrepareStep(*o);
  if (!OkOrSkip(state, step)) return;
  PredictWithRoutingEachIteration(state, *step, *routing, {.detail = false});
}
BENCHMARK(BM_PredictWithRoutingZipf)->Unit(benchmark::kMillisecond);

void BM_LowerDefault(benchmark::State& state) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  if (!OkOrSkip(state, o)) return;
  for (auto _ : state) {
    absl::StatusOr<LoweredStep> step = LowerStep(o->spec);
    if (!OkOrSkip(state, step)) return;
    benchmark::DoNotOptimize(step->module.get());
  }
}
BENCHMARK(BM_LowerDefault)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
