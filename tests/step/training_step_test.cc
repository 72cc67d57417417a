// Whole-step specs (sim/step/training_step.h): the parallelism strings of the published rows,
// derived quantities, and the divisibility errors that name the numbers.
#include "sim/step/training_step.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/textproto.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

TrainingStepSpec Spec(const std::string& model, int64_t devices, int64_t gbs, int64_t seq,
                      const std::string& parallelism) {
  TrainingStepSpec proto;
  proto.set_model(model);
  proto.set_devices(devices);
  proto.set_global_batch(gbs);
  proto.set_seq_len(seq);
  absl::Status s = ApplyParallelismString(parallelism, proto);
  EXPECT_TRUE(s.ok()) << s;
  return proto;
}

// calibration.csv M119: DeepSeek-V3 on 256 GB200, "TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest",
// GBS 4096 x 4096: dp = 256 / 4 = 64, 4096 / (1 · 64) = 64 micro-batches per step, 16 chunks
// for 61 layers (uneven: the first 13 chunks hold 4 layers, the other 3 hold 3).
TEST(TrainingStepTest, MegatronBridgeString) {
  TrainingStepSpec proto =
      Spec("deepseek_v3", 256, 4096, 4096, "TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest");
  proto.mutable_parallelism()->set_uneven_pipeline(true);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->dp(), 64);
  EXPECT_EQ(step->pp(), 4);
  EXPECT_EQ(step->vp(), 4);
  EXPECT_EQ(step->ep(), 64);
  EXPECT_EQ(step->fsdp(), 1);
  EXPECT_EQ(step->microbatches(), 64);
  EXPECT_EQ(step->tokens_per_microbatch(), 4096);
  EXPECT_EQ(step->pipeline().kind, PipelineScheduleKind::kInterleavedOneFOneB);
  EXPECT_EQ(step->layers_in_chunk(0), 4);
  EXPECT_EQ(step->layers_in_chunk(12), 4);
  EXPECT_EQ(step->layers_in_chunk(13), 3);
  EXPECT_EQ(step->first_layer_of_chunk(15), 58);
  int64_t sum = 0;
  for (int64_t c = 0; c < 16; ++c) sum += step->layers_in_chunk(c);
  EXPECT_EQ(sum, 61);
}

// M148 (NeMo Automodel): "TP1 PP4 CP1 EP64 VP8 FSDP64 MBS1 LBS8 GA1" on 256 H100, GBS 512:
// FSDP over 64, dp = 256 / (64 · 4) = 1, 512 / 64 = 8 micro-batches ("LBS8").
TEST(TrainingStepTest, AutomodelString) {
  TrainingStepSpec proto =
      Spec("deepseek_v3", 256, 512, 4096, "TP1 PP4 CP1 EP64 VP8 FSDP64 MBS1 LBS8 GA1");
  proto.mutable_parallelism()->set_uneven_pipeline(true);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->fsdp(), 64);
  EXPECT_EQ(step->dp(), 1);
  EXPECT_EQ(step->microbatches(), 8);
}

// M108 (MaxText): "ICI FSDP 32 x TP 4" on 128 v5p chips, 512 sequences: 16 per fsdp shard.
TEST(TrainingStepTest, MaxTextString) {
  TrainingStepSpec proto = Spec("llama4_maverick", 128, 512, 8192, "ICI FSDP 32 x TP 4");
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->fsdp(), 32);
  EXPECT_EQ(step->tp(), 4);
  EXPECT_EQ(step->dp(), 1);
  EXPECT_EQ(step->microbatches(), 16);
}

// M153's recipe prose after "(" is ignored; ETP1 is accepted, ETP2 is not modelled.
TEST(TrainingStepTest, GuideStringWithProse) {
  TrainingStepSpec proto = Spec("deepseek_v3", 256, 2048, 4096,
                                "TP1 PP8 VPP4 EP32 ETP1 CP1 MBS1 (PP layout Et|(tt|)*30L)");
  EXPECT_EQ(proto.parallelism().vp(), 4);
  EXPECT_EQ(proto.parallelism().pp(), 8);
  TrainingStepSpec bad;
  absl::Status s = ApplyParallelismString("TP1 ETP2", bad);
  EXPECT_THAT(s.message(), HasSubstr("expected ETP1; got ETP2"));
}

TEST(TrainingStepTest, BadWordsNameThemselves) {
  TrainingStepSpec proto;
  EXPECT_THAT(ApplyParallelismString("TP1 ZZ4", proto).message(), HasSubstr("got 'ZZ4'"));
  EXPECT_THAT(ApplyParallelismString("TP", proto).message(),
              HasSubstr("expected a count after TP"));
  EXPECT_THAT(ApplyParallelismString("TP=rest", proto).message(),
              HasSubstr("only DP may be the rest"));
  EXPECT_THAT(ApplyParallelismString("TP99999999999", proto).message(),
              HasSubstr("expected TP followed by a count"));
  EXPECT_THAT(ApplyParallelismString("4 TP", proto).message(),
              HasSubstr("expected an axis name"));
}

