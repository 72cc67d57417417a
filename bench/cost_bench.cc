// Cost-model speed: counting and costing whole modules.
//
//   BM_CountXla100k       XLA-compatible counts of a generated 100,000-instruction module (the
//                         shape of parse_verify_bench's: dot, exponential, reduce, broadcast,
//                         divide, transpose, reshape, compare, select in a chain).
//   BM_CostModule100k     the same module fully costed (counts in both modes, roofline time
//                         per instruction) on tpu_v5p.
//   BM_CostMoeEpGrad      the committed 8-device expert-parallel MoE gradient (XLA:CPU
//                         compiled: 1097 instructions, fusions, ragged-all-to-all) costed on
//                         tpu_v7x, collectives timed by sim/comm.
// The module is parsed once, outside the timed loop.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/generated_module.h"
#include "sim/cost/module_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

const Module& Generated() {
  static const Module* module = [] {
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(MakeGeneratedModuleText(100000), "bench");
    return m.ok() ? m->release() : nullptr;
  }();
  return *module;
}

const Module* MoeEpGrad() {
  static const Module* module =
      ParseCommittedModule("tests/testdata/hlo/jax/moe_ep_ragged_a2a_grad.compiled.hlo");
  return module;
}

void BM_CountXla100k(benchmark::State& state) {
  const Module& module = Generated();
  for (auto _ : state) {
    benchmark::DoNotOptimize(CountComputation(*module.entry(), {.mode = CostMode::kXlaCompatible}));
  }
  state.counters["instructions"] = static_cast<double>(module.instruction_count());
}
BENCHMARK(BM_CountXla100k)->Unit(benchmark::kMillisecond);

void BM_CostModule100k(benchmark::State& state) {
  const Module& module = Generated();
  const absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  for (auto _ : state) {
    absl::StatusOr<ModuleCost> cost = CostModule(module, *chip, {.mode = CostMode::kTrue});
    if (!cost.ok()) {
      state.SkipWithError(std::string(cost.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(cost);
  }
  state.counters["instructions"] = static_cast<double>(module.instruction_count());
}
BENCHMARK(BM_CostModule100k)->Unit(benchmark::kMillisecond);

void BM_CostMoeEpGrad(benchmark::State& state) {
  const Module* module = MoeEpGrad();
  if (module == nullptr) {
    state.SkipWithError("cannot read moe_ep_ragged_a2a_grad.compiled.hlo");
    return;
  }
  const absl::StatusOr<Chip> chip = ResolveChip("tpu_v7x");
  for (auto _ : state) {
    absl::StatusOr<ModuleCost> cost = CostModule(*module, *chip, {.mode = CostMode::kTrue});
    if (!cost.ok()) {
      state.SkipWithError(std::string(cost.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(cost);
  }
  state.counters["instructions"] = static_cast<double>(module->instruction_count());
}
BENCHMARK(BM_CostMoeEpGrad)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
