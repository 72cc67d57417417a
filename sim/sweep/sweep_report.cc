#include "sim/sweep/sweep_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Full precision for the CSV; "null" for inf and nan.
std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.17g", v);
}

// Where a reason's count goes in the JSON (report.SweepInfeasibleByReason); null for kNone,
// which is no reason.
report::SweepInfeasible* InfeasibleEntry(Infeasibility reason,
                                         report::SweepInfeasibleByReason* by_reason) {
  switch (reason) {
    case Infeasibility::kNone:
      return nullptr;
    case Infeasibility::kDivisibility:
      return by_reason->mutable_divisibility();
    case Infeasibility::kBackendRefusal:
      return by_reason->mutable_backend_refusal();
    case Infeasibility::kTilingMisfit:
      return by_reason->mutable_tiling_misfit();
    case Infeasibility::kLoweringFailed:
      return by_reason->mutable_lowering_failed();
    case Infeasibility::kHbmOverCapacity:
      return by_reason->mutable_hbm_over_capacity();
    case Infeasibility::kError:
      return by_reason->mutable_error();
  }
  return nullptr;
}

// The phase seconds in kPredictPhaseNames order, as report.SweepPhaseSeconds.
void SetPhaseSeconds(const PointResult& r, report::SweepPhaseSeconds* out) {
  static_assert(kNumPredictPhases == 8, "one SweepPhaseSeconds field per kPredictPhaseNames");
  out->set_router(r.phase_seconds[0]);
  out->set_permute(r.phase_seconds[1]);
  out->set_dispatch(r.phase_seconds[2]);
  out->set_experts(r.phase_seconds[3]);
  out->set_combine(r.phase_seconds[4]);
  out->set_shared(r.phase_seconds[5]);
  out->set_backward(r.phase_seconds[6]);
  out->set_other(r.phase_seconds[7]);
}

// The rank metric of a Pareto point under its RankByName key.
void SetRankMetric(RankBy rank_by, double value, report::SweepParetoPoint* point) {
  switch (rank_by) {
    case RankBy::kStepTime:
      point->set_step(value);
      return;
    case RankBy::kTokensPerChip:
      point->set_tokens(value);
      return;
    case RankBy::kMfu:
      point->set_mfu(value);
      return;
  }
}

