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

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "sim/cost/module_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

std::string MakeModuleText(int64_t instruction_count) {
  std::string text = "HloModule bench\n\n";
  absl::StrAppend(&text,
                  "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                  "  ROOT s = f32[] add(a, b)\n}\n\n");
  absl::StrAppend(&text, "ENTRY main {\n");
  absl::StrAppend(&text, "  x = f32[64,128]{1,0} parameter(0)\n");
  absl::StrAppend(&text, "  w = f32[128,128]{1,0} parameter(1)\n");
  absl::StrAppend(&text, "  zero = f32[] constant(0)\n");
  int64_t emitted = 3;
  std::string prev = "x";
  int64_t i = 0;
  while (emitted + 9 < instruction_count) {
    const std::string n = absl::StrCat(i++);
    absl::StrAppend(&text, "  d", n, " = f32[64,128]{1,0} dot(", prev,
                    ", w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n");
    absl::StrAppend(&text, "  e", n, " = f32[64,128]{1,0} exponential(d", n, ")\n");
    absl::StrAppend(&text, "  r", n, " = f32[64]{0} reduce(e", n,
                    ", zero), dimensions={1}, to_apply=add_f32\n");
    absl::StrAppend(&text, "  b", n, " = f32[64,128]{1,0} broadcast(r", n, "), dimensions={0}\n");
    absl::StrAppend(&text, "  q", n, " = f32[64,128]{1,0} divide(e", n, ", b", n, ")\n");
    absl::StrAppend(&text, "  t", n, " = f32[128,64]{1,0} transpose(q", n, "), dimensions={1,0}\n");
    absl::StrAppend(&text, "  s", n, " = f32[64,128]{1,0} reshape(t", n, ")\n");
    absl::StrAppend(&text, "  c", n, " = pred[64,128]{1,0} compare(s", n, ", d", n,
                    "), direction=GT\n");
    absl::StrAppend(&text, "  m", n, " = f32[64,128]{1,0} select(c", n, ", s", n, ", d", n, ")\n");
    prev = absl::StrCat("m", n);
    emitted += 9;
  }
  absl::StrAppend(&text, "  ROOT out = f32[64,128]{1,0} add(", prev, ", x)\n}\n");
  return text;
}

const Module& Generated() {
  static const Module* module = [] {
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(MakeModuleText(100000), "bench");
    return m.ok() ? m->release() : nullptr;
  }();
  return *module;
}

const Module* MoeEpGrad() {
  static const Module* module = [] {
    std::ifstream in(std::string(PERFSIM_SOURCE_DIR) +
                     "/tests/testdata/hlo/jax/moe_ep_ragged_a2a_grad.compiled.hlo");
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(text.str(), "moe_ep_grad");
    return m.ok() ? m->release() : nullptr;
  }();
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
