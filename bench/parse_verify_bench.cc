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
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

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
  const std::string md = ", metadata={op_name=\"jit(f)/moe/layer\" source_file=\"moe.py\" source_line=42}";
  while (emitted + 9 < instruction_count) {
    const std::string n = absl::StrCat(i++);
    absl::StrAppend(&text, "  d", n, " = f32[64,128]{1,0} dot(", prev,
                    ", w), lhs_contracting_dims={1}, rhs_contracting_dims={0}", md, "\n");
    absl::StrAppend(&text, "  e", n, " = f32[64,128]{1,0} exponential(d", n, ")", md, "\n");
    absl::StrAppend(&text, "  r", n, " = f32[64]{0} reduce(e", n,
                    ", zero), dimensions={1}, to_apply=add_f32", md, "\n");
    absl::StrAppend(&text, "  b", n, " = f32[64,128]{1,0} broadcast(r", n, "), dimensions={0}", md,
                    "\n");
    absl::StrAppend(&text, "  q", n, " = f32[64,128]{1,0} divide(e", n, ", b", n, ")", md, "\n");
    absl::StrAppend(&text, "  t", n, " = f32[128,64]{1,0} transpose(q", n, "), dimensions={1,0}", md,
                    "\n");
    absl::StrAppend(&text, "  s", n, " = f32[64,128]{1,0} reshape(t", n, ")", md, "\n");
    absl::StrAppend(&text, "  c", n, " = pred[64,128]{1,0} compare(s", n, ", d", n,
                    "), direction=GT", md, "\n");
    absl::StrAppend(&text, "  m", n, " = f32[64,128]{1,0} select(c", n, ", s", n, ", d", n, ")", md,
                    "\n");
    prev = absl::StrCat("m", n);
    emitted += 9;
  }
  absl::StrAppend(&text, "  ROOT out = f32[64,128]{1,0} add(", prev, ", x)\n}\n");
  return text;
}

const std::string& ModuleText() {
  static const std::string* text = new std::string(MakeModuleText(100000));
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
