// PredictWithRouting gives Predict's bits however it is asked: with or without detail, with a
// fresh PredictCache or one that has served other routings, other steps and other chips, in
// any order. (sim/sweep relies on it: a sweep point's figures are `perfsim predict`'s.)
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/predict.h"

namespace perfsim {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameBits(const Prediction& got, const Prediction& want, bool rows) {
  EXPECT_TRUE(SameBits(got.step_seconds, want.step_seconds));
  EXPECT_TRUE(SameBits(got.compute_busy, want.compute_busy));
  EXPECT_TRUE(SameBits(got.communication_busy, want.communication_busy));
  EXPECT_TRUE(SameBits(got.exposed_communication, want.exposed_communication));
  EXPECT_TRUE(SameBits(got.mfu, want.mfu));
  EXPECT_EQ(got.slowest_device, want.slowest_device);
  EXPECT_TRUE(SameBits(got.memory.total, want.memory.total));
  EXPECT_TRUE(SameBits(got.memory.activations, want.memory.activations));
  ASSERT_EQ(got.phases.size(), want.phases.size());
  for (size_t k = 0; k < want.phases.size(); ++k) {
    EXPECT_EQ(got.phases[k].phase, want.phases[k].phase);
    EXPECT_TRUE(SameBits(got.phases[k].seconds, want.phases[k].seconds)) << want.phases[k].phase;
    EXPECT_TRUE(SameBits(got.phases[k].flops, want.phases[k].flops)) << want.phases[k].phase;
    EXPECT_TRUE(SameBits(got.phases[k].bytes, want.phases[k].bytes)) << want.phases[k].phase;
  }
  if (!rows) return;
  ASSERT_EQ(got.ops.size(), want.ops.size());
  for (size_t k = 0; k < want.ops.size(); ++k) {
    SCOPED_TRACE(want.ops[k].name);
    EXPECT_EQ(got.ops[k].name, want.ops[k].name);
    EXPECT_TRUE(SameBits(got.ops[k].start, want.ops[k].start));
    EXPECT_TRUE(SameBits(got.ops[k].seconds, want.ops[k].seconds));
    EXPECT_TRUE(SameBits(got.ops[k].flops, want.ops[k].flops));
    EXPECT_TRUE(SameBits(got.ops[k].bytes, want.ops[k].bytes));
    EXPECT_TRUE(SameBits(got.ops[k].sent_bytes, want.ops[k].sent_bytes));
    EXPECT_TRUE(SameBits(got.ops[k].max_sent_bytes, want.ops[k].max_sent_bytes));
  }
}

PredictOptions Nano(const std::string& hw, const std::string& mesh, const std::string& backend,
                    Parallelism parallelism) {
  absl::StatusOr<ModelConfig> model = ResolveModel("nano");
  EXPECT_TRUE(model.ok()) << model.status();
  PredictOptions o{.spec = StepSpec::Defaults(*model)};
  o.spec.batch = 16;
  o.spec.seq = 8;
  o.spec.phase = Phase::kForwardBackward;
  o.spec.backend = backend;
  o.spec.parallelism = parallelism;
  o.hw = hw;
  o.mesh = mesh;
  return o;
}

// A routing file of one row per token shard (8 on 8 devices with tp = 1): shard s favours
// experts s and s + 1.
std::string PerShardRouting() {
  const std::string path = ::testing::TempDir() + "/cache_rows.txt";
  std::ofstream file(path);
  for (int s = 0; s < 8; ++s) {
    for (int e = 0; e < 12; ++e) file << (e == s || e == s + 1 ? 9 : 1) << (e < 11 ? " " : "\n");
  }
  return "file:" + path;
}

TEST(PredictCache, EveryEvaluationOrderGivesPredictsBits) {
  // Steps of two chips (the cache's cost caches are emptied when the chip changes) and, on the
  // H100s, two steps with the same EP group, whose exchanges the cache may share.
  const std::vector<PredictOptions> steps = {
      Nano("gpu_h100", "8", "ep_ragged_a2a", {.dp = 2, .ep = 4}),
      Nano("gpu_h100", "8", "ep_ragged_a2a", {.ep = 4, .fsdp = 2}),
      Nano("gpu_h100", "8", "grouped_gemm_aligned", {.dp = 2, .ep = 4}),
      Nano("tpu_v5p", "2x2x2", "megablox_gmm", {.dp = 4, .fsdp = 2}),
      Nano("tpu_v5p", "2x2x2", "ring_of_experts", {.dp = 2, .ep = 4}),
  };
  std::vector<RoutingSpec> routings;
  for (const std::string& text : {std::string("uniform"), std::string("zipf:1.2"),
                                  std::string("hot:0.5"), PerShardRouting()}) {
    absl::StatusOr<RoutingSpec> r = ParseRoutingSpec(text);
    ASSERT_TRUE(r.ok()) << r.status();
    routings.push_back(*r);
  }
  // What Predict gives, each from scratch.
  std::vector<std::vector<Prediction>> want(steps.size());
  std::vector<PreparedStep> prepared;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (const RoutingSpec& r : routings) {
      PredictOptions o = steps[s];
      o.routing = r;
      absl::StatusOr<Prediction> p = Predict(o);
      ASSERT_TRUE(p.ok()) << p.status();
      want[s].push_back(*std::move(p));
    }
    absl::StatusOr<PreparedStep> step = PrepareStep(steps[s]);
    ASSERT_TRUE(step.ok()) << step.status();
    prepared.push_back(*std::move(step));
  }
  // One cache through three passes: routings forward without detail, backward with detail,
  // then steps interleaved routing by routing.
  PredictCache cache;
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t k = 0; k < steps.size() * routings.size(); ++k) {
      const size_t s = pass == 2 ? k % steps.size() : k / routings.size();
      const size_t r = pass == 2   ? k / steps.size()
                       : pass == 1 ? routings.size() - 1 - k % routings.size()
                                   : k % routings.size();
      SCOPED_TRACE(absl::StrCat("pass ", pass, " step ", s, " routing ", r));
      const bool detail = pass == 1;
      absl::StatusOr<Prediction> got =
          PredictWithRouting(prepared[s], routings[r], {.detail = detail, .cache = &cache});
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectSameBits(*got, want[s][r], detail);
      if (!detail) {
        EXPECT_TRUE(got->ops.empty());
        EXPECT_EQ(got->schedule.num_devices(), 0);
      }
    }
  }
  const PredictCache::Stats stats = cache.stats();
  // 5 steps × 4 routings are costed once each on the first pass and found on the next two.
  EXPECT_EQ(stats.routing_misses, 20);
  EXPECT_EQ(stats.routing_hits, 40);
  EXPECT_GT(stats.grouped_hits, 0);
}

TEST(PredictCache, PredictIsItsTwoStagesWithoutACache) {
  absl::StatusOr<PredictOptions> o = DefaultPredictOptions();
  ASSERT_TRUE(o.ok()) << o.status();
  o->routing = *ParseRoutingSpec("zipf:1.0");
  absl::StatusOr<Prediction> want = Predict(*o);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<PreparedStep> step = PrepareStep(*o);
  ASSERT_TRUE(step.ok()) << step.status();
  absl::StatusOr<Prediction> staged = PredictWithRouting(*step, o->routing);
  ASSERT_TRUE(staged.ok()) << staged.status();
  ExpectSameBits(*staged, *want, /*rows=*/true);
  absl::StatusOr<Prediction> bare = PredictWithRouting(*step, o->routing, {.detail = false});
  ASSERT_TRUE(bare.ok()) << bare.status();
  ExpectSameBits(*bare, *want, /*rows=*/false);
}

}  // namespace
}  // namespace perfsim
