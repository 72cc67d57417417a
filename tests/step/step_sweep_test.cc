// The whole-step sweep (sim/step/step_sweep.h): every plan of a small space is enumerated,
// validated, predicted with block timings cached across plans, and the plans that fit are ranked
// by tokens/s per device.
#include "sim/step/step_sweep.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

// Block durations that scale with the work a device does: attention and FFN proportional to the
// tokens of a micro-batch over tp (and ep for the MoE FFN's experts), so plans differ. Counts the
// calls that reach it.
class ScalingTimer : public BlockTimer {
 public:
  explicit ScalingTimer(int* calls) : calls_(calls) {}
  absl::StatusOr<BlockTiming> Attention(const TrainingStep& s, int64_t) override {
    ++*calls_;
    const double t = 1e-7 * static_cast<double>(s.tokens_per_microbatch()) / s.tp();
    return BlockTiming{.forward_seconds = t, .backward_seconds = 2 * t,
                       .core_forward_seconds = t / 2};
  }
  absl::StatusOr<BlockTiming> Ffn(const TrainingStep& s, int64_t) override {
    ++*calls_;
    const double t = 2e-7 * static_cast<double>(s.tokens_per_microbatch()) / s.tp();
    return BlockTiming{.forward_seconds = t, .backward_seconds = 2 * t};
  }
  absl::StatusOr<BlockTiming> Embedding(const TrainingStep&) override {
    ++*calls_;
    return BlockTiming{.forward_seconds = 1e-5, .backward_seconds = 2e-5};
  }
  absl::StatusOr<BlockTiming> LmHead(const TrainingStep&) override {
    ++*calls_;
    return BlockTiming{.forward_seconds = 1e-4, .backward_seconds = 2e-4};
  }
  absl::StatusOr<double> OptimizerSeconds(const TrainingStep&, double elements) override {
    ++*calls_;
    return elements * 1e-12;
  }

 private:
  int* calls_;
};

struct Fixture {
  Chip chip = *ResolveChip("gpu_h100");
  Topology topology = *Topology::Create(chip, "16");
  ModelConfig model = *ResolveModel("mixtral_8x7b");
  TrainingStepSpec base;
  Fixture() {
    base.set_model("mixtral_8x7b");
    base.set_hw("gpu_h100");
    base.set_devices(16);
    base.set_global_batch(64);
    base.set_seq_len(4096);
  }
};

TEST(StepSweepTest, RanksFittingPlansAndCountsTheOthers) {
  Fixture f;
  StepSweepSpace space;
  space.pp = {1, 2, 3};  // 3 does not divide 16 devices
  space.tp = {1, 2};
  space.ep = {1, 8};
  space.micro_batch = {1, 2};
  StepRemat full;
  full.set_policy(REMAT_FULL);
  space.remat = {StepRemat(), full};
  int calls = 0;
  CachedBlockTimer timer(std::make_unique<ScalingTimer>(&calls));
  absl::StatusOr<StepSweepResult> r = SweepSteps(f.base, f.model, space, f.chip, f.topology, timer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plans, 3 * 2 * 2 * 2 * 2);
  EXPECT_EQ(space.size(), r->plans);
  ASSERT_FALSE(r->ranked.empty());
  for (size_t i = 1; i < r->ranked.size(); ++i) {
    EXPECT_GE(r->ranked[i - 1].tokens_per_second_per_device,
              r->ranked[i].tokens_per_second_per_device);
  }
  int64_t accounted = static_cast<int64_t>(r->ranked.size());
  bool saw_divide = false;
  for (const auto& [reason, count] : r->infeasible) {
    accounted += count;
    saw_divide |= absl::StrContains(reason, "dp = rest needs devices divisible");
  }
  EXPECT_EQ(accounted, r->plans);  // every plan is ranked or has a reason
  EXPECT_TRUE(saw_divide);
  // The cache: every distinct block is asked of the inner timer once, however many plans use
  // it; the miss count is what reached it.
  EXPECT_EQ(calls, r->block_simulations);
  EXPECT_GT(timer.hits(), timer.misses());
  // Deterministic: the same sweep ranks the same plans the same way.
  int calls2 = 0;
  CachedBlockTimer timer2(std::make_unique<ScalingTimer>(&calls2));
  absl::StatusOr<StepSweepResult> again =
      SweepSteps(f.base, f.model, space, f.chip, f.topology, timer2);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->ranked.size(), r->ranked.size());
  for (size_t i = 0; i < r->ranked.size(); ++i) {
    EXPECT_EQ(again->ranked[i].step_seconds, r->ranked[i].step_seconds);
    EXPECT_EQ(again->ranked[i].spec.SerializeAsString(), r->ranked[i].spec.SerializeAsString());
  }
}

// Each ranked plan's figures are PredictStep's for that plan.
TEST(StepSweepTest, RankedFiguresAreThePlansPrediction) {
  Fixture f;
  StepSweepSpace space;
  space.pp = {1, 2};
  space.ep = {1, 8};
  // Without these Mixtral's states or activations exceed 80 GB on every plan.
  space.remat[0].set_policy(REMAT_FULL);
  f.base.mutable_parallelism()->set_zero(ZERO_1);
  int calls = 0;
  CachedBlockTimer timer(std::make_unique<ScalingTimer>(&calls));
  absl::StatusOr<StepSweepResult> r =
      SweepSteps(f.base, f.model, space, f.chip, f.topology, timer, /*keep=*/2);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_LE(r->ranked.size(), 2u);
  ASSERT_FALSE(r->ranked.empty());
  const StepSweepPlan& best = r->ranked[0];
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(best.spec, f.model);
  ASSERT_TRUE(step.ok()) << step.status();
  int fresh_calls = 0;
  ScalingTimer fresh(&fresh_calls);
  absl::StatusOr<StepPrediction> p = PredictStep(*step, f.chip, f.topology, fresh);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->step_seconds, best.step_seconds);
  EXPECT_EQ(p->tokens_per_second_per_device, best.tokens_per_second_per_device);
}

// The default space of a GPU node: tp up to the NVLink domain (8 on H100), ep dividing E.
TEST(StepSweepTest, DefaultSpace) {
  Fixture f;
  const StepSweepSpace space = DefaultStepSweepSpace(f.base, f.model, f.chip);
  EXPECT_THAT(space.tp, ::testing::ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(space.ep, ::testing::ElementsAre(1, 2, 4, 8));  // E = 8
  EXPECT_THAT(space.pp, ::testing::ElementsAre(1, 2, 4, 8, 16));
  EXPECT_THAT(space.fsdp, ::testing::ElementsAre(1, 0));
  EXPECT_EQ(space.remat.size(), 3u);
}

}  // namespace
}  // namespace perfsim
