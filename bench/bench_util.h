// Setup and loops the perfsim benchmarks share (bench/predict_bench.cc, bench/sweep_bench.cc).
//
//   absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
//   if (!OkOrSkip(state, o)) return;
//   PredictEachIteration(state, *o);   // one Predict(*o) per iteration
//
// A failure inside a loop skips the benchmark with the status's message and stops the loop,
// so a broken scenario shows as an error row rather than a time.
#ifndef PERFSIM_BENCH_BENCH_UTIL_H_
#define PERFSIM_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <string>

#include "absl/status/statusor.h"
#include "sim/predict/predict.h"

namespace perfsim {

// True when `value` holds a value; else skips the benchmark with its status's message.
template <typename T>
bool OkOrSkip(benchmark::State& state, const absl::StatusOr<T>& value) {
  if (value.ok()) return true;
  state.SkipWithError(std::string(value.status().message()).c_str());
  return false;
}

// Times Predict(o) with nothing reused between iterations.
inline void PredictEachIteration(benchmark::State& state, const PredictOptions& o) {
  for (auto _ : state) {
    absl::StatusOr<Prediction> p = Predict(o);
    if (!OkOrSkip(state, p)) return;
    benchmark::DoNotOptimize(p->step_seconds);
  }
}

// Times PredictWithRouting(step, routing, options): the routing-dependent stage alone.
inline void PredictWithRoutingEachIteration(benchmark::State& state, const PreparedStep& step,
                                            const RoutingSpec& routing,
                                            const EvaluateOptions& options) {
  for (auto _ : state) {
    absl::StatusOr<Prediction> p = PredictWithRouting(step, routing, options);
    if (!OkOrSkip(state, p)) return;
    benchmark::DoNotOptimize(p->step_seconds);
  }
}

}  // namespace perfsim

#endif  // PERFSIM_BENCH_BENCH_UTIL_H_
