// `perfsim predict --hlo` speed (issue 12: under 1 s for the 100,000-instruction module).
//
//   BM_SimulateModule100k  SimulateModule of the generated 100,000-instruction module
//                          (generated_module.h; unfused, so loop fusion runs) on tpu_v5p:
//                          costs, fusion, schedule, HBM liveness.
//   BM_PredictHlo100k      the same plus what `predict --hlo --format=json` does after parsing:
//                          PredictionFromTimeline and the JSON report.
//   BM_Report100k/0,1,2     the report stages alone: PredictionFromTimeline; + the table;
//                          + the JSON.
//   BM_PredictHloCommand100k  the whole command on the module as a file: read, parse, verify,
//                          simulate, report, JSON; BM_ParseVerifyOnly100k: `hlo check` of it.
//   BM_PredictHloMoeEpGrad the committed 8-device expert-parallel MoE gradient (XLA:CPU
//                          compiled, 1097 instructions, ragged all-to-alls) on tpu_v7x.
// Modules are parsed once, outside the timed loop (parse_verify_bench times parsing).
#include <benchmark/benchmark.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/generated_module.h"
#include "cli/cli.h"
#include "cli/predict_hlo.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/hlo_parser.h"
#include "sim/report/predict_report.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

const Module* Generated() {
  static const Module* module = [] {
    absl::StatusOr<std::unique_ptr<Module>> m =
        ParseHloModule(MakeGeneratedModuleText(100000), "bench");
    return m.ok() ? m->release() : nullptr;
  }();
  return module;
}

const Module* MoeEpGrad() {
  static const Module* module =
      ParseCommittedModule("tests/testdata/hlo/jax/moe_ep_ragged_a2a_grad.compiled.hlo");
  return module;
}

void Run(benchmark::State& state, const Module* module, const std::string& hw, bool report) {
  if (module == nullptr) {
    state.SkipWithError("cannot parse the module");
    return;
  }
  const absl::StatusOr<Chip> chip = ResolveChip(hw);
  if (!chip.ok()) {
    state.SkipWithError(std::string(chip.status().message()).c_str());
    return;
  }
  absl::StatusOr<Topology> topology = TopologyForModule(*module, *chip, "");
  if (!topology.ok()) {
    state.SkipWithError(std::string(topology.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    if (!report) {
      absl::StatusOr<Timeline> t = SimulateModule(*module, *chip, *topology);
      if (!t.ok()) {
        state.SkipWithError(std::string(t.status().message()).c_str());
        return;
      }
      benchmark::DoNotOptimize(t->step_seconds);
      continue;
    }
    // What `predict --hlo --format=json` does after parsing.
    absl::StatusOr<HloSimulation> simulated = SimulateHlo(*module, *chip, *topology, {});
    if (!simulated.ok()) {
      state.SkipWithError(std::string(simulated.status().message()).c_str());
      return;
    }
    absl::StatusOr<Prediction> p = PredictionFromTimeline(
        *module, std::move(simulated->timeline), simulated->phases, *chip, *topology);
    if (!p.ok()) {
      state.SkipWithError(std::string(p.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(PredictionJson(*p));
  }
  state.counters["instructions"] = static_cast<double>(module->instruction_count());
}

void BM_SimulateModule100k(benchmark::State& state) { Run(state, Generated(), "tpu_v5p", false); }
BENCHMARK(BM_SimulateModule100k)->Unit(benchmark::kMillisecond);

void BM_PredictHlo100k(benchmark::State& state) { Run(state, Generated(), "tpu_v5p", true); }
BENCHMARK(BM_PredictHlo100k)->Unit(benchmark::kMillisecond);

// The report stages alone on the 100k module's timeline (simulated once, outside the loop):
// 0 = PredictionFromTimeline, 1 = + the table, 2 = + the JSON.
void BM_Report100k(benchmark::State& state) {
  const Module* module = Generated();
  const absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  absl::StatusOr<Topology> topology = TopologyForModule(*module, *chip, "");
  absl::StatusOr<HloSimulation> simulated = SimulateHlo(*module, *chip, *topology, {});
  if (!simulated.ok()) {
    state.SkipWithError(std::string(simulated.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    // The report takes its timeline: a copy per iteration, as predict --hlo has one.
    state.PauseTiming();
    Timeline copy = simulated->timeline;
    state.ResumeTiming();
    absl::StatusOr<Prediction> p =
        PredictionFromTimeline(*module, std::move(copy), simulated->phases, *chip, *topology);
    if (state.range(0) == 1) benchmark::DoNotOptimize(FormatPredictionTable(*p));
    if (state.range(0) == 2) benchmark::DoNotOptimize(PredictionJson(*p));
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_Report100k)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// The whole command, `perfsim predict --hlo FILE --hw tpu_v5p --format=json`, on the generated
// module written to a file once: read, parse, verify, simulate, report, print (into a string).
// Reference in the same run: BM_ParseVerifyOnly100k, what any command reading the file pays.
std::string GeneratedFile() {
  static const std::string path = [] {
    const std::string file = "/tmp/perfsim_bench_generated_100k.hlo";
    std::ofstream(file) << MakeGeneratedModuleText(100000);
    return file;
  }();
  return path;
}

// Runs `perfsim ARGS` once per iteration, its output into a string.
void RunCommand(benchmark::State& state, const std::vector<std::string>& args) {
  for (auto _ : state) {
    std::istringstream in;
    std::ostringstream out, err;
    if (RunPerfsim(args, in, out, err) != 0) {
      state.SkipWithError(err.str().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.str().size());
  }
}

void BM_PredictHloCommand100k(benchmark::State& state) {
  RunCommand(state, {"predict", "--hlo", GeneratedFile(), "--hw", "tpu_v5p", "--format=json"});
}
BENCHMARK(BM_PredictHloCommand100k)->Unit(benchmark::kMillisecond);

void BM_ParseVerifyOnly100k(benchmark::State& state) {
  RunCommand(state, {"hlo", "check", GeneratedFile()});
}
BENCHMARK(BM_ParseVerifyOnly100k)->Unit(benchmark::kMillisecond);

void BM_PredictHloMoeEpGrad(benchmark::State& state) { Run(state, MoeEpGrad(), "tpu_v7x", true); }
BENCHMARK(BM_PredictHloMoeEpGrad)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perfsim

BENCHMARK_MAIN();
