// Parse + verify speed on a generated module of 100,000 instructions (issue 2 target: < 1 s
// on one core).
//
// The module is a long chain of realistic MoE-ish ops (dot, add, multiply, exponential,
// broadcast, reduce with a to_apply computation, transpose, reshape, convert, compare/select)
// with metadata on every instruction, as XLA dumps have. Alongside, BM_ScanLines reads the
// same text and counts lines: the figure to report is parse+verify time as a ratio to that
// reference, measured in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/generated_module.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

const std::string& ModuleText() {
  static const std::string* text = new std::string(MakeGeneratedModuleText(
      100000,
      ", metadata={op_name=\"jit(f)/moe/layer\" source_file=\"moe.py\" source_line=42}"));
  return *text;
}

void BM_ParseAndVerify100k(benchmark::State& state) {
  const std::string& text = ModuleText();
  int64_t instructions = 0;
  for (auto _ : state) {
    auto module = ParseHloModule(text, "bench.hlo");
    if (!module.ok()) {
      state.SkipWithError(std::string(module.status().message()).c_str());
      return;
    }
    absl::Status verified = VerifyModule(**module);
    if (!verified.ok()) {
      state.SkipWithError(std::string(verified.message()).c_str());
      return;
    }
    instructions = (*module)->instruction_count();
    benchmark::DoNotOptimize(module);
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["bytes"] = static_cast<double>(text.size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseAndVerify100k)->Unit(benchmark::kMillisecond);

void BM_ParseOnly100k(benchmark::State& state) {
  const std::string& text = ModuleText();
  for (auto _ : state) {
    auto module = ParseHloModule(text, "bench.hlo");
    benchmark::DoNotOptimize(module);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseOnly100k)->Unit(benchmark::kMillisecond);

// Reference: one pass over the same bytes counting lines and '=' signs — the least any
// parser must do. Report parse+verify as a multiple of this.
void BM_ScanLinesReference(benchmark::State& state) {
  const std::string& text = ModuleText();
  for (auto _ : state) {
    int64_t lines = std::count(text.begin(), text.end(), '\n');
    int64_t equals = std::count(text.begin(), text.end(), '=');
    benchmark::DoNotOptimize(lines + equals);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ScanLinesReference)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