// Every divisibility problem at once, each naming its numbers.
TEST(TrainingStepTest, DivisibilityErrorsNameTheNumbers) {
  TrainingStepSpec proto = Spec("deepseek_v3", 0, 100, 4096, "TP3 PP16 EP7 DP8 CP3");
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_FALSE(step.ok());
  const std::string m(step.status().message());
  EXPECT_THAT(m, HasSubstr("tp 3 does not divide the model's 128 query heads"));
  EXPECT_THAT(m, HasSubstr("ep 7 does not divide the model's 256 experts"));
  EXPECT_THAT(m, HasSubstr("ep 7 does not divide the data-parallel devices dp · fsdp · cp = 8 · 1 · 3 = 24"));
  EXPECT_THAT(m, HasSubstr("pp · vp = 16 chunks do not divide the model's 61 layers (61 % 16 = 13)"));
  EXPECT_THAT(m, HasSubstr("global_batch: 100 sequences do not split into micro_batch 1 · dp 8 · fsdp 1 = 8"));
  EXPECT_THAT(m, HasSubstr("seq_len: 4096 does not split into 2 · cp = 6"));
}

TEST(TrainingStepTest, DeviceCountMustMatch) {
  TrainingStepSpec proto = Spec("mixtral_8x7b", 64, 64, 4096, "TP2 DP8");
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(),
              HasSubstr("devices 64 = dp · fsdp · cp · tp · pp: expected 64; got 8 · 1 · 1 · 2 · 1 = 16"));
  // GQA: Mixtral's 8 KV heads do not split over tp 16.
  TrainingStepSpec kv = Spec("mixtral_8x7b", 16, 16, 4096, "TP16");
  step = TrainingStep::FromProto(kv);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(),
              HasSubstr("tp 16 does not divide the model's 8 key/value heads"));
}

TEST(TrainingStepTest, RangesAndRemat) {
  TrainingStepSpec proto = Spec("mixtral_8x7b", 8, 0, 4096, "DP8");
  proto.mutable_remat()->set_policy(REMAT_SELECTIVE);
  proto.mutable_remat()->add_recompute("everything");
  proto.mutable_precision()->set_grad_bytes(3);
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(), HasSubstr("global_batch: expected a value in [1, "));
  EXPECT_THAT(step.status().message(), HasSubstr("grad_bytes: expected 1, 2 or 4 bytes; got 3"));
  proto.set_global_batch(8);
  proto.mutable_precision()->clear_grad_bytes();
  step = TrainingStep::FromProto(proto);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(), HasSubstr("got 'everything'"));
}

// Interleaving needs m a multiple of p (Megatron's rule, pipeline_schedule.h).
TEST(TrainingStepTest, InterleavedNeedsMicrobatchesMultipleOfStages) {
  TrainingStepSpec proto = Spec("mixtral_8x7b", 8, 6, 4096, "PP4 VP2 DP2");
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(), HasSubstr("parallelism: "));
}

// MaxText's remat_policy names become the modules they recompute.
TEST(TrainingStepTest, MaxTextRematPolicies) {
  absl::StatusOr<StepRemat> r = RematFromMaxTextPolicy("save_dot_except_mlp");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->policy(), REMAT_SELECTIVE);
  EXPECT_THAT(std::vector<std::string>(r->recompute().begin(), r->recompute().end()),
              ::testing::ElementsAre("core_attn", "mlp", "moe"));
  r = RematFromMaxTextPolicy("full");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->policy(), REMAT_FULL);
  r = RematFromMaxTextPolicy("minimal");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->recompute_size(), 1);
  EXPECT_EQ(r->recompute(0), "core_attn");
  r = RematFromMaxTextPolicy("save_everything");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("expected one of MaxText's none, full"));
  EXPECT_THAT(r.status().message(), HasSubstr("got 'save_everything'"));
  // Every mapped policy validates as a step's remat.
  for (const char* name : {"none", "full", "save_out_proj", "custom", "save_qkv_proj",
                           "qkv_proj_offloaded", "save_dot_except_mlp", "save_dot_except_mlpwi",
                           "save_dot_with_context_except_mlp", "minimal", "minimal_offloaded",
                           "minimal_with_context"}) {
    TrainingStepSpec proto = Spec("mixtral_8x7b", 8, 8, 4096, "DP8");
    absl::StatusOr<StepRemat> policy = RematFromMaxTextPolicy(name);
    ASSERT_TRUE(policy.ok()) << name;
    *proto.mutable_remat() = *policy;
    EXPECT_TRUE(TrainingStep::FromProto(proto).ok()) << name;
  }
}

// The textproto form.
TEST(TrainingStepTest, TextprotoForm) {
  TrainingStepSpec proto;
  ASSERT_TRUE(ParseTextProto(R"pb(
    model: "qwen3_30b_a3b" devices: 8 global_batch: 512 seq_len: 4096 micro_batch: 4
    parallelism { ep: 8 }
  )pb", "step.textproto", &proto).ok());
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->dp(), 8);  // dp 0 = the rest
  EXPECT_EQ(step->microbatches(), 16);
}

}  // namespace
}  // namespace perfsim
