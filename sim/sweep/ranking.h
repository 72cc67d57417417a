// Ranking the evaluated points of a sweep: the best plans, the infeasible ones counted by
// reason, and the Pareto front of the ranking metric against HBM use.
//
//   SweepSummary s = Summarize(results, RankBy::kStepTime, enumeration.num_points(), false);
//   results[s.ranked[0]]            // the best feasible plan
//   s.by_reason[kTilingMisfit]      // points refused for their tiling
//   WhyBeatsNext(e, results[s.ranked[0]], results[s.ranked[1]], RankBy::kStepTime, 2)
//     // "0.412 ms (3.1%) faster than #2: dispatch 0.530 ms shorter (ep=128 tp=2 vs ep=256 tp=1)"
//
// Order: by the metric (step time ascending; tokens/s/chip and MFU descending), ties by point
// index, so the ranking is a pure function of the results (any --jobs, shards merged or not).
// Pareto: the feasible points that no other feasible point beats on the metric without using
// more HBM per device (minimising step time or maximising tokens/s/chip or MFU, and minimising
// HBM); points with identical figures are all kept. Listed by the metric, best first.
#ifndef PERFSIM_SIM_SWEEP_RANKING_H_
#define PERFSIM_SIM_SWEEP_RANKING_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/sweep/evaluator.h"
#include "sim/sweep/space.h"

namespace perfsim {

enum class RankBy { kStepTime, kTokensPerChip, kMfu };
// "step", "tokens", "mfu". Error: "--rank-by: expected step, tokens or mfu; got 'x'".
absl::StatusOr<RankBy> ParseRankBy(absl::string_view text);
absl::string_view RankByName(RankBy rank_by);             // "step", "tokens", "mfu"
absl::string_view RankByTitle(RankBy rank_by);            // "step time", "tokens/s/chip", "MFU"
double RankMetric(const PointResult& r, RankBy rank_by);  // the figure itself
// True when a ranks before b (metric, then index).
bool RanksBefore(const PointResult& a, const PointResult& b, RankBy rank_by);

struct SweepSummary {
  int64_t total_points = 0;  // in the space (or the shard)
  int64_t evaluated = 0;
  bool interrupted = false;
  std::array<int64_t, kNumInfeasibilities> by_reason{};  // kNone = feasible
  std::array<int64_t, kNumInfeasibilities> example{};    // lowest index per reason, -1: none
  std::vector<size_t> ranked;   // into results: feasible points, best first
  std::vector<size_t> pareto;   // into results: the Pareto front, best first
  std::vector<bool> on_pareto;  // per result
};

SweepSummary Summarize(const std::vector<PointResult>& results, RankBy rank_by,
                       int64_t total_points, bool interrupted);

// One line saying how `a` beats `b` (ranked right after it): the metric difference (or that
// they tie, `a` having the lower point index), the phase (or exposed communication) with the
// largest saving on the slowest device, and the settings that differ.
std::string WhyBeatsNext(const SweepEnumeration& e, const PointResult& a, const PointResult& b,
                         RankBy rank_by, int64_t next_rank);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_RANKING_H_
