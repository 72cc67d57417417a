// `perfsim predict --hlo FILE` (predict_hlo.h).
#include "cli/predict_hlo.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cli_util.h"
#include "cli/step_flags.h"
#include "fmt/format.h"
#include "sim/hw/chip_registry.h"
#include "sim/report/predict_report.h"
#include "sim/util/file_io.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// True when every matrix op of the module (dot, convolution, ragged-dot) reads f32 operands.
bool AllMatrixOpsF32(const Module& module) {
  bool any = false;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const Opcode op = instruction->opcode();
      if (op != Opcode::kDot && op != Opcode::kConvolution && op != Opcode::kRaggedDot) continue;
      any = true;
      for (const Instruction* operand : instruction->operands()) {
        if (operand->shape().IsArray() && operand->shape().element_type() != PrimitiveType::kF32 &&
            operand->shape().element_type() != PrimitiveType::kS32) {
          return false;
        }
      }
    }
  }
  return any;
}

// The scenario line of an --hlo prediction, in place of the MoE one.
std::string HloScenarioLine(const Prediction& p, const std::string& module, bool fused,
                            int64_t routed_ops, const RoutingSpec& routing) {
  // The routing only where it timed something (a module that says what its sizes hold).
  const std::string used =
      routed_ops > 0 ? absl::StrCat(", routing ", RoutingSpecToString(routing)) : "";
  return fmt::format("module {} (HLO, {}), {} {} ({} devices){}", module,
                     fused ? "unfused: loop fusion applied" : "compiled", p.chip, p.mesh,
                     p.num_devices, used);
}

}  // namespace

std::string HloPhaseOf(absl::string_view op_name) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : op_name) {
    if (c == '(') ++depth;
    if (c == ')') depth = std::max(0, depth - 1);
    if (c == '/' && depth == 0) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  if (op_name.empty() || parts.size() < 2) return "other";
  parts.pop_back();  // the primitive
  if (parts.size() >= 2 && absl::StartsWith(parts[0], "jit(")) return parts[1];
  return parts[0];
}

HloPhases HloPhasesOf(const PreparedModule& prepared) {
  HloPhases phases;
  phases.of.reserve(prepared.num_ops());
  phases.stage.reserve(prepared.num_ops());
  std::map<std::string, int32_t> index;
  for (int64_t i = 0; i < prepared.num_ops(); ++i) {
    std::string phase = HloPhaseOf(prepared.op(i).op_name);
    auto [it, inserted] = index.try_emplace(phase, phases.count());
    if (inserted) phases.names.push_back(phase);
    phases.of.push_back(it->second);
    phases.stage.push_back(std::move(phase));
  }
  return phases;
}

absl::StatusOr<HloSimulation> SimulateHlo(const Module& module, const Chip& chip,
                                          const Topology& topology, const RoutingSpec& routing) {
  PERFSIM_ASSIGN_OR_RETURN(PreparedModule prepared, PrepareModule(module, chip, topology));
  HloSimulation s{.phases = HloPhasesOf(prepared)};
  PERFSIM_ASSIGN_OR_RETURN(s.timeline, Simulate(prepared, {.routing = routing,
                                                           .subtotal_of = &s.phases.of,
                                                           .num_subtotals = s.phases.count()}));
  return s;
}

absl::StatusOr<Prediction> PredictionFromTimeline(const Module& module, Timeline t,
                                                  const HloPhases& phases, const Chip& chip,
                                                  const Topology& topology) {
  // A Prediction holds a MoE scenario (PredictOptions::spec has no empty state): the embedded
  // default stands in, and the reports' scenario is replaced by the module's (RunPredictHlo).
  PERFSIM_ASSIGN_OR_RETURN(PredictOptions options, DefaultPredictOptions());
  Prediction p{.options = std::move(options)};
  p.options.hw = chip.name();
  p.options.mesh = topology.slice_shape();
  p.options.spec.backend = "hlo";
  p.chip = chip.name();
  p.mesh = topology.slice_shape();
  p.num_devices = t.num_devices;
  const double flops = t.flops;
  const double parameter_bytes = static_cast<double>(t.parameter_bytes);
  const double peak_buffer_bytes = static_cast<double>(t.peak_buffer_bytes);
  ReportTimeline(std::move(t), phases.names, phases.of, phases.stage, p);

  const int64_t devices_per_chip =
      std::max<int64_t>(1, topology.num_devices() / std::max<int64_t>(1, topology.num_chips()));
  p.model_flops_per_device = flops;
  p.peak_flops_per_device =
      chip.PeakMatmulFlopsPerSecond(AllMatrixOpsF32(module) ? MatmulDtype::kF32
                                                            : MatmulDtype::kBf16) /
      static_cast<double>(devices_per_chip);
  if (p.step_seconds > 0 && p.peak_flops_per_device > 0) {
    p.mfu = p.model_flops_per_device / (p.step_seconds * p.peak_flops_per_device);
  }
  MemoryUse& m = p.memory;
  m.parameters = parameter_bytes;
  m.activations = peak_buffer_bytes;
  m.total = m.parameters + m.activations;
  m.capacity =
      static_cast<double>(chip.hbm_capacity_bytes()) / static_cast<double>(devices_per_chip);
  m.fits = m.total <= m.capacity;
  return p;
}

