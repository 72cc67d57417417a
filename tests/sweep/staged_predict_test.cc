// The sweep's staged evaluation against Predict itself: the same bits on every figure the sweep
// reports, for every backend, several meshes and skewed routings. A change to Predict's model
// that sim/sweep does not follow fails here.
#include "sim/sweep/staged_predict.h"

#include <string>

#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/predict.h"

namespace perfsim {
namespace {

struct Case {
  std::string model;
  std::string hw;
  std::string mesh;
  std::string backend;
  Parallelism parallelism;
  Phase phase;
  int64_t batch;
  int64_t seq;
};

void ExpectSameAsPredict(const Case& c, const std::string& routing_text) {
  SCOPED_TRACE(c.backend + " " + ParallelismToString(c.parallelism) + " " + routing_text + " on " +
               c.mesh + " " + c.hw);
  absl::StatusOr<ModelConfig> model = ResolveModel(c.model);
  ASSERT_TRUE(model.ok()) << model.status();
  PredictOptions o{.spec = StepSpec::Defaults(*model)};
  o.spec.batch = c.batch;
  o.spec.seq = c.seq;
  o.spec.phase = c.phase;
  o.spec.backend = c.backend;
  o.spec.parallelism = c.parallelism;
  o.hw = c.hw;
  o.mesh = c.mesh;
  absl::StatusOr<RoutingSpec> routing = ParseRoutingSpec(routing_text);
  ASSERT_TRUE(routing.ok()) << routing.status();
  o.routing = *routing;
  absl::StatusOr<Prediction> want = Predict(o);
  ASSERT_TRUE(want.ok()) << want.status();

  absl::StatusOr<Chip> chip = ResolveChip(c.hw);
  ASSERT_TRUE(chip.ok());
  absl::StatusOr<Topology> topology = Topology::Create(*chip, c.mesh);
  ASSERT_TRUE(topology.ok());
  absl::StatusOr<StagedStep> step = PrepareStagedStep(o.spec, *chip, *topology, /*adam=*/false);
  ASSERT_TRUE(step.ok()) << step.status();
  StagedCaches caches;
  absl::StatusOr<StagedResult> got = EvaluateStagedRouting(*step, *routing, routing_text, caches);
  ASSERT_TRUE(got.ok()) << got.status();

  EXPECT_EQ(got->step_seconds, want->step_seconds);
  EXPECT_EQ(got->slowest_device, want->slowest_device);
  EXPECT_EQ(got->compute_busy, want->compute_busy);
  EXPECT_EQ(got->communication_busy, want->communication_busy);
  EXPECT_EQ(got->exposed_communication, want->exposed_communication);
  EXPECT_EQ(got->mfu, want->mfu);
  for (const PhaseTotal& t : want->phases) {
    int p = 0;
    while (p < kNumSweepPhases && t.phase != kSweepPhaseNames[p]) ++p;
    ASSERT_LT(p, kNumSweepPhases) << t.phase;
    EXPECT_TRUE(got->phase_present[p]) << t.phase;
    EXPECT_EQ(got->phase_seconds[p], t.seconds) << t.phase;
  }
  EXPECT_EQ(got->parameters, want->memory.parameters);
  EXPECT_EQ(got->gradients, want->memory.gradients);
  EXPECT_EQ(got->activations, want->memory.activations);
  EXPECT_EQ(got->hbm_total, want->memory.total);
  EXPECT_EQ(got->hbm_capacity, want->memory.capacity);
  if (routing_text == "uniform") {
    EXPECT_EQ(got->device_classes, 1);
  }

  // A second evaluation, from warm caches, gives the same bits.
  absl::StatusOr<StagedResult> again = EvaluateStagedRouting(*step, *routing, routing_text, caches);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->step_seconds, got->step_seconds);
  EXPECT_EQ(again->hbm_total, got->hbm_total);
}

TEST(StagedPredict, MatchesPredictOnEveryBackendAndRouting) {
  const Phase fb = Phase::kForwardBackward;
  const std::vector<Case> cases = {
      {"nano", "gpu_h100", "8", "ep_ragged_a2a", {.dp = 2, .ep = 4}, fb, 16, 8},
      {"nano", "gpu_h100", "8", "ep_ragged_a2a", {.ep = 4, .tp = 2}, fb, 16, 8},
      {"nano", "tpu_v5p", "2x2x2", "megablox_gmm", {.dp = 4, .fsdp = 2}, fb, 16, 8},
      {"nano", "tpu_v5p", "2x2x2", "ring_of_experts", {.dp = 2, .ep = 4}, fb, 16, 8},
      {"nano", "gpu_h100", "8", "grouped_gemm_aligned", {.dp = 2, .ep = 4}, fb, 16, 8},
      {"nano", "gpu_h100", "8", "sparse_ragged_dot", {.dp = 8}, fb, 16, 8},
      {"nano", "gpu_h100", "8", "capacity_einsum", {.dp = 2, .ep = 4}, fb, 16, 8},
      {"nano", "gpu_h100", "8", "dense_einsum", {.dp = 8}, Phase::kForward, 16, 8},
      {"nano", "tpu_v5p", "2x2x2", "fused_expert_ffn", {.dp = 8}, Phase::kForward, 16, 8},
      {"nano", "tpu_v5p", "2x2x2", "ep_ragged_a2a", {.dp = 2, .ep = 4}, fb, 16, 8},
  };
  for (const Case& c : cases) {
    for (const char* routing : {"uniform", "zipf:1.2", "hot:0.5"}) {
      ExpectSameAsPredict(c, routing);
    }
  }
}

TEST(StagedPredict, MatchesPredictOnTheDefaultDeepSeekScenario) {
  // `perfsim predict`'s default: DeepSeek-V3 on TPU v7x 4x8x8 (512 devices), ep=256, dp=2.
  const Case c{"deepseek_v3",           "tpu_v7x", "4x8x8", "ep_ragged_a2a", {.dp = 2, .ep = 256},
               Phase::kForwardBackward, 512,       4096};
  ExpectSameAsPredict(c, "uniform");
  ExpectSameAsPredict(c, "zipf:1.0");
}

}  // namespace
}  // namespace perfsim
