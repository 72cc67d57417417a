// Evaluating, ranking, sharding, merging and interrupting sweeps.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/predict/predict.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/ranking.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/shard_file.h"
#include "sim/sweep/space.h"
#include "sim/sweep/sweep_report.h"
#include "tests/sweep/sweep_test_util.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SweepEnumeration Enumerate(const SweepSpace& s) {
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(s);
  EXPECT_TRUE(e.ok()) << e.status();
  return std::move(e).value();
}

int64_t Count(const SweepSummary& s, Infeasibility reason) {
  return s.by_reason[static_cast<int>(reason)];
}

// Bitwise equality of two result lists (doubles compared by their bits).
void ExpectSameResults(const std::vector<PointResult>& a, const std::vector<PointResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].index);
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].reason, b[i].reason);
    EXPECT_EQ(a[i].message, b[i].message);
    EXPECT_EQ(a[i].tilings, b[i].tilings);
    EXPECT_EQ(a[i].has_metrics, b[i].has_metrics);
    const double xa[] = {a[i].step_seconds,
                         a[i].tokens_per_second_per_chip,
                         a[i].mfu,
                         a[i].exposed_communication_seconds,
                         a[i].compute_busy_seconds,
                         a[i].communication_busy_seconds,
                         a[i].hbm_bytes,
                         a[i].hbm_capacity_bytes};
    const double xb[] = {b[i].step_seconds,
                         b[i].tokens_per_second_per_chip,
                         b[i].mfu,
                         b[i].exposed_communication_seconds,
                         b[i].compute_busy_seconds,
                         b[i].communication_busy_seconds,
                         b[i].hbm_bytes,
                         b[i].hbm_capacity_bytes};
    EXPECT_EQ(std::memcmp(xa, xb, sizeof xa), 0);
    EXPECT_EQ(std::memcmp(a[i].phase_seconds.data(), b[i].phase_seconds.data(),
                          sizeof(double) * kNumPredictPhases),
              0);
  }
}

std::string AllReports(const SweepEnumeration& e, const std::vector<PointResult>& results,
                       RankBy rank_by) {
  const SweepSummary s = Summarize(results, rank_by, e.num_points(), false);
  const SweepReportOptions o{.top = 5, .rank_by = rank_by};
  return FormatSweepTable(e, results, s, o) + SweepJson(e, results, s, o) + SweepCsv(e, results, s);
}

TEST(Sweep, InfeasiblePointsAreCountedByReason) {
  // nano (E = 12, F = 56, D = 40) on 8 devices, every factorisation (20 of them):
  //   divisibility: E % ep != 0 only for ep = 8, i.e. (dp, fsdp, ep, tp) = (1, 1, 8, 1): 1 per
  //     backend (F = 56 and D = 40 divide by every tp, fsdp in {1, 2, 4, 8}; tokens 8·b·seq
  //     divide by dp·fsdp·ep, a divisor of 8).
  //   dense_einsum refuses ep > 1 or tp > 1: of the 19 others only dp·fsdp = 8 with
  //     ep = tp = 1 remain, (1,8), (2,4), (4,2), (8,1): 15 refusals, 4 feasible.
  //   ep_ragged_a2a needs D % tp == 0: 40 divides by 1, 2, 4 and 8, so all 19 are feasible
  //     (nano's few MB fit an H100's 80 GB).
  SweepEnumeration e = Enumerate(NanoSpace({"dense_einsum", "ep_ragged_a2a"}));
  SweepRun run = RunSweep(e, {});
  ASSERT_EQ(run.results.size(), 40u);
  const SweepSummary s = Summarize(run.results, RankBy::kStepTime, e.num_points(), false);
  EXPECT_EQ(Count(s, Infeasibility::kDivisibility), 2);
  EXPECT_EQ(Count(s, Infeasibility::kBackendRefusal), 15);
  EXPECT_EQ(Count(s, Infeasibility::kNone), 4 + 19);
  EXPECT_EQ(s.ranked.size(), 23u);
  const std::string table = FormatSweepTable(e, run.results, s, {});
  EXPECT_THAT(table, HasSubstr("divisibility"));
  EXPECT_THAT(table, HasSubstr("expected E divisible by ep; got E = 12, ep = 8"));
  EXPECT_THAT(table, HasSubstr("backend_refusal"));
  // The CSV lists every point, feasible or not, with its reason.
  const std::string csv = SweepCsv(e, run.results, s);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 41);
  EXPECT_THAT(csv, HasSubstr(",infeasible,backend_refusal,"));
}