std::string Csv(absl::string_view s) {
  if (s.find_first_of(",\"\n") == absl::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Ms(double s) { return absl::StrFormat("%.3f", s * 1e3); }

std::string Title(const SweepEnumeration& e, const SweepReportOptions& o) {
  const SweepSpace& s = e.space();
  return absl::StrCat("sweep: ", e.model().name(), " ", PhaseName(s.phase), ", seq ", s.seq,
                      ", on ", e.mesh(), " ", e.chip().name(), " (", e.num_chips(), " chips, ",
                      e.num_devices(), " devices); space ", e.fingerprint(),
                      o.scope.empty() ? "" : absl::StrCat(", ", o.scope));
}

std::string Plan(const SweepEnumeration& e, const PointResult& r) {
  const SweepScenario sc = e.ScenarioAt(r.index);
  const Parallelism& p = sc.parallelism;
  std::string plan = absl::StrCat("dp=", p.dp, " fsdp=", p.fsdp, " ep=", p.ep, " tp=", p.tp, " ",
                                  sc.backend, " b=", sc.batch_per_device);
  if (!r.tilings.empty()) {
    absl::StrAppend(&plan, " [", r.tilings, sc.tiling->search ? ", searched" : "", "]");
  }
  absl::StrAppend(&plan, " ", e.space().routings[sc.routing]);
  return plan;
}

std::string PhasesLine(const PointResult& r) {
  std::vector<std::string> parts;
  for (int p = 0; p < kNumPredictPhases; ++p) {
    if (r.phase_seconds[p] > 0) {
      parts.push_back(absl::StrCat(kPredictPhaseNames[p], " ", Ms(r.phase_seconds[p])));
    }
  }
  return absl::StrJoin(parts, ", ");
}

std::string Counts(const SweepSummary& s) {
  std::string out = absl::StrCat("points: ", s.total_points, ", evaluated ", s.evaluated,
                                 ", feasible ", s.by_reason[0]);
  for (int k = 1; k < kNumInfeasibilities; ++k) {
    if (s.by_reason[k] == 0) continue;
    absl::StrAppend(&out, ", ", InfeasibilityName(static_cast<Infeasibility>(k)), " ",
                    s.by_reason[k]);
  }
  return out;
}

const PointResult* FindIndex(const std::vector<PointResult>& results, int64_t index) {
  auto it = std::lower_bound(results.begin(), results.end(), index,
                             [](const PointResult& r, int64_t i) { return r.index < i; });
  return it != results.end() && it->index == index ? &*it : nullptr;
}

}  // namespace

std::string FormatSweepTable(const SweepEnumeration& e, const std::vector<PointResult>& results,
                             const SweepSummary& s, const SweepReportOptions& o) {
  std::string out = Title(e, o) + "\n";
  if (s.interrupted) {
    absl::StrAppend(&out, "INTERRUPTED after ", s.evaluated, " of ", s.total_points,
                    " points: the ranking below is of the points evaluated so far\n");
  }
  absl::StrAppend(&out, Counts(s), "\n");
  for (int k = 1; k < kNumInfeasibilities; ++k) {
    if (s.by_reason[k] == 0) continue;
    const PointResult* example = FindIndex(results, s.example[k]);
    absl::StrAppend(
        &out, absl::StrFormat("  %-18s %8d  e.g. #%d %s: %s\n",
                              InfeasibilityName(static_cast<Infeasibility>(k)), s.by_reason[k],
                              s.example[k], e.Label(e.ScenarioAt(s.example[k])),
                              example != nullptr ? example->message : ""));
  }
  const int64_t top = std::min<int64_t>(o.top, static_cast<int64_t>(s.ranked.size()));
  absl::StrAppend(&out, "\ntop ", top, " by ", RankByTitle(o.rank_by), ":\n");
  absl::StrAppend(&out, absl::StrFormat("%4s %10s %13s %6s %8s %10s  %s\n", "#", "step ms",
                                        "tokens/s/chip", "MFU", "HBM GiB", "exposed ms", "plan"));
  for (int64_t k = 0; k < top; ++k) {
    const PointResult& r = results[s.ranked[k]];
    absl::StrAppend(
        &out, absl::StrFormat("%4d %10s %13.0f %5.1f%% %8.2f %10s  %s%s\n", k + 1,
                              Ms(r.step_seconds), r.tokens_per_second_per_chip, 100 * r.mfu,
                              r.hbm_bytes / kGiB, Ms(r.exposed_communication_seconds), Plan(e, r),
                              s.on_pareto[s.ranked[k]] ? "  (pareto)" : ""));
    absl::StrAppend(&out, "       phases ms: ", PhasesLine(r), "\n");
    if (k + 1 < static_cast<int64_t>(s.ranked.size())) {
      absl::StrAppend(&out, "       why: ",
                      WhyBeatsNext(e, r, results[s.ranked[k + 1]], o.rank_by, k + 2), "\n");
    }
  }
  absl::StrAppend(&out, "\npareto front, ", RankByTitle(o.rank_by), " vs HBM per device (",
                  s.pareto.size(), " plans):\n");
  absl::StrAppend(&out, absl::StrFormat("%4s %10s %13s %8s  %s\n", "rank", "step ms",
                                        "tokens/s/chip", "HBM GiB", "plan"));
  for (size_t i : s.pareto) {
    const PointResult& r = results[i];
    const int64_t rank = std::find(s.ranked.begin(), s.ranked.end(), i) - s.ranked.begin() + 1;
    absl::StrAppend(&out,
                    absl::StrFormat("%4d %10s %13.0f %8.2f  %s\n", rank, Ms(r.step_seconds),
                                    r.tokens_per_second_per_chip, r.hbm_bytes / kGiB, Plan(e, r)));
  }
  return out;
}

report::SweepReport SweepReportProto(const SweepEnumeration& e,
                                     const std::vector<PointResult>& results,
                                     const SweepSummary& s, const SweepReportOptions& o) {
  const SweepSpace& space = e.space();
  report::SweepReport out;
  report::SweepSpaceSummary& summary = *out.mutable_space();
  summary.set_fingerprint(e.fingerprint());
  summary.set_model(e.model().name());
  summary.set_hw(e.chip().name());
  summary.set_mesh(e.mesh());
  summary.set_chips(e.num_chips());
  summary.set_devices(e.num_devices());
  summary.set_phase(std::string(PhaseName(space.phase)));
  summary.set_seq(space.seq);
  out.set_scope(o.scope);
  out.set_points(s.total_points);
  out.set_evaluated(s.evaluated);
  out.set_feasible(s.by_reason[0]);
  out.set_interrupted(s.interrupted);
  report::SweepInfeasibleByReason& infeasible = *out.mutable_infeasible();
  for (int k = 1; k < kNumInfeasibilities; ++k) {
    if (s.by_reason[k] == 0) continue;
    report::SweepInfeasible* entry =
        InfeasibleEntry(static_cast<Infeasibility>(k), &infeasible);
    const PointResult* example = FindIndex(results, s.example[k]);
    entry->set_count(s.by_reason[k]);
    entry->set_example_point(s.example[k]);
    entry->set_example(example != nullptr ? example->message : "");
  }
  out.set_rank_by(std::string(RankByName(o.rank_by)));
  const int64_t top = std::min<int64_t>(o.top, static_cast<int64_t>(s.ranked.size()));
  for (int64_t k = 0; k < top; ++k) {
    const PointResult& r = results[s.ranked[k]];
    const SweepScenario sc = e.ScenarioAt(r.index);
    const Parallelism& p = sc.parallelism;
    report::SweepRanked& ranked = *out.add_top();
    ranked.set_rank(k + 1);
    ranked.set_point(r.index);
    report::SweepPlan& plan = *ranked.mutable_plan();
    plan.set_dp(p.dp);
    plan.set_fsdp(p.fsdp);
    plan.set_ep(p.ep);
    plan.set_tp(p.tp);
    plan.set_backend(sc.backend);
    plan.set_batch_per_device(sc.batch_per_device);
    plan.set_tiling(SweepTilingLabel(*sc.tiling));
    plan.set_tilings(r.tilings);
    plan.set_routing(space.routings[sc.routing]);
    ranked.set_step_seconds(r.step_seconds);
    ranked.set_tokens_per_second_per_chip(r.tokens_per_second_per_chip);
    ranked.set_mfu(r.mfu);
    ranked.set_hbm_bytes(r.hbm_bytes);
    ranked.set_hbm_capacity_bytes(r.hbm_capacity_bytes);
    ranked.set_exposed_communication_seconds(r.exposed_communication_seconds);
    SetPhaseSeconds(r, ranked.mutable_phases());
    ranked.set_pareto(s.on_pareto[s.ranked[k]]);
    *ranked.mutable_why() =
        StringOrNull(k + 1 < static_cast<int64_t>(s.ranked.size())
                         ? WhyBeatsNext(e, r, results[s.ranked[k + 1]], o.rank_by, k + 2)
                         : "");
  }
  for (size_t i : s.pareto) {
    const PointResult& r = results[i];
    report::SweepParetoPoint& point = *out.add_pareto();
    point.set_point(r.index);
    point.set_step_seconds(r.step_seconds);
    point.set_hbm_bytes(r.hbm_bytes);
    SetRankMetric(o.rank_by, RankMetric(r, o.rank_by), &point);
  }
  return out;
}

std::string SweepJson(const SweepEnumeration& e, const std::vector<PointResult>& results,
                      const SweepSummary& s, const SweepReportOptions& o) {
  return ReportJson(SweepReportProto(e, results, s, o));
}

std::string SweepCsv(const SweepEnumeration& e, const std::vector<PointResult>& results,
                     const SweepSummary& s) {
  std::string out =
      "index,status,reason,dp,fsdp,ep,tp,backend,batch_per_device,tiling,tilings,routing,"
      "step_seconds,tokens_per_second_per_chip,mfu,hbm_bytes,hbm_capacity_bytes,"
      "exposed_communication_seconds";
  for (const char* phase : kPredictPhaseNames) absl::StrAppend(&out, ",", phase, "_seconds");
  absl::StrAppend(&out, ",on_pareto,rank,message\n");
  std::vector<int64_t> rank(results.size(), 0);
  for (size_t k = 0; k < s.ranked.size(); ++k) rank[s.ranked[k]] = static_cast<int64_t>(k) + 1;
  for (size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    const SweepScenario sc = e.ScenarioAt(r.index);
    const Parallelism& p = sc.parallelism;
    absl::StrAppend(&out, r.index, ",", r.feasible() ? "feasible" : "infeasible", ",",
                    InfeasibilityName(r.reason), ",", p.dp, ",", p.fsdp, ",", p.ep, ",", p.tp, ",",
                    sc.backend, ",", sc.batch_per_device, ",", Csv(SweepTilingLabel(*sc.tiling)),
                    ",", Csv(r.tilings), ",", Csv(e.space().routings[sc.routing]));
    const auto figure = [&](double v) { absl::StrAppend(&out, ",", r.has_metrics ? Num(v) : ""); };
    figure(r.step_seconds);
    figure(r.tokens_per_second_per_chip);
    figure(r.mfu);
    figure(r.hbm_bytes);
    figure(r.hbm_capacity_bytes);
    figure(r.exposed_communication_seconds);
    for (double v : r.phase_seconds) figure(v);
    absl::StrAppend(&out, ",", s.on_pareto[i] ? "true" : "false", ",",
                    rank[i] > 0 ? absl::StrCat(rank[i]) : "", ",", Csv(r.message), "\n");
  }
  return out;
}

}  // namespace perfsim
