// Evaluating the points of a sweep: one PointResult per point, feasible or with the reason it
// is not. Never fails: whatever goes wrong with a point is recorded against it.
//
//   SweepEvaluator evaluator(enumeration);     // one per thread (its caches are not shared)
//   PointResult r = evaluator.Evaluate(17);
//   r.reason == Infeasibility::kNone ? r.step_seconds : r.message
//
// Checks, in order (the first that fails is the reason):
//   divisibility      StepSpec::Validate (B·S by dp·fsdp·ep, E by ep, F by tp, D by fsdp)
//   backend_refusal   the backend's Supports (e.g. ep_ragged_a2a needs D divisible by tp), or
//                     a kernel the chip cannot run (the megablox kernels on a GPU)
//   tiling_misfit     a kernel tiling the lowering refuses (tm not dividing the rows) or whose
//                     footprint does not fit VMEM / shared memory; with search, no tiling fits
//   lowering_failed   any other lowering error
//   hbm_over_capacity the plan's HBM per device exceeds the chip's (its figures are kept)
//   error             costing failed (e.g. a routing file of the wrong width, or with one row
//                     per token shard for another count of shards than the point's dp·fsdp·ep)
//
// Every point is evaluated by sim/predict, the one model of the step time `perfsim predict`
// reports: PrepareStep once per block of points that share a lowered module (same
// factorisation, backend, batch, tiling; the last few blocks are kept), then
// PredictWithRouting without detail per point, with one PredictCache per evaluator. A point's
// figures are therefore those of `perfsim predict` on the same scenario, bit for bit
// (tests/sweep check it).
//
// Caching: tiling searches by kernel problem; in the PredictCache, grouped-matmul and ragged
// all-to-all costs by what they depend on (shared by every block: one chip and slice) and each
// (block, routing)'s durations. Cached values are pure functions of their keys, so results do
// not depend on the order in which points are evaluated (what --jobs and --shard rely on).
#ifndef PERFSIM_SIM_SWEEP_EVALUATOR_H_
#define PERFSIM_SIM_SWEEP_EVALUATOR_H_

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/fit/kernels.h"
#include "sim/predict/predict.h"
#include "sim/sweep/space.h"

namespace perfsim {

enum class Infeasibility {
  kNone,
  kDivisibility,
  kBackendRefusal,
  kTilingMisfit,
  kLoweringFailed,
  kHbmOverCapacity,
  kError,
};
inline constexpr int kNumInfeasibilities = 7;
// "ok", "divisibility", "backend_refusal", "tiling_misfit", "lowering_failed",
// "hbm_over_capacity", "error".
absl::string_view InfeasibilityName(Infeasibility reason);
absl::StatusOr<Infeasibility> ParseInfeasibility(absl::string_view name);

struct PointResult {
  int64_t index = 0;
  Infeasibility reason = Infeasibility::kNone;
  std::string message;  // why it is infeasible (one line)
  // Set for feasible points and for hbm_over_capacity ones.
  bool has_metrics = false;
  double step_seconds = 0;
  double tokens_per_second_per_chip = 0;
  double mfu = 0;
  double exposed_communication_seconds = 0;
  double compute_busy_seconds = 0;
  double communication_busy_seconds = 0;
  std::array<double, kNumPredictPhases> phase_seconds{};  // busy time per phase, slowest device,
                                                          // in kPredictPhaseNames order
  double hbm_bytes = 0;                                   // per device
  double hbm_capacity_bytes = 0;                          // per device
  // The kernel tilings the plan runs ("" for backends without tilings); with search, the ones
  // it chose: "wi=tm,tk,tn/..,../.. wo=...".
  std::string tilings;

  bool feasible() const { return reason == Infeasibility::kNone; }
};

struct SweepCacheStats {
  int64_t blocks_prepared = 0;  // PrepareStep calls (lowering + costing)
  int64_t block_hits = 0;       // points that found their block prepared
  int64_t searches = 0;         // SearchTilings calls
  int64_t search_hits = 0;
  int64_t grouped_hits = 0, grouped_misses = 0;  // PredictCache::Stats
  int64_t a2a_hits = 0, a2a_misses = 0;
  void Add(const SweepCacheStats& o);
};

class SweepEvaluator {
 public:
  explicit SweepEvaluator(const SweepEnumeration& enumeration) : e_(enumeration) {}
  PointResult Evaluate(int64_t point);
  SweepCacheStats stats() const;

 private:
  struct Block {
    int64_t index = -1;
    Infeasibility reason = Infeasibility::kNone;
    std::string message;
    std::string tilings;
    std::shared_ptr<const PreparedStep> step;
  };
  const Block& BlockFor(const SweepScenario& scenario);
  Block PrepareBlock(const SweepScenario& scenario);
  // With search: the spec's knobs set to the fastest fitting tiling per kernel role.
  absl::Status SearchTilings(StepSpec& spec, std::string& why_not);

  const SweepEnumeration& e_;
  std::deque<Block> blocks_;  // most recent last
  absl::flat_hash_map<std::string, std::optional<Tiling>> searched_;
  PredictCache cache_;
  SweepCacheStats stats_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_EVALUATOR_H_