TEST(Sweep, TilingsTheKernelsRefuseAreTilingMisfits) {
  // megablox_gmm on 8 TPU v5p chips (its kernels run on TPUs only), dp = 8: T_l = 8·4/8 = 4
  // tokens, rows = T_l·K = 8, padded to a multiple of the wi.fwd row tile (8): m = 8. wo tiles with
  // tm = 16 clamp to m = 8 and are legal; a wi row tile of 8 with wo.fwd tm = 3 does not divide m =
  // 8, which megablox refuses.
  SweepSpace s = NanoSpace({"megablox_gmm"});
  s.hw = "tpu_v5p";
  s.mesh = "2x2x2";
  s.axes[kSweepDp] = {8};
  s.tilings = {SweepTiling{.wi = ProjectionTilings{{8, 40, 56}, {8, 40, 56}, {8, 40, 56}},
                           .wo = ProjectionTilings{{16, 56, 40}, {16, 56, 40}, {16, 56, 40}}},
               SweepTiling{.wi = ProjectionTilings{{8, 40, 56}, {8, 40, 56}, {8, 40, 56}},
                           .wo = ProjectionTilings{{3, 56, 40}, {3, 56, 40}, {3, 56, 40}}}};
  SweepEnumeration e = Enumerate(s);
  SweepRun run = RunSweep(e, {});
  ASSERT_EQ(run.results.size(), 2u);
  EXPECT_TRUE(run.results[0].feasible()) << run.results[0].message;
  EXPECT_EQ(run.results[1].reason, Infeasibility::kTilingMisfit);
  EXPECT_THAT(run.results[1].message, HasSubstr("tiling"));
}

TEST(Sweep, TheOnlyPlanThatFitsHbmIsBestAndSmallerBatchesAreFaster) {
  // A nano-shaped model with big experts: D = 1024, F = 2048, E = 8, K = 2, gated (3 matrices),
  // no shared expert, f32. Expert weights W = E·3·D·F·4 B = 8·3·1024·2048·4 = 201,326,592 B.
  // ep_ragged_a2a, fwd only, fsdp = tp = 1, so dp·ep = 8 and every device holds W/ep of expert
  // weights, plus the router (D·E·4 = 32 KiB) and activations: at seq 8 and b ≤ 2 sequences per
  // device a device has T_l = 8·b·8/(dp·ep) = 8·b tokens, rows T_l·K ≤ 32 of at most F = 2048
  // f32, a few MB at most (checked below: under 16 MiB).
  // HBM capacity 40 MiB = 41,943,040 B (an H100 description with its capacity changed):
  //   ep = 8: W/8 = 25,165,824 B + < 16 MiB  -> fits
  //   ep = 4: W/4 = 50,331,648 B > 40 MiB    -> hbm_over_capacity, and so ep = 2, ep = 1.
  // So the feasible plans are ep = 8 with b = 1 and b = 2; with the same plan, twice the tokens
  // per device means twice the rows through every matmul, permute and exchange: b = 1 is faster.
  const std::string model = NanoVariant("big_experts.textproto",
                                        {{"shared_expert_ffn_dim: 56", "shared_expert_ffn_dim: 0"},
                                         {"num_shared_experts: 1", "num_shared_experts: 0"},
                                         {"d_model: 40", "d_model: 1024"},
                                         {"expert_ffn_dim: 56", "expert_ffn_dim: 2048"},
                                         {"num_experts: 12", "num_experts: 8"}});
  std::string chip =
      ReadFileOrDie(std::string(PERFSIM_SOURCE_DIR) + "/hardware/gpu_h100.textproto");
  const std::string capacity = "hbm_capacity_bytes: 85899345920";
  ASSERT_NE(chip.find(capacity), std::string::npos);
  chip.replace(chip.find(capacity), capacity.size(), "hbm_capacity_bytes: 41943040");
  SweepSpace s;
  s.model = model;
  s.hw = WriteTempFile("small_hbm.textproto", chip);
  s.mesh = "8";
  s.phase = Phase::kForward;
  s.seq = 8;
  s.axes[kSweepFsdp] = {1};
  s.axes[kSweepTp] = {1};
  s.backends = {"ep_ragged_a2a"};
  s.batch_per_device = {1, 2};
  SweepEnumeration e = Enumerate(s);
  ASSERT_EQ(e.num_points(), 8);  // ep in {1, 2, 4, 8} × b in {1, 2}
  SweepRun run = RunSweep(e, {});
  const SweepSummary summary = Summarize(run.results, RankBy::kStepTime, e.num_points(), false);
  EXPECT_EQ(Count(summary, Infeasibility::kHbmOverCapacity), 6);
  ASSERT_EQ(summary.ranked.size(), 2u);
  const PointResult& best = run.results[summary.ranked[0]];
  const PointResult& second = run.results[summary.ranked[1]];
  EXPECT_EQ(e.ScenarioAt(best.index).parallelism.ep, 8);
  EXPECT_EQ(e.ScenarioAt(best.index).batch_per_device, 1);
  EXPECT_EQ(e.ScenarioAt(second.index).batch_per_device, 2);
  EXPECT_GE(best.hbm_bytes, 201326592.0 / 8);
  EXPECT_LT(best.hbm_bytes, 201326592.0 / 8 + 16 * 1048576.0);
  // Both are on the Pareto front of step time vs HBM (b = 1 is faster and uses less).
  EXPECT_TRUE(summary.on_pareto[summary.ranked[0]]);
  const std::string why = WhyBeatsNext(e, best, second, RankBy::kStepTime, 2);
  EXPECT_THAT(why, HasSubstr("faster than #2"));
  EXPECT_THAT(why, HasSubstr("b=1 vs b=2"));
}

