#include "sim/sweep/ranking.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace perfsim {

absl::StatusOr<RankBy> ParseRankBy(absl::string_view text) {
  if (text == "step") return RankBy::kStepTime;
  if (text == "tokens") return RankBy::kTokensPerChip;
  if (text == "mfu") return RankBy::kMfu;
  return absl::InvalidArgumentError(
      absl::StrCat("--rank-by: expected step, tokens or mfu; got '", text, "'"));
}

absl::string_view RankByName(RankBy rank_by) {
  switch (rank_by) {
    case RankBy::kStepTime:
      return "step";
    case RankBy::kTokensPerChip:
      return "tokens";
    case RankBy::kMfu:
      return "mfu";
  }
  return "?";
}

absl::string_view RankByTitle(RankBy rank_by) {
  switch (rank_by) {
    case RankBy::kStepTime:
      return "step time";
    case RankBy::kTokensPerChip:
      return "tokens/s/chip";
    case RankBy::kMfu:
      return "MFU";
  }
  return "?";
}

double RankMetric(const PointResult& r, RankBy rank_by) {
  switch (rank_by) {
    case RankBy::kStepTime:
      return r.step_seconds;
    case RankBy::kTokensPerChip:
      return r.tokens_per_second_per_chip;
    case RankBy::kMfu:
      return r.mfu;
  }
  return 0;
}

namespace {

// Whether a's metric is strictly better than b's.
bool Better(double a, double b, RankBy rank_by) {
  return rank_by == RankBy::kStepTime ? a < b : a > b;
}

std::string Seconds(double s) { return absl::StrFormat("%.3f ms", s * 1e3); }

std::string MetricDifference(const PointResult& a, const PointResult& b, RankBy rank_by,
                             int64_t next_rank) {
  switch (rank_by) {
    case RankBy::kStepTime: {
      const double d = b.step_seconds - a.step_seconds;
      return absl::StrFormat("%s (%.1f%%) faster than #%d", Seconds(d),
                             b.step_seconds > 0 ? 100 * d / b.step_seconds : 0, next_rank);
    }
    case RankBy::kTokensPerChip:
      return absl::StrFormat("%.0f tokens/s/chip more than #%d",
                             a.tokens_per_second_per_chip - b.tokens_per_second_per_chip,
                             next_rank);
    case RankBy::kMfu:
      return absl::StrFormat("%.2f points of MFU more than #%d", 100 * (a.mfu - b.mfu), next_rank);
  }
  return "";
}

}  // namespace

bool RanksBefore(const PointResult& a, const PointResult& b, RankBy rank_by) {
  const double x = RankMetric(a, rank_by), y = RankMetric(b, rank_by);
  if (x != y) return Better(x, y, rank_by);
  return a.index < b.index;
}

SweepSummary Summarize(const std::vector<PointResult>& results, RankBy rank_by,
                       int64_t total_points, bool interrupted) {
  SweepSummary s;
  s.total_points = total_points;
  s.evaluated = static_cast<int64_t>(results.size());
  s.interrupted = interrupted;
  s.example.fill(-1);
  s.on_pareto.assign(results.size(), false);
  for (size_t i = 0; i < results.size(); ++i) {
    const int reason = static_cast<int>(results[i].reason);
    ++s.by_reason[reason];
    if (s.example[reason] < 0 || results[i].index < s.example[reason]) {
      s.example[reason] = results[i].index;
    }
    if (results[i].feasible()) s.ranked.push_back(i);
  }
  std::sort(s.ranked.begin(), s.ranked.end(),
            [&](size_t a, size_t b) { return RanksBefore(results[a], results[b], rank_by); });
  // Pareto: walk by (metric, HBM, index); a point is on the front when it uses less HBM than
  // every point before it, or exactly matches the last point taken.
  std::vector<size_t> by_metric = s.ranked;
  std::stable_sort(by_metric.begin(), by_metric.end(), [&](size_t a, size_t b) {
    const double x = RankMetric(results[a], rank_by), y = RankMetric(results[b], rank_by);
    if (x != y) return Better(x, y, rank_by);
    if (results[a].hbm_bytes != results[b].hbm_bytes) {
      return results[a].hbm_bytes < results[b].hbm_bytes;
    }
    return results[a].index < results[b].index;
  });
  double least_hbm = INFINITY;
  const PointResult* last = nullptr;
  for (size_t i : by_metric) {
    const PointResult& r = results[i];
    const bool same_as_last = last != nullptr &&
                              RankMetric(*last, rank_by) == RankMetric(r, rank_by) &&
                              last->hbm_bytes == r.hbm_bytes;
    if (r.hbm_bytes < least_hbm || same_as_last) {
      least_hbm = std::min(least_hbm, r.hbm_bytes);
      s.on_pareto[i] = true;
      s.pareto.push_back(i);
      last = &r;
    }
  }
  return s;
}

std::string WhyBeatsNext(const SweepEnumeration& e, const PointResult& a, const PointResult& b,
                         RankBy rank_by, int64_t next_rank) {
  // The largest saving among the phases and the exposed communication.
  std::string where;
  double best = 0;
  for (int p = 0; p < kNumPredictPhases; ++p) {
    const double saving = b.phase_seconds[p] - a.phase_seconds[p];
    if (saving > best) {
      best = saving;
      where = kPredictPhaseNames[p];
    }
  }
  const double exposed = b.exposed_communication_seconds - a.exposed_communication_seconds;
  if (exposed > best) {
    best = exposed;
    where = "exposed communication";
  }
  std::string line = MetricDifference(a, b, rank_by, next_rank);
  if (RankMetric(a, rank_by) == RankMetric(b, rank_by)) {
    line = absl::StrCat("ties with #", next_rank, " on ", RankByTitle(rank_by),
                        " (ranked first by its lower point index)");
  }
  if (best > 0) {
    absl::StrAppend(&line, ": ", where, " ", Seconds(best), " shorter");
  } else {
    absl::StrAppend(&line, ": no phase is shorter");
  }
  // What differs between the two plans.
  const SweepScenario x = e.ScenarioAt(a.index), y = e.ScenarioAt(b.index);
  std::vector<std::string> mine, theirs;
  const int64_t xa[4] = {x.parallelism.dp, x.parallelism.fsdp, x.parallelism.ep, x.parallelism.tp};
  const int64_t ya[4] = {y.parallelism.dp, y.parallelism.fsdp, y.parallelism.ep, y.parallelism.tp};
  for (int k = 0; k < 4; ++k) {
    if (xa[k] != ya[k]) {
      mine.push_back(absl::StrCat(kSweepAxisNames[k], "=", xa[k]));
      theirs.push_back(absl::StrCat(kSweepAxisNames[k], "=", ya[k]));
    }
  }
  if (x.backend != y.backend) {
    mine.push_back(x.backend);
    theirs.push_back(y.backend);
  }
  if (x.batch_per_device != y.batch_per_device) {
    mine.push_back(absl::StrCat("b=", x.batch_per_device));
    theirs.push_back(absl::StrCat("b=", y.batch_per_device));
  }
  if (a.tilings != b.tilings) {
    mine.push_back(a.tilings.empty() ? "no tiling" : a.tilings);
    theirs.push_back(b.tilings.empty() ? "no tiling" : b.tilings);
  }
  if (x.routing != y.routing) {
    mine.push_back(e.space().routings[x.routing]);
    theirs.push_back(e.space().routings[y.routing]);
  }
  if (!mine.empty()) {
    absl::StrAppend(&line, " (", absl::StrJoin(mine, " "), " vs ", absl::StrJoin(theirs, " "), ")");
  }
  return line;
}

}  // namespace perfsim
