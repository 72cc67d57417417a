// FormatPredictionSummary (predict_summary.h): the step time first, then what limits it.
#include "sim/report/predict_summary.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "sim/hw/chip_registry.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/routing.h"
#include "sim/predict/choose_scenario.h"
#include "sim/report/predict_report.h"

namespace perfsim {
namespace {

// A finding must stand for at least this share of the step to be reported.
constexpr double kMinSavingShare = 0.02;
constexpr double kMinExposedShare = 0.10;
constexpr double kMinMemoryBoundShare = 0.5;

std::string Ms(double seconds) { return fmt::format("{:.2f} ms", seconds * 1e3); }

std::string Bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

std::string Percent(double part, double whole) {
  return fmt::format("{:.0f}%", whole > 0 ? 100 * part / whole : 0);
}

// The scenario in one line, in the flags that reproduce it.
// Predicts `o` without per-op detail; nullopt when the scenario is refused.
std::optional<Alternative> Repredict(const PredictOptions& o, Alternative::Kind kind,
                                     std::string flags, PredictCache& cache) {
  absl::StatusOr<PreparedStep> step = PrepareStep(o);
  if (!step.ok()) return std::nullopt;
  absl::StatusOr<Prediction> p =
      PredictWithRouting(*step, o.routing, {.detail = false, .cache = &cache});
  if (!p.ok()) return std::nullopt;
  return Alternative{.kind = kind,
                     .flags = std::move(flags),
                     .step_seconds = p->step_seconds,
                     .memory = p->memory};
}

struct Finding {
  double seconds = 0;  // the time it stands for (ranking)
  std::string sentence;
};

// ep_ragged_a2a without a buffer factor: MaxText's receive buffer holds the most rows any
// routing can send one shard, R = min(EP·T_l·K, T_l·E) (sim/lowering/ep_dispatch.h); a shard
// receives T_l·K rows on average.
std::string ReceiveBufferPadding(const StepSpec& s) {
  const int64_t t_l = s.tokens_per_device(), k = s.model.experts_per_token();
  const int64_t rows = std::min(s.parallelism.ep * t_l * k, t_l * s.model.num_experts());
  const int64_t average = t_l * k;
  return fmt::format(
      "the receive buffer is sized for the worst case ({} rows; a shard receives {} on average): "
      "{} of its rows are padding",
      rows, average, Percent(static_cast<double>(rows - average), static_cast<double>(rows)));
}

std::string AlternativeSentence(const Prediction& p, const Alternative& a) {
  const double saving = p.step_seconds - a.step_seconds;
  const std::string gain = fmt::format("{} would save ~{}, {} of the step{}", a.flags, Ms(saving),
                                       Percent(saving, p.step_seconds),
                                       a.memory.fits ? "" : " (its HBM plan does not fit)");
  switch (a.kind) {
    case Alternative::Kind::kRaggedBufferFactor:
      return absl::StrCat(ReceiveBufferPadding(p.options.spec), "; ", gain,
                          " (rows beyond T_l·K per shard are then dropped)");
    case Alternative::Kind::kCapacityFactor:
      return absl::StrCat("capacity_einsum pads every expert to capacity factor ",
                          fmt::format("{:g}", p.options.spec.knobs.capacity_factor), "; ", gain,
                          " (tokens beyond capacity are then dropped)");
    case Alternative::Kind::kBackend:
      return absl::StrCat("another lowering of the same layer is faster: ", gain,
                          a.flags == "--backend capacity_einsum"
                              ? fmt::format(" (it drops tokens beyond capacity factor {:g})",
                                            p.options.spec.knobs.capacity_factor)
                              : "");
    case Alternative::Kind::kSmallerBatch:
      return "";  // reported with the HBM finding
  }
  return "";
}

std::vector<Finding> Findings(const Prediction& p, const std::vector<Alternative>& alternatives) {
  std::vector<Finding> findings;
  const double step = p.step_seconds;
  // Over capacity comes first whatever its time: the step cannot run.
  if (!p.memory.fits) {
    std::string sentence = fmt::format(
        "HBM is over capacity: the plan needs {} of {} per device (activations and buffers {})",
        Bytes(p.memory.total), Bytes(p.memory.capacity), Bytes(p.memory.activations));
    for (const Alternative& a : alternatives) {
      if (a.kind == Alternative::Kind::kSmallerBatch) {
        absl::StrAppend(&sentence, fmt::format("; {} fits ({})", a.flags, Bytes(a.memory.total)));
      }
    }
    findings.push_back({step * 10, sentence});
  }
  // The best measured one-knob change of each kind.
  std::map<Alternative::Kind, const Alternative*> best;
  for (const Alternative& a : alternatives) {
    if (a.kind == Alternative::Kind::kSmallerBatch) continue;
    if (!a.memory.fits && p.memory.fits) continue;
    const Alternative*& b = best[a.kind];
    if (b == nullptr || a.step_seconds < b->step_seconds) b = &a;
  }
  for (const auto& [kind, a] : best) {
    const double saving = step - a->step_seconds;
    if (saving >= kMinSavingShare * step) findings.push_back({saving, AlternativeSentence(p, *a)});
  }
  // Exposed communication, with the phase that communicates most.
  if (p.exposed_communication >= kMinExposedShare * step) {
    std::map<std::string, double> comm_by_phase;
    for (const OpRow& r : p.ops) {
      if (r.stream == "comm") comm_by_phase[r.phase] += r.seconds;
    }
    std::string where;
    double most = 0;
    for (const auto& [phase, seconds] : comm_by_phase) {
      if (seconds > most) most = seconds, where = phase;
    }
    std::string sentence =
        fmt::format("communication is exposed for {} ({} of the step): compute does not hide it",
                    Ms(p.exposed_communication), Percent(p.exposed_communication, step));
    if (!where.empty()) {
      absl::StrAppend(&sentence,
                      fmt::format("; the {} phase communicates most ({} busy)", where, Ms(most)));
    }
    findings.push_back({p.exposed_communication, sentence});
  }
  // Memory-bound expert matmuls: too few rows per expert to reach the chip's matrix peak.
  double experts = 0, memory_bound = 0;
  for (const OpRow& r : p.ops) {
    if (r.stream != "compute" || !absl::StartsWith(r.stage, "experts")) continue;
    experts += r.seconds;
    if (r.bound == Bound::kMemory) memory_bound += r.seconds;
  }
  if (experts > 0 && memory_bound >= kMinMemoryBoundShare * experts &&
      memory_bound >= kMinSavingShare * step) {
    double flops = 0, bytes = 0;
    for (const OpRow& r : p.ops) {
      if (r.stream != "compute" || !absl::StartsWith(r.stage, "experts")) continue;
      if (r.bound == Bound::kMemory) flops += r.flops, bytes += r.bytes;
    }
    const StepSpec& s = p.options.spec;
    // Rows each local expert receives on average: the EP group's tokens' picks of it.
    const double rows_per_expert = static_cast<double>(s.tokens_per_device()) *
                                   static_cast<double>(s.model.experts_per_token()) *
                                   static_cast<double>(s.parallelism.ep) /
                                   static_cast<double>(s.model.num_experts());
    std::string sentence = fmt::format(
        "{} of the expert compute ({}) is bound by HBM, not the matrix units: those ops do {:.0f} "
        "FLOP per HBM byte",
        Percent(memory_bound, experts), Ms(memory_bound), bytes > 0 ? flops / bytes : 0);
    if (absl::StatusOr<Chip> chip = ResolveChip(p.options.hw); chip.ok()) {
      absl::StrAppend(&sentence, fmt::format(" (the chip's bf16 ridge is {:.0f})",
                                             chip->RidgeBf16FlopsPerByte()));
    }
    absl::StrAppend(&sentence,
                    fmt::format(", with about {:.0f} rows per expert per device", rows_per_expert));
    findings.push_back({memory_bound, sentence});
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.seconds > b.seconds; });
  return findings;
}

}  // namespace

