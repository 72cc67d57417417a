// Fit benchmarks (issue 6 target: a full --search of a DeepSeek-V3 grouped matmul < 50 ms):
//   BM_SearchDeepSeekGmmV7x     SearchTilings over every legal tiling of the DeepSeek-V3 wi_0
//                               forward gmm (m = 16384 rows = 2048 tokens x K 8, k = D = 7168,
//                               n = F = 2048, 256 experts, bf16) on tpu_v7x: 10752 candidates
//   BM_SearchDeepSeekTgmmV7x    the matching weight-gradient tgmm
//   BM_CheckFitOneTiling        one CheckFit (the unit a search repeats)
#include "benchmark/benchmark.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/tiling_search.h"
#include "sim/hw/chip_registry.h"

namespace perfsim {
namespace {

KernelProblem DeepSeek(KernelKind kernel) {
  KernelProblem p;
  p.kernel = kernel;
  p.shape = {16384, 7168, 2048, 256};
  p.dtypes = {PrimitiveType::kBF16, PrimitiveType::kBF16, PrimitiveType::kBF16};
  return p;
}

void Search(benchmark::State& state, KernelKind kernel) {
  const Chip chip = LoadBuiltinChip("tpu_v7x").value();
  const KernelProblem problem = DeepSeek(kernel);
  int64_t candidates = 0;
  for (auto _ : state) {
    absl::StatusOr<TilingSearchResult> result = SearchTilings(problem, chip, {});
    if (!result.ok() || !result->best.has_value()) {
      state.SkipWithError("search found no fitting tiling");
      return;
    }
    candidates = result->candidates;
    benchmark::DoNotOptimize(result);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
}

void BM_SearchDeepSeekGmmV7x(benchmark::State& state) { Search(state, KernelKind::kGmm); }
BENCHMARK(BM_SearchDeepSeekGmmV7x)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SearchDeepSeekTgmmV7x(benchmark::State& state) { Search(state, KernelKind::kTgmm); }
BENCHMARK(BM_SearchDeepSeekTgmmV7x)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CheckFitOneTiling(benchmark::State& state) {
  const Chip chip = LoadBuiltinChip("tpu_v7x").value();
  const KernelProblem problem = DeepSeek(KernelKind::kGmm);
  for (auto _ : state) {
    absl::StatusOr<FitReport> report = CheckFit(problem, Tiling{512, 1024, 1024}, chip);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_CheckFitOneTiling)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