int RunPredictHlo(const ParsedFlags& flags, CliIo& io) {
  // Flags that describe perfsim's own MoE lowering have no meaning for a given module.
  std::vector<std::string> refused;
  for (const FlagSpec& spec : StepFlagSpecs()) {
    if (flags.Has(spec.name)) refused.push_back("--" + spec.name);
  }
  if (flags.Has("adam")) refused.push_back("--adam");
  if (!refused.empty()) {
    return ReportStatus(
        absl::InvalidArgumentError(absl::StrCat(
            "--hlo: expected only --hw, --mesh, --routing, --format, --timeline, --trace and "
            "--trace-devices with a module (the others describe perfsim's own lowering); got ",
            absl::StrJoin(refused, ", "))),
        io);
  }
  // predict's spellings (sim/moe/routing.h); the module's annotations say what it fills.
  absl::StatusOr<RoutingSpec> routing = ParseRoutingSpec(flags.Get("routing", "uniform"));
  if (!routing.ok()) {
    // A routing file's own errors name the file, not the flag.
    const bool named = absl::StartsWith(routing.status().message(), "--routing");
    return ReportStatus(
        named ? routing.status()
              : Annotate(routing.status(), absl::StrCat("--routing ", flags.Get("routing"))),
        io);
  }
  if (absl::Status s = ExpectNoPositional(flags); !s.ok()) return ReportStatus(s, io);
  absl::StatusOr<std::string> format = TableOrJsonFormat(flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  if (!flags.Has("hw")) {
    return ReportStatus(absl::InvalidArgumentError(
                            "--hw: expected a chip name (see 'perfsim hw list'); got none"),
                        io);
  }
  if (flags.Has("trace-devices") && !flags.Has("trace")) {
    return ReportStatus(
        absl::InvalidArgumentError("--trace-devices: expected --trace OUT.json too; got none"),
        io);
  }
  if (flags.Has("trace")) {
    if (absl::Status s = CheckWritablePath(flags.Get("trace")); !s.ok()) {
      return ReportStatus(Annotate(s, "--trace"), io);
    }
  }
  absl::StatusOr<Chip> chip = ResolveChip(flags.Get("hw"));
  if (!chip.ok()) return ReportStatus(chip.status(), io);
  const std::string path = flags.Get("hlo");
  absl::StatusOr<std::unique_ptr<Module>> module = LoadVerifiedModule(path, io.in);
  if (!module.ok()) return ReportStatus(module.status(), io);
  WarnIfLoweredForAnotherPlatform(**module, *chip, InputName(path), io.err);
  // "file:line:col: " when the message starts with the instruction's location.
  auto located = [&](const absl::Status& status) {
    const std::string message(status.message());
    const bool at = !message.empty() && absl::ascii_isdigit(message[0]);
    return absl::Status(status.code(), absl::StrCat(InputName(path), at ? ":" : ": ", message));
  };
  absl::StatusOr<Topology> topology = TopologyForModule(**module, *chip, flags.Get("mesh"));
  if (!topology.ok()) return ReportStatus(topology.status(), io);
  absl::StatusOr<HloSimulation> simulated = SimulateHlo(**module, *chip, *topology, *routing);
  if (!simulated.ok()) return ReportStatus(located(simulated.status()), io);
  const HloPhases& phases = simulated->phases;
  Timeline* timeline = &simulated->timeline;
  // What the report reads of the timeline after the Prediction has taken it.
  const std::string module_name = timeline->module;
  const bool fused = timeline->fused;
  const int64_t routed_ops = timeline->routed_ops;
  const RoutingSpec used_routing = timeline->routing;
  const std::vector<std::string> untimed = timeline->untimed;
  absl::StatusOr<Prediction> prediction =
      PredictionFromTimeline(**module, std::move(*timeline), phases, *chip, *topology);
  if (!prediction.ok()) return ReportStatus(prediction.status(), io);
  const Prediction& p = *prediction;
  if (flags.Has("trace")) {
    TraceDevices devices;
    if (flags.Has("trace-devices")) {
      absl::StatusOr<TraceDevices> parsed =
          ParseTraceDevices(flags.Get("trace-devices"), p.num_devices);
      if (!parsed.ok()) return ReportStatus(parsed.status(), io);
      devices = *parsed;
    }
    if (absl::Status s = WriteFileAtomically(flags.Get("trace"), PredictionTrace(p, devices));
        !s.ok()) {
      return ReportStatus(Annotate(s, "--trace"), io);
    }
  }
  if (*format == "json") {
    report::PredictReport r = PredictionReport(p);
    report::PredictScenario& scenario = *r.mutable_scenario();
    scenario.Clear();
    scenario.set_model(module_name);
    scenario.set_backend("hlo");
    scenario.set_hw(p.chip);
    scenario.set_mesh(p.mesh);
    scenario.set_devices(static_cast<double>(p.num_devices));
    if (routed_ops > 0) scenario.set_routing(RoutingSpecToString(used_routing));
    io.out << ReportJson(r);
    return kExitOk;
  }
  // The timeline table with the module's scenario line in place of the MoE one.
  std::string table = FormatPredictionTable(p);
  table = absl::StrCat(HloScenarioLine(p, module_name, fused, routed_ops, used_routing), table.substr(table.find('\n')));
  io.out << table;
  if (!untimed.empty()) {
    const size_t shown = std::min<size_t>(untimed.size(), 10);
    io.out << fmt::format(
        "note: {} instruction(s) not fully timed (custom-calls perfsim does not model, loops of "
        "unknown trip count): {}{}; their times are lower bounds ('*')\n",
        untimed.size(),
        absl::StrJoin(untimed.begin(), untimed.begin() + shown, ", "),
        shown < untimed.size() ? ", ..." : "");
  }
  return kExitOk;
}

}  // namespace perfsim