int64_t ChipsOfMesh(const std::string& mesh) {
  int64_t chips = 1;
  for (absl::string_view part : absl::StrSplit(mesh, 'x')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1) return 0;
    chips *= n;
  }
  return chips;
}

std::vector<Alternative> PredictAlternatives(const Prediction& p) {
  std::vector<Alternative> out;
  PredictCache cache;
  const PredictOptions& base = p.options;
  PredictOptions o = base;
  o.mesh = p.mesh;
  auto add = [&](const PredictOptions& changed, Alternative::Kind kind, std::string flags) {
    if (std::optional<Alternative> a = Repredict(changed, kind, std::move(flags), cache)) {
      out.push_back(*std::move(a));
    }
  };
  const StepSpec& s = base.spec;
  if (s.backend == "ep_ragged_a2a" && !(s.knobs.ragged_buffer_factor > 0)) {
    PredictOptions c = o;
    c.spec.knobs.ragged_buffer_factor = 1;
    add(c, Alternative::Kind::kRaggedBufferFactor, "--ragged-buffer-factor 1");
  }
  if (s.backend == "capacity_einsum" && s.knobs.capacity_factor > 1) {
    PredictOptions c = o;
    c.spec.knobs.capacity_factor = 1;
    add(c, Alternative::Kind::kCapacityFactor, "--capacity-factor 1");
  }
  for (const MoeBackend* backend : Backends()) {
    if (backend->name() == s.backend) continue;
    PredictOptions c = o;
    c.spec.backend = std::string(backend->name());
    add(c, Alternative::Kind::kBackend, absl::StrCat("--backend ", backend->name()));
  }
  if (!p.memory.fits) {
    // The largest halved batch whose tokens still split over the token shards and that fits.
    for (int64_t batch = s.batch / 2; batch >= 1; batch /= 2) {
      PredictOptions c = o;
      c.spec.batch = batch;
      if (c.spec.tokens() % c.spec.token_shards() != 0) break;
      std::optional<Alternative> a =
          Repredict(c, Alternative::Kind::kSmallerBatch, absl::StrCat("--batch ", batch), cache);
      if (!a.has_value()) break;
      if (a->memory.fits) {
        out.push_back(*std::move(a));
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> StepLimiters(const Prediction& p,
                                      const std::vector<Alternative>& alternatives) {
  std::vector<std::string> sentences;
  for (const Finding& f : Findings(p, alternatives)) {
    if (sentences.size() == 2) break;
    sentences.push_back(f.sentence);
  }
  if (sentences.empty()) {
    sentences.push_back(fmt::format(
        "compute: the compute stream is busy {} of the step and exposed communication is {}; no "
        "single knob tried (buffer factor, capacity factor, backend) saves {} of it",
        Percent(p.compute_busy, p.step_seconds), Percent(p.exposed_communication, p.step_seconds),
        Percent(kMinSavingShare, 1)));
  }
  return sentences;
}

std::string FormatPredictionSummary(const Prediction& p,
                                    const std::vector<Alternative>& alternatives, int top_ops) {
  const StepSpec& s = p.options.spec;
  std::string out = absl::StrCat(PredictionScenarioLine(p, ScenarioLineStyle::kSummary), "\n\n");
  absl::StrAppend(&out, fmt::format("step time              {}\n", Ms(p.step_seconds)));
  const int64_t chips = ChipsOfMesh(p.mesh);
  if (chips > 0 && p.step_seconds > 0) {
    absl::StrAppend(
        &out,
        fmt::format("tokens/s per chip      {:.0f} ({} tokens / step time / {} chip{})\n",
                    static_cast<double>(s.tokens()) / p.step_seconds / static_cast<double>(chips),
                    s.tokens(), chips, chips == 1 ? "" : "s"));
  }
  if (p.peak_flops_per_device > 0) {
    absl::StrAppend(&out,
                    fmt::format("MFU                    {:.1f}% (peak {:.1f} TFLOP/s per device)\n",
                                100 * p.mfu, p.peak_flops_per_device / 1e12));
  } else {
    absl::StrAppend(&out, "MFU                    n/a (no matrix peak for the model's dtype)\n");
  }
  absl::StrAppend(&out, fmt::format("exposed communication  {} ({} of the step; {} busy)\n",
                                    Ms(p.exposed_communication),
                                    Percent(p.exposed_communication, p.step_seconds),
                                    Ms(p.communication_busy)));
  const MemoryUse& m = p.memory;
  absl::StrAppend(&out, fmt::format("HBM per device         {} of {} ({})\n", Bytes(m.total),
                                    Bytes(m.capacity), m.fits ? "fits" : "OVER CAPACITY"));

  absl::StrAppend(&out, "\nper phase (busy time on the slowest device, both streams)\n");
  for (const PhaseTotal& t : p.phases) {
    absl::StrAppend(&out, fmt::format("  {:<10} {:>11} {:>5} {:>12.1f} GFLOP {:>10.0f} MB\n",
                                      t.phase, Ms(t.seconds), Percent(t.seconds, p.step_seconds),
                                      t.flops / 1e9, t.bytes / 1e6));
  }

  std::vector<const OpRow*> costly;
  for (const OpRow& r : p.ops) costly.push_back(&r);
  std::stable_sort(costly.begin(), costly.end(),
                   [](const OpRow* a, const OpRow* b) { return a->seconds > b->seconds; });
  if (costly.size() > static_cast<size_t>(top_ops)) costly.resize(top_ops);
  if (!costly.empty()) {
    absl::StrAppend(&out,
                    fmt::format("\ncostliest ops on device {} (the slowest)\n", p.slowest_device));
    for (const OpRow* r : costly) {
      absl::StrAppend(
          &out,
          fmt::format("  {:>11}{:1} {:>4}  {:<13} {:<7} {:<12} {:<18} {}\n", Ms(r->seconds),
                      r->lower_bound ? "*" : "", Percent(r->seconds, p.step_seconds),
                      std::string(BoundName(r->bound)), r->stream, r->stage, r->opcode, r->name));
    }
  }

  absl::StrAppend(&out, "\nwhat limits the step\n");
  for (const std::string& sentence : StepLimiters(p, alternatives)) {
    absl::StrAppend(&out, "  - ", sentence, "\n");
  }
  if (!p.unknown_rates.empty()) {
    absl::StrAppend(&out, "note: the chip description lacks ");
    for (size_t i = 0; i < p.unknown_rates.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", p.unknown_rates[i]);
    }
    absl::StrAppend(&out, "; work needing them is not timed ('*': lower bounds)\n");
  }
  absl::StrAppend(&out,
                  "\nthe full timeline of the slowest device: --timeline; every number: "
                  "--format=json\n");
  return out;
}

}  // namespace perfsim
