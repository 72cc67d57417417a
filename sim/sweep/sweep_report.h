// Rendering a sweep: the ranked table, JSON, and the CSV of every evaluated point.
//
//   SweepSummary s = Summarize(results, rank_by, e.num_points(), interrupted);
//   std::cout << FormatSweepTable(e, results, s, {.top = 10, .rank_by = rank_by});
//   WriteFile("points.csv", SweepCsv(e, results, s));
//
// Table: the space in one line, counts (feasible and each infeasible reason with an example),
// the top N plans (step time, tokens/s/chip, MFU, HBM per device, exposed communication, the
// plan, per-phase busy time on the slowest device, and why each beats the next), and the
// Pareto front of the metric against HBM per device.
// JSON: report.SweepReport (proto/report.proto documents every field): {"space": {...},
// "points", "evaluated", "feasible", "interrupted", "infeasible": {reason: {"count",
// "example_point", "example"}}, "rank_by", "top": [...], "pareto": [...]}.
// CSV (RFC 4180 quoting): index, status, reason, plan columns, the figures (empty when the
// point has none), on_pareto, rank (empty when not feasible), message.
// Every figure is printed from the same doubles whether they came from one run or from merged
// shards, so the outputs are identical byte for byte.
#ifndef PERFSIM_SIM_SWEEP_SWEEP_REPORT_H_
#define PERFSIM_SIM_SWEEP_SWEEP_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/report.pb.h"
#include "sim/sweep/evaluator.h"
#include "sim/sweep/ranking.h"
#include "sim/sweep/space.h"

namespace perfsim {

struct SweepReportOptions {
  int64_t top = 10;
  RankBy rank_by = RankBy::kStepTime;
  // "shard 1/4" for a shard's own report; empty for a whole space.
  std::string scope;
};

std::string FormatSweepTable(const SweepEnumeration& e, const std::vector<PointResult>& results,
                             const SweepSummary& summary, const SweepReportOptions& options);
std::string SweepJson(const SweepEnumeration& e, const std::vector<PointResult>& results,
                      const SweepSummary& summary, const SweepReportOptions& options);
// The report SweepJson prints.
report::SweepReport SweepReportProto(const SweepEnumeration& e,
                                     const std::vector<PointResult>& results,
                                     const SweepSummary& summary,
                                     const SweepReportOptions& options);
std::string SweepCsv(const SweepEnumeration& e, const std::vector<PointResult>& results,
                     const SweepSummary& summary);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_SWEEP_REPORT_H_
