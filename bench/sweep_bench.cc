// `perfsim sweep` speed (issue 8 target: 10,000 scenarios per second on one core for the
// DeepSeek-V3 MoE layer on 256 chips), as ratios to a reference measured in the same run:
// BM_PredictUncached, one `perfsim predict` of the default scenario (DeepSeek-V3, fwd_bwd, TPU
// v7x 4x8x8 = 256 chips / 512 devices, ep=256, dp=2) with nothing reused.
//
// A sweep evaluates every point through sim/predict: PrepareStep once per block of points that
// share a lowered module, PredictWithRouting without detail per point, one PredictCache per
// thread (sim/sweep/evaluator.h).
//   BM_ScenarioWarm/R        a scenario whose prepared step and routing costs are cached
//                            (0 = uniform, 1 = zipf:1.0): the per-point floor, one schedule
//                            simulation with phases, MFU and the HBM peak
//   BM_ScenarioNewRouting/R  each iteration a routing never seen before (zipf:S with a fresh S,
//                            or hot:P): the prepared step is reused; the routing matrix, group
//                            sizes, grouped matmuls and ragged all-to-alls are costed afresh
//                            (grouped-matmul costs of sizes seen before come from the cache)
//   BM_SweepSpace/J          a whole sweep on J threads, cold caches: DeepSeek-V3 on 4x8x8,
//                            ep in {64, 128, 256} × tp in {1, 2} × dp the rest (fsdp 1),
//                            ep_ragged_a2a and ring_of_experts, 8 routings; the rate includes
//                            lowering and costing each of the 12 modules
// items_per_second is scenarios per second.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "sim/predict/predict.h"
#include "sim/sweep/runner.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

void BM_PredictUncached(benchmark::State& state) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  if (!OkOrSkip(state, o)) return;
  PredictEachIteration(state, *o);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PredictUncached)->Unit(benchmark::kMillisecond);

// The default scenario prepared once (lowered, fit-checked, costed), as a sweep's block is.
absl::StatusOr<PreparedStep> PrepareDefault() {
  PERFSIM_ASSIGN_OR_RETURN(PredictOptions o, DefaultPredictOptions());
  return PrepareStep(o);
}

void BM_ScenarioWarm(benchmark::State& state) {
  absl::StatusOr<PreparedStep> step = PrepareDefault();
  absl::StatusOr<RoutingSpec> routing =
      ParseRoutingSpec(state.range(0) == 0 ? "uniform" : "zipf:1.0");
  if (!step.ok() || !routing.ok()) {
    state.SkipWithError("default scenario");
    return;
  }
  PredictCache cache;
  // The schedule's size: instructions, and device classes simulated (with detail, once).
  absl::StatusOr<Prediction> shape = PredictWithRouting(*step, *routing, {.cache = &cache});
  if (!OkOrSkip(state, shape)) return;
  state.counters["ops"] = static_cast<double>(step->num_instructions());
  state.counters["classes"] = static_cast<double>(shape->schedule.num_classes());
  PredictWithRoutingEachIteration(state, *step, *routing, {.detail = false, .cache = &cache});
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScenarioWarm)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_ScenarioNewRouting(benchmark::State& state) {
  absl::StatusOr<PreparedStep> step = PrepareDefault();
  if (!OkOrSkip(state, step)) return;
  PredictCache cache;
  int64_t k = 0;
  for (auto _ : state) {
    ++k;
    const std::string text = state.range(0) == 0 ? absl::StrCat("zipf:", 0.5 + 1e-6 * k)
                                                 : absl::StrCat("hot:", 0.1 + 1e-6 * k);
    state.PauseTiming();
    absl::StatusOr<RoutingSpec> routing = ParseRoutingSpec(text);
    state.ResumeTiming();
    absl::StatusOr<Prediction> p =
        PredictWithRouting(*step, *routing, {.detail = false, .cache = &cache});
    if (!OkOrSkip(state, p)) return;
    benchmark::DoNotOptimize(p->step_seconds);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScenarioNewRouting)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SweepSpace(benchmark::State& state) {
  SweepSpace s;  // DeepSeek-V3, fwd_bwd, seq 4096, TPU v7x 4x8x8
  s.axes[kSweepEp] = {64, 128, 256};
  s.axes[kSweepTp] = {1, 2};
  s.axes[kSweepFsdp] = {1};
  s.backends = {"ep_ragged_a2a", "ring_of_experts"};
  s.routings = {"uniform", "zipf:0.5", "zipf:1.0", "zipf:1.5",
                "hot:0.1", "hot:0.2",  "hot:0.3",  "hot:0.5"};
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(s);
  if (!OkOrSkip(state, e)) return;
  int64_t points = 0;
  for (auto _ : state) {
    SweepRun run = RunSweep(*e, {.jobs = state.range(0)});
    points += static_cast<int64_t>(run.results.size());
    benchmark::DoNotOptimize(run.results.data());
  }
  state.SetItemsProcessed(points);
  state.counters["points"] = static_cast<double>(e->num_points());
}
BENCHMARK(BM_SweepSpace)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
