// Fit benchmarks (issue 6 target: a full --search of a DeepSeek-V3 grouped matmul < 50 ms):
//   BM_SearchDeepSeekGmmV7x     SearchTilings over every legal tiling of the DeepSeek-V3 wi_0
//                               forward gmm (m = 16384 rows = 2048 tokens x K 8, k = D = 7168,
//                               n = F = 2048, 256 experts, bf16) on tpu_v7x: 10752 candidates
//   BM_SearchDeepSeekTgmmV7x    the matching weight-gradient tgmm
//   BM_FootprintsOnlyReference  reference for the ratio: the same 10752 candidates enumerated
//                               and their footprints summed, no limit check and no pricing, so
//                               search / reference is what ranking by the cost model adds
//   BM_EstimateOneTiling        one EstimateTilingCost (CostGroupedMatmul) of a gmm tiling
//   BM_CheckFitOneTiling        one CheckFit (the unit a search repeats)
#include "benchmark/benchmark.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/tiling_cost.h"
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

void BM_FootprintsOnlyReference(benchmark::State& state) {
  const Chip chip = LoadBuiltinChip("tpu_v7x").value();
  const KernelProblem problem = DeepSeek(KernelKind::kGmm);
  int64_t candidates = 0;
  for (auto _ : state) {
    int64_t bytes = 0;
    const std::vector<Tiling> tilings = EnumerateTilings(problem, chip);
    for (const Tiling& tiling : tilings) {
      bytes += ComputeFootprint(problem, tiling, chip).BytesIn(MemorySpace::kVmem);
    }
    candidates = static_cast<int64_t>(tilings.size());
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
}
BENCHMARK(BM_FootprintsOnlyReference)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EstimateOneTiling(benchmark::State& state) {
  const Chip chip = LoadBuiltinChip("tpu_v7x").value();
  const KernelProblem problem = DeepSeek(KernelKind::kGmm);
  for (auto _ : state) {
    TilingCostEstimate estimate = EstimateTilingCost(problem, Tiling{64, 7168, 1024}, chip);
    benchmark::DoNotOptimize(estimate);
  }
}
BENCHMARK(BM_EstimateOneTiling)->Unit(benchmark::kMicrosecond);

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