TEST(Sweep, ShardsMergedEqualOneRunBitForBit) {
  SweepSpace s = NanoSpace({"dense_einsum", "ep_ragged_a2a", "megablox_gmm"});
  s.hw = "tpu_v5p";  // 2x2x2: 8 chips of one device, where the megablox kernels run
  s.mesh = "2x2x2";
  s.routings = {"uniform", "zipf:1.2"};
  SweepEnumeration e = Enumerate(s);
  const SweepRun whole = RunSweep(e, {});
  ASSERT_EQ(static_cast<int64_t>(whole.results.size()), e.num_points());
  const std::string want = AllReports(e, whole.results, RankBy::kStepTime);
  // N = 1, a few that divide the 60 blocks unevenly, N = blocks + 1 (points mode) and more
  // shards than points (some empty).
  for (int64_t n : {1, 2, 7, 61, 200}) {
    SCOPED_TRACE(n);
    std::vector<ShardFile> files;
    for (int64_t i = 0; i < n; ++i) {
      const SweepRun part = RunSweep(e, {.shard = i, .shard_count = n});
      const std::string text = WriteShardFile(e, i, n, part.results, part.planned, true);
      absl::StatusOr<ShardFile> file = ParseShardFile(text, absl::StrCat("s", i, ".shard"));
      ASSERT_TRUE(file.ok()) << file.status();
      files.push_back(std::move(file).value());
    }
    // Merge order does not matter.
    std::reverse(files.begin(), files.end());
    absl::StatusOr<MergedSweep> merged = MergeShards(files);
    ASSERT_TRUE(merged.ok()) << merged.status();
    ExpectSameResults(merged->results, whole.results);
    EXPECT_EQ(AllReports(merged->enumeration, merged->results, RankBy::kStepTime), want);
  }
}

TEST(Sweep, TwoJobsGiveTheSameResultsAsOne) {
  SweepSpace s = NanoSpace({"ep_ragged_a2a", "ring_of_experts"});
  s.hw = "tpu_v5p";
  s.mesh = "2x2x2";
  s.routings = {"uniform", "hot:0.5"};
  SweepEnumeration e = Enumerate(s);
  const SweepRun one = RunSweep(e, {.jobs = 1});
  const SweepRun two = RunSweep(e, {.jobs = 2});
  ExpectSameResults(one.results, two.results);
  for (RankBy r : {RankBy::kStepTime, RankBy::kTokensPerChip, RankBy::kMfu}) {
    EXPECT_EQ(AllReports(e, one.results, r), AllReports(e, two.results, r));
  }
}

