// The step composition (sim/step/step_time.h) with a block timer of fixed, made-up durations,
// so that every expected figure follows by hand from the composition rules; the collectives'
// seconds come from sim/comm (tested in tests/comm) and are asked of it here directly.
#include "sim/step/step_time.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/comm/collectives.h"
#include "sim/hw/chip_registry.h"

namespace perfsim {
namespace {

// Attention 1 ms forward (0.5 of it the core), 2 ms backward; FFN 2 / 4 ms; embedding
// 0.1 / 0.2 ms; LM head 0.3 / 0.6 ms; the optimizer 1 ps per element. Counts its calls.
class FixedTimer : public BlockTimer {
 public:
  absl::StatusOr<BlockTiming> Attention(const TrainingStep&, int64_t) override {
    ++attention_calls;
    return BlockTiming{.forward_seconds = 1e-3, .backward_seconds = 2e-3,
                       .core_forward_seconds = 0.5e-3};
  }
  absl::StatusOr<BlockTiming> Ffn(const TrainingStep&, int64_t) override {
    ++ffn_calls;
    return BlockTiming{.forward_seconds = 2e-3, .backward_seconds = 4e-3};
  }
  absl::StatusOr<BlockTiming> Embedding(const TrainingStep&) override {
    return BlockTiming{.forward_seconds = 0.1e-3, .backward_seconds = 0.2e-3};
  }
  absl::StatusOr<BlockTiming> LmHead(const TrainingStep&) override {
    return BlockTiming{.forward_seconds = 0.3e-3, .backward_seconds = 0.6e-3};
  }
  absl::StatusOr<double> OptimizerSeconds(const TrainingStep&, double elements) override {
    optimizer_elements = elements;
    return elements * 1e-12;
  }
  int attention_calls = 0;
  int ffn_calls = 0;
  double optimizer_elements = 0;
};

struct Scenario {
  Chip chip;
  Topology topology;
  TrainingStep step;
};

Scenario Make(const std::string& chip_name, const std::string& mesh, int64_t devices,
           int64_t gbs, const std::string& parallelism,
           const std::function<void(TrainingStepSpec&)>& edit = {}) {
  absl::StatusOr<Chip> chip = ResolveChip(chip_name);
  EXPECT_TRUE(chip.ok()) << chip.status();
  absl::StatusOr<Topology> topology = Topology::Create(*chip, mesh);
  EXPECT_TRUE(topology.ok()) << topology.status();
  TrainingStepSpec proto;
  proto.set_model("mixtral_8x7b");
  proto.set_devices(devices);
  proto.set_global_batch(gbs);
  proto.set_seq_len(4096);
  EXPECT_TRUE(ApplyParallelismString(parallelism, proto).ok());
  if (edit) edit(proto);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  EXPECT_TRUE(step.ok()) << step.status();
  return Scenario{*chip, *topology, *step};
}

// Mixtral (32 identical MoE layers) data parallel over 8 H100s, GBS 16, MBS 1: m = 2, no
// pipeline. One micro-batch: forward 32·3 + 0.1 + 0.3 = 96.4 ms, backward 32·6 + 0.2 + 0.6 =
// 192.8 ms; the pipeline (one stage) takes 2 · 289.2 = 578.4 ms and leaves no bubble.
// Gradients (zero 0): the dense 1,605,636,096 elements (step_memory_test) all-reduced over the
// 8 replicas, the experts' 45,097,156,608 likewise (ep 1: every device holds every expert),
// fp32. Exposed: all of it beyond the last micro-batch's 192.8 ms backward. The optimizer
// updates all 46,702,792,704 parameters.
TEST(StepTimeTest, DataParallelComposition) {
  Scenario s = Make("gpu_h100", "8", 8, 16, "DP8");
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(timer.attention_calls, 1);  // 32 identical layers simulated once
  EXPECT_EQ(timer.ffn_calls, 1);
  EXPECT_EQ(p->distinct_layer_kinds, 1);
  EXPECT_NEAR(p->pipeline_seconds, 0.5784, 1e-12);
  EXPECT_NEAR(p->breakdown.bubble_seconds, 0, 1e-12);
  EXPECT_NEAR(p->breakdown.attention_seconds, 2 * 32 * 3e-3, 1e-12);
  EXPECT_NEAR(p->breakdown.moe_seconds, 2 * 32 * 6e-3, 1e-12);
  EXPECT_NEAR(p->breakdown.embedding_head_seconds, 2 * 1.2e-3, 1e-12);

  const std::vector<int64_t> group = {0, 1, 2, 3, 4, 5, 6, 7};
  absl::StatusOr<CollectiveTime> dense = AllReduceTime(1605636096.0 * 4, group, s.topology);
  absl::StatusOr<CollectiveTime> experts = AllReduceTime(45097156608.0 * 4, group, s.topology);
  ASSERT_TRUE(dense.ok() && experts.ok());
  const double reduce = dense->seconds + experts->seconds;
  EXPECT_NEAR(p->breakdown.exposed_dp_seconds, std::max(reduce - 0.1928, reduce / 32), 1e-9);
  EXPECT_DOUBLE_EQ(timer.optimizer_elements, 46702792704.0);
  EXPECT_NEAR(p->breakdown.optimizer_seconds, 46702792704.0 * 1e-12, 1e-15);
  EXPECT_NEAR(p->step_seconds,
              0.5784 + p->breakdown.exposed_dp_seconds + p->breakdown.optimizer_seconds, 1e-12);
  EXPECT_NEAR(p->tokens_per_second_per_device, 16 * 4096 / p->step_seconds / 8, 1e-6);
  EXPECT_NEAR(p->model_tflops_per_device_megatron,
              p->flops_megatron.total / p->step_seconds / 8 / 1e12, 1e-9);
  EXPECT_GT(p->mfu_maxtext, 0);
  EXPECT_FALSE(p->lower_bound);
}

// ZeRO-1 reduce-scatters instead (half an all-reduce's traffic), shards the optimizer over dp
// (dense) -- ep 8 leaves the experts unreplicated -- and gathers the parameters back.
TEST(StepTimeTest, Zero1ShardsTheOptimizerAndGathersParameters) {
  Scenario s = Make("gpu_h100", "8", 8, 16, "DP8 EP8",
                 [](TrainingStepSpec& p) { p.mutable_parallelism()->set_zero(ZERO_1); });
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  // Dense 1,605,636,096 / 8 + experts 45,097,156,608 / 8 (their replicas: 1 group of one).
  EXPECT_NEAR(timer.optimizer_elements, 1605636096.0 / 8 + 45097156608.0 / 8, 1);
  EXPECT_GT(p->breakdown.exposed_param_gather_seconds, 0);
}

// 1F1B over 4 stages, m = 8 (GBS 8, dp 1): each chunk of 8 layers costs 24 ms forward and
// 48 ms backward, plus the embedding on the first (72.3 ms in all) and the head on the last
// (72.9 ms). The last stage is the slowest, so the makespan is the first micro-batch's way
// through every stage and back (72.3 + 72 + 72 + 72.9 = 289.2 ms) plus the last stage's other
// m - 1 = 7 micro-batches (7 · 72.9 = 510.3 ms): 799.5 ms, plus up to 2(p - 1) = 6 sends.
// Rank 0 idles about (p - 1)/(m + p - 1) = 3/11 of it.
TEST(StepTimeTest, PipelineBubble) {
  Scenario s = Make("gpu_h100", "8", 4, 8, "PP4 DP1");
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->analytic_bubble_fraction, 3.0 / 11, 1e-12);
  EXPECT_GE(p->pipeline_seconds, 0.7995 - 1e-12);
  EXPECT_LE(p->pipeline_seconds, 0.7995 + 6 * p->breakdown.pipeline_send_seconds + 1e-12);
  EXPECT_NEAR(p->bubble_fraction, 3.0 / 11, 0.01);
  EXPECT_GT(p->breakdown.pipeline_send_seconds, 0);
}

// DualPipe: rank 0 holds chunk 0 and its mirror, the last chunk, and each direction's m/2
// micro-batches pass through one of them. With p = 4 (8 layers a chunk) and m = 8: rank 0 runs
// 4 micro-batches through 16 layers (attention 4 · 16 · 3 ms) and both the embedding and the
// head (4 · (0.3 + 0.9) ms).
TEST(StepTimeTest, DualPipeRankZeroHoldsBothEnds) {
  Scenario s = Make("gpu_h100", "8", 4, 8, "PP4 DP1", [](TrainingStepSpec& p) {
    p.mutable_parallelism()->set_schedule(PIPELINE_SCHEDULE_DUALPIPE);
  });
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->breakdown.attention_seconds, 4 * 16 * 3e-3, 1e-12);
  EXPECT_NEAR(p->breakdown.embedding_head_seconds, 4 * 1.2e-3, 1e-12);
  EXPECT_EQ(s.step.chunks_of_rank(1), (std::vector<int64_t>{1, 2}));
}

