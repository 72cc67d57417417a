// Interpreter benchmarks:
//   BM_MatMulF32Kernel/1024      the blocked f32 kernel alone, 1024^3, one core (target >= 10
//                                GFLOP/s; reported as the "flops" rate counter)
//   BM_DotF32Module/1024         the same product as an HLO `dot` through RunModule (adds
//                                operand conversion and packing)
//   BM_MoeEpRaggedA2aFwd8        the 8-device expert-parallel MoE forward golden module
//                                (ragged-all-to-all, ragged-dot) end to end on random inputs
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "sim/interp/dot_kernel.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/random_inputs.h"
#include "sim/ir/hlo_parser.h"

namespace perfsim {
namespace {

void BM_MatMulF32Kernel(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7) % 13) * 0.1f;
    b[i] = static_cast<float>((i * 5) % 11) * 0.1f;
  }
  for (auto _ : state) {
    std::fill(c.begin(), c.end(), 0.0f);
    interp::MatMulAccumulateF32(a.data(), n, b.data(), n, c.data(), n, n, n, n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatMulF32Kernel)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DotF32Module(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string hlo =
      absl::StrCat("HloModule m\nENTRY e {\n  a = f32[", n, ",", n, "] parameter(0)\n  b = f32[", n,
                   ",", n, "] parameter(1)\n  ROOT d = f32[", n, ",", n,
                   "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  std::unique_ptr<Module> module = ParseHloModule(hlo).value();
  auto inputs = MakeRandomInputs(*module, 1, 1).value();
  for (auto _ : state) {
    absl::StatusOr<RunResult> result = RunModule(*module, inputs, InterpreterOptions{});
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DotF32Module)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MoeEpRaggedA2aFwd8(benchmark::State& state) {
  const std::string path = std::string(PERFSIM_SOURCE_DIR) +
                           "/tests/testdata/hlo/jax/moe_ep_ragged_a2a_fwd.compiled.hlo";
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text.str(), path);
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message()).c_str());
    return;
  }
  InterpreterOptions options;
  options.num_devices = 8;
  auto inputs = MakeRandomInputs(**module, options.num_devices, 1).value();
  for (auto _ : state) {
    absl::StatusOr<RunResult> result = RunModule(**module, inputs, options);
    if (!result.ok()) state.SkipWithError(std::string(result.status().message()).c_str());
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_MoeEpRaggedA2aFwd8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