// Every point's figures are those Predict gives for the same scenario, bit for bit; the points
// without figures are the ones Predict refuses.
void ExpectEveryPointIsPredicts(const SweepEnumeration& e,
                                const std::vector<PointResult>& results) {
  for (const PointResult& r : results) {
    const SweepScenario scenario = e.ScenarioAt(r.index);
    PredictOptions o{.spec = e.SpecOf(scenario),
                     .hw = e.space().hw,
                     .mesh = e.mesh(),
                     .routing = e.routings()[scenario.routing],
                     .adam = e.space().adam};
    SCOPED_TRACE(absl::StrCat("point ", r.index, " ", ParallelismToString(o.spec.parallelism), " ",
                              o.spec.backend, " ", e.space().routings[scenario.routing], ": ",
                              r.message));
    absl::StatusOr<Prediction> p = Predict(o);
    ASSERT_EQ(p.ok(), r.has_metrics) << p.status();
    if (!p.ok()) continue;
    const double got[] = {r.step_seconds,
                          r.mfu,
                          r.exposed_communication_seconds,
                          r.compute_busy_seconds,
                          r.communication_busy_seconds,
                          r.hbm_bytes,
                          r.hbm_capacity_bytes};
    const double want[] = {
        p->step_seconds,       p->mfu,          p->exposed_communication, p->compute_busy,
        p->communication_busy, p->memory.total, p->memory.capacity};
    EXPECT_EQ(std::memcmp(got, want, sizeof got), 0);
    for (const PhaseTotal& t : p->phases) {
      const int k = static_cast<int>(
          std::find(std::begin(kPredictPhaseNames), std::end(kPredictPhaseNames), t.phase) -
          std::begin(kPredictPhaseNames));
      ASSERT_LT(k, kNumPredictPhases) << t.phase;
      EXPECT_EQ(std::memcmp(&r.phase_seconds[k], &t.seconds, sizeof(double)), 0) << t.phase;
    }
  }
}

TEST(Sweep, EveryPointIsWhatPredictGivesBitForBit) {
  for (const char* hw : {"gpu_h100", "tpu_v5p"}) {
    SweepSpace s = NanoSpace({"dense_einsum", "ep_ragged_a2a", "megablox_gmm", "ring_of_experts",
                              "grouped_gemm_aligned"});
    s.hw = hw;
    s.mesh = std::string(hw) == "tpu_v5p" ? "2x2x2" : "8";
    s.phase = Phase::kForwardBackward;
    s.routings = {"uniform", "zipf:1.2", "hot:0.5"};
    SweepEnumeration e = Enumerate(s);
    const SweepRun run = RunSweep(e, {});
    SCOPED_TRACE(hw);
    ExpectEveryPointIsPredicts(e, run.results);
    // The points share one PredictCache: some costs came from it.
    EXPECT_GT(run.stats.grouped_hits, 0);
  }
}

TEST(Sweep, PerShardRoutingFilesWorkWithFsdp) {
  // A routing file of one row per token shard: on 8 devices with tp = 1 every factorisation has
  // dp·fsdp·ep = 8 token shards (mesh order dp, fsdp, ep), so the file's 8 rows fit every
  // point, fsdp = 2 and 4 included (they were `error` points when the routing matrix had only
  // dp·ep rows). Shard 5 sends most of its assignments to experts 0 and 1.
  std::string rows;
  for (int s = 0; s < 8; ++s) {
    for (int x = 0; x < 12; ++x)
      rows += absl::StrCat(s == 5 && x < 2 ? 30 : 1, x < 11 ? " " : "\n");
  }
  const std::string path = WriteTempFile("per_shard_rows.txt", rows);
  SweepSpace s = NanoSpace({"ep_ragged_a2a"});
  s.phase = Phase::kForwardBackward;
  s.axes[kSweepTp] = {1};
  s.routings = {"uniform", "file:" + path};
  SweepEnumeration e = Enumerate(s);
  const SweepRun run = RunSweep(e, {});
  const SweepSummary summary = Summarize(run.results, RankBy::kStepTime, e.num_points(), false);
  EXPECT_EQ(Count(summary, Infeasibility::kError), 0);
  int64_t with_fsdp = 0, skew_differs = 0;
  for (const PointResult& r : run.results) {
    const SweepScenario scenario = e.ScenarioAt(r.index);
    if (scenario.routing != 1 || !r.feasible()) continue;
    if (scenario.parallelism.fsdp > 1) ++with_fsdp;
    // The same plan with uniform routing is the point before (routings vary fastest).
    ASSERT_EQ(e.ScenarioAt(r.index - 1).routing, 0);
    if (r.step_seconds != run.results[r.index - 1].step_seconds) ++skew_differs;
  }
  EXPECT_GT(with_fsdp, 0);
  EXPECT_GT(skew_differs, 0);
  ExpectEveryPointIsPredicts(e, run.results);
}