// Full remat recomputes every forward: rank 0 repeats 32 · 3 ms per micro-batch.
TEST(StepTimeTest, FullRematRecomputesTheForward) {
  Scenario s = Make("gpu_h100", "8", 8, 16, "DP8",
                 [](TrainingStepSpec& p) { p.mutable_remat()->set_policy(REMAT_FULL); });
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->breakdown.recompute_seconds, 2 * 32 * 3e-3, 1e-12);
  EXPECT_NEAR(p->pipeline_seconds, 0.5784 + 2 * 32 * 3e-3, 1e-12);
}

// Selective core_attn recomputes the attention core only (0.5 ms a layer).
TEST(StepTimeTest, SelectiveCoreAttention) {
  Scenario s = Make("gpu_h100", "8", 8, 16, "DP8", [](TrainingStepSpec& p) {
    p.mutable_remat()->set_policy(REMAT_SELECTIVE);
    p.mutable_remat()->add_recompute("core_attn");
  });
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->breakdown.recompute_seconds, 2 * 32 * 0.5e-3, 1e-12);
}

// FSDP gathers every layer's weights before its forward and backward; with the 3 ms forward a
// layer's 2.9 GB gather over 8 GPUs cannot hide, so most of it is exposed.
TEST(StepTimeTest, FsdpExposesGathersCompueCannotHide) {
  Scenario s = Make("gpu_h100", "8", 8, 8, "FSDP8");
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, s.topology, timer);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->breakdown.exposed_fsdp_seconds, 0.1);
}

TEST(StepTimeTest, TooFewDevicesInTheTopology) {
  Scenario s = Make("gpu_h100", "8", 8, 16, "DP8");
  absl::StatusOr<Topology> small = Topology::Create(s.chip, "4");
  ASSERT_TRUE(small.ok());
  FixedTimer timer;
  absl::StatusOr<StepPrediction> p = PredictStep(s.step, s.chip, *small, timer);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), ::testing::HasSubstr("8 devices do not fit"));
}

}  // namespace
}  // namespace perfsim