TEST(Sweep, RankingIsByMetricThenIndex) {
  SweepEnumeration e = Enumerate(NanoSpace({"ep_ragged_a2a"}));
  const SweepRun run = RunSweep(e, {});
  for (RankBy r : {RankBy::kStepTime, RankBy::kTokensPerChip, RankBy::kMfu}) {
    const SweepSummary s = Summarize(run.results, r, e.num_points(), false);
    for (size_t k = 1; k < s.ranked.size(); ++k) {
      const PointResult& a = run.results[s.ranked[k - 1]];
      const PointResult& b = run.results[s.ranked[k]];
      EXPECT_TRUE(RanksBefore(a, b, r));
      EXPECT_FALSE(RanksBefore(b, a, r));
    }
    // Nothing on the front is beaten by a point at most as heavy in HBM.
    for (size_t i : s.pareto) {
      for (size_t j : s.ranked) {
        const PointResult& p = run.results[i];
        const PointResult& q = run.results[j];
        const bool q_better = r == RankBy::kStepTime ? RankMetric(q, r) < RankMetric(p, r)
                                                     : RankMetric(q, r) > RankMetric(p, r);
        EXPECT_FALSE(q_better && q.hbm_bytes <= p.hbm_bytes) << p.index << " vs " << q.index;
      }
    }
  }
}

TEST(Sweep, InterruptionKeepsWhatWasFound) {
  SweepEnumeration e = Enumerate(NanoSpace({"ep_ragged_a2a"}));
  int seen = 0;
  // What the SIGINT handler does, called directly after the third point.
  const SweepRun run = RunSweep(e, {.on_point = [&seen](const PointResult&) {
                                  if (++seen == 3) RequestSweepInterrupt();
                                }});
  EXPECT_TRUE(run.interrupted);
  ASSERT_EQ(run.results.size(), 3u);
  const SweepSummary s = Summarize(run.results, RankBy::kStepTime, run.planned, run.interrupted);
  const std::string table = FormatSweepTable(e, run.results, s, {});
  EXPECT_THAT(table, HasSubstr("INTERRUPTED after 3 of 20 points"));
  EXPECT_THAT(SweepJson(e, run.results, s, {}), HasSubstr("\"interrupted\": true"));
  // A shard file of an interrupted run is refused by merge.
  absl::StatusOr<ShardFile> file =
      ParseShardFile(WriteShardFile(e, 0, 1, run.results, run.planned, false), "cut.shard");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<MergedSweep> merged = MergeShards({*file});
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(merged.status().message(), HasSubstr("cut.shard:6:10: expected a complete shard"));
  // Once the flag is cleared, the next run starts afresh.
  ClearSweepInterrupt();
  EXPECT_FALSE(RunSweep(e, {}).interrupted);
}

TEST(Sweep, InterruptionBeforeTheRunStartsEvaluatesNothing) {
  // Ctrl-C while the space was read or enumerated: the run stops before its first point.
  SweepEnumeration e = Enumerate(NanoSpace({"ep_ragged_a2a"}));
  RequestSweepInterrupt();
  const SweepRun one_job = RunSweep(e, {});
  const SweepRun two_jobs = RunSweep(e, {.jobs = 2});
  ClearSweepInterrupt();
  EXPECT_TRUE(one_job.interrupted);
  EXPECT_TRUE(one_job.results.empty());
  EXPECT_EQ(one_job.planned, 20);
  EXPECT_TRUE(two_jobs.interrupted);
  EXPECT_TRUE(two_jobs.results.empty());
}

TEST(Sweep, InterruptionStopsEveryJob) {
  SweepEnumeration e = Enumerate(NanoSpace({"ep_ragged_a2a", "dense_einsum"}));
  const SweepRun run = RunSweep(e, {.jobs = 2, .progress = [](int64_t done, int64_t) {
                                      if (done >= 0) RequestSweepInterrupt();
                                    }});
  ClearSweepInterrupt();
  EXPECT_TRUE(run.interrupted);
  EXPECT_LT(run.results.size(), 40u);
  EXPECT_TRUE(
      std::is_sorted(run.results.begin(), run.results.end(),
                     [](const PointResult& a, const PointResult& b) { return a.index < b.index; }));
}

TEST(Sweep, MergeRefusesMismatchedMissingAndDuplicateShards) {
  SweepEnumeration a = Enumerate(NanoSpace({"dense_einsum"}));
  SweepSpace other = NanoSpace({"dense_einsum"});
  other.seq = 8;
  SweepEnumeration b = Enumerate(other);
  const auto shard = [](const SweepEnumeration& e, int64_t i, int64_t n, const std::string& name) {
    const SweepRun run = RunSweep(e, {.shard = i, .shard_count = n});
    absl::StatusOr<ShardFile> f =
        ParseShardFile(WriteShardFile(e, i, n, run.results, run.planned, true), name);
    EXPECT_TRUE(f.ok()) << f.status();
    return *f;
  };
  absl::StatusOr<MergedSweep> m = MergeShards({shard(a, 0, 2, "a0"), shard(b, 1, 2, "b1")});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("b1:2:13: expected the space of a0"));
  m = MergeShards({shard(a, 0, 3, "a0"), shard(a, 2, 3, "a2")});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("missing 1/3"));
  m = MergeShards({shard(a, 0, 2, "x"), shard(a, 0, 2, "y"), shard(a, 1, 2, "z")});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("y:3:7: expected each shard once"));
  m = MergeShards({shard(a, 0, 2, "a0"), shard(a, 1, 3, "a1")});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("a1:3:7: expected shard count 2"));
  // Found by fuzz/sweep_fuzzer: the shard count is read from the file, and merge listed every
  // missing shard: 10^12 of them exhausted memory. Now the first 8 are named.
  ShardFile huge = shard(a, 0, 2, "h");
  huge.shard_count = 1000000000000;
  m = MergeShards({huge});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("merge: expected all 1000000000000 shards; missing 1/1000000000000, "
                        "2/1000000000000"));
  // 10^12 shards, 1 present, 8 named: 10^12 - 9 more.
  EXPECT_THAT(m.status().message(), HasSubstr("8/1000000000000 and 999999999991 more"));
}

TEST(Sweep, ShardFilesRejectEditsWithLineAndColumn) {
  SweepEnumeration e = Enumerate(NanoSpace({"dense_einsum"}));
  const SweepRun run = RunSweep(e, {});
  const std::string text = WriteShardFile(e, 0, 1, run.results, run.planned, true);
  // A space line edited: the fingerprint no longer matches.
  std::string edited = text;
  edited.replace(edited.find("seq: 4"), 6, "seq: 5");
  absl::StatusOr<ShardFile> f = ParseShardFile(edited, "e.shard");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("e.shard:2:13: expected the fingerprint"));
  // A figure that is not a number.
  std::string bad = text;
  const size_t r = bad.find("\nr 0 ");
  bad.replace(bad.find(' ', r + 6) + 1, 1, "x");
  f = ParseShardFile(bad, "n.shard");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("n.shard:"));
  EXPECT_THAT(f.status().message(), HasSubstr("expected 0 or 1"));
  f = ParseShardFile("not a shard\n", "z.shard");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("z.shard:1:1: expected 'perfsim-sweep-shard 1'"));
  f = ParseShardFile(text.substr(0, text.rfind("end ")), "t.shard");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("expected 'end ...'; got end of file"));
}

TEST(Progress, TerminalRedrawsOneLineWithRateAndEta) {
  double now = 0;
  std::ostringstream out;
  ProgressMeter meter(out, 100, {.terminal = true, .clock = [&now] { return now; }});
  now = 1;
  meter.Update(10);
  now = 1.05;  // within 0.1 s: not drawn
  meter.Update(11);
  now = 2;
  meter.Update(20);
  meter.Finish(20, true);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  // 20 points in 2 s = 10 points/s; 80 left: ETA 8 s.
  EXPECT_THAT(text, HasSubstr("[####................]  20/100  20.0%  10 points/s  ETA 0:00:08"));
  EXPECT_THAT(text, HasSubstr("(interrupted)"));
}

TEST(Progress, PlainLinesAtAnIntervalWithoutControlCharacters) {
  double now = 0;
  std::ostringstream out;
  ProgressMeter meter(out, 1000, {.terminal = false, .clock = [&now] { return now; }});
  for (int i = 1; i <= 100; ++i) {
    now = i * 0.1;  // 10 s in all, 100 points/s: drawn once 5 s and 10 s have passed
    meter.Update(i * 10);
  }
  meter.Finish(1000, false);
  const std::string text = out.str();
  EXPECT_THAT(text, Not(HasSubstr("\r")));
  EXPECT_THAT(text, Not(HasSubstr("\x1b")));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_THAT(text, HasSubstr("sweep: 500/1000 points (50.0%), 100 points/s, ETA 5 s\n"));
  EXPECT_THAT(text, HasSubstr("sweep: 1000/1000 points (100.0%), 100 points/s, ETA 0 s\n"));
}

}  // namespace
}  // namespace perfsim
