// `perfsim predict`: errors, report contents, and scaling laws the predictions must obey.
#include "sim/predict/predict.h"

#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/moe/model_registry.h"
#include "sim/report/predict_report.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

// DeepSeek-V3's expert shapes, data parallel over 8 H100s with argsort + ragged_dot.
PredictOptions DeepSeekOnH100(int64_t seq, const std::string& routing = "uniform") {
  absl::StatusOr<ModelConfig> model = ResolveModel("deepseek_v3");
  EXPECT_TRUE(model.ok());
  PredictOptions o{.spec = StepSpec::Defaults(*model)};
  o.spec.batch = 8;
  o.spec.seq = seq;
  o.spec.phase = Phase::kForward;
  o.spec.backend = "sparse_ragged_dot";
  o.spec.parallelism = Parallelism{.dp = 8};
  o.hw = "gpu_h100";
  o.mesh = "8";
  absl::StatusOr<RoutingSpec> r = ParseRoutingSpec(routing);
  EXPECT_TRUE(r.ok());
  o.routing = *r;
  return o;
}

double PhaseSeconds(const Prediction& p, const std::string& phase) {
  for (const PhaseTotal& t : p.phases) {
    if (t.phase == phase) return t.seconds;
  }
  return 0;
}

TEST(PredictTest, DoublingTokensDoublesExpertTimeWhenComputeBound) {
  // 16384 tokens per device × K=8 = 131072 rows over the 256 experts, 512 rows each, through
  // [7168 × 2048] weights: the GPU grouped GEMM reads each expert's weights once (they fit the
  // L2), so it does 2·512 = 1024 flops per weight byte... i.e. 512 per bf16 byte pair, above
  // the H100's ridge (989e12 / 3.35e12 = 295 flops per byte, 255 with the shipped
  // fractions): the grouped matmuls are compute bound at both sizes, and their time (and the
  // elementwise work around them) is linear in rows. (At 4096 tokens, 128 rows per expert,
  // they are bound by reading the 7.5 GB of weights, which does not grow with the rows.)
  absl::StatusOr<Prediction> one = Predict(DeepSeekOnH100(16384));
  absl::StatusOr<Prediction> two = Predict(DeepSeekOnH100(32768));
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  const double ratio = PhaseSeconds(*two, "experts") / PhaseSeconds(*one, "experts");
  EXPECT_NEAR(ratio, 2.0, 0.1);
}

TEST(PredictTest, SkewedRoutingIsNeverFasterThanUniform) {
  absl::StatusOr<Prediction> uniform = Predict(DeepSeekOnH100(1024));
  ASSERT_TRUE(uniform.ok()) << uniform.status();
  for (const char* skew : {"zipf:0.5", "zipf:1.2", "hot:0.3"}) {
    absl::StatusOr<Prediction> skewed = Predict(DeepSeekOnH100(1024, skew));
    ASSERT_TRUE(skewed.ok()) << skewed.status();
    EXPECT_GE(skewed->step_seconds, uniform->step_seconds * (1 - 1e-12)) << skew;
  }
}

TEST(PredictTest, MeshMustMatchTheParallelism) {
  PredictOptions o = DeepSeekOnH100(1024);
  o.mesh = "16";
  absl::StatusOr<Prediction> p = Predict(o);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("expected the parallelism to use the mesh's 16 devices"));
}

TEST(PredictTest, ReportHasEverySection) {
  absl::StatusOr<Prediction> p = Predict(DeepSeekOnH100(1024));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string table = FormatPredictionTable(*p);
  for (const char* s : {"timeline of device", "per phase", "step time", "exposed communication",
                        "MFU", "HBM per device"}) {
    EXPECT_THAT(table, HasSubstr(s));
  }
  const std::string json = PredictionJson(*p);
  for (const char* s : {"\"step_seconds\": ", "\"phases\": [", "\"memory\": {", "\"ops\": [",
                        "\"mfu\": "}) {
    EXPECT_THAT(json, HasSubstr(s));
  }
  const std::string trace = PredictionTrace(*p);
  EXPECT_THAT(trace, HasSubstr("\"traceEvents\": ["));
  EXPECT_THAT(trace, HasSubstr("\"ph\": \"X\""));
  // Model flops: 1024 tokens per device × (routed 2·8·3·7168·2048 + shared 2·1·3·7168·2048 +
  // router 2·7168·256) = 1024 × 774,619,136... per device, forward only.
  const double per_token = 2.0 * 8 * 3 * 7168 * 2048 + 2.0 * 1 * 3 * 7168 * 2048 + 2.0 * 7168 * 256;
  EXPECT_NEAR(p->model_flops_per_device, 1024 * per_token, 1);
  EXPECT_GT(p->mfu, 0);
  EXPECT_LT(p->mfu, 1);
}

// nano (D = 40, F = 56, E = 12, f32, one shared expert of width 56) fwd_bwd, data parallel on 8
// H100s, so every device holds every weight whole.
PredictOptions NanoFwdBwd(const std::string& model) {
  absl::StatusOr<ModelConfig> m = ResolveModel(model);
  EXPECT_TRUE(m.ok()) << m.status();
  PredictOptions o{.spec = StepSpec::Defaults(*m)};
  o.spec.batch = 8;
  o.spec.seq = 8;
  o.spec.phase = Phase::kForwardBackward;
  o.spec.backend = "sparse_ragged_dot";
  o.spec.parallelism = Parallelism{.dp = 8};
  o.hw = "gpu_h100";
  o.mesh = "8";
  return o;
}

TEST(PredictMemory, GradientsAndAdamStateCountTrainedParametersNotTheScoreCorrectionBias) {
  // Parameter bytes, f32: router_w D·E = 40·12·4 = 1920; wi_0, wi_1, wo E·D·F = 12·40·56·4 =
  // 107520 each; ws_0, ws_1, ws_o D·H = 40·56·4 = 8960 each; one router bias [E] = 48. Total
  // 1920 + 3·107520 + 3·8960 + 48 = 351408.
  // nano's bias is DeepSeek-V3's score-correction bias (router_score_bias): it picks experts
  // and gets no gradient, so gradients are 351408 − 48 = 351360.
  // With Adam, the optimizer holds two f32 moments per trained element: 8 · 351360 / 4.
  PredictOptions o = NanoFwdBwd("nano");
  o.adam = true;
  absl::StatusOr<Prediction> deepseek_style = Predict(o);
  ASSERT_TRUE(deepseek_style.ok()) << deepseek_style.status();
  EXPECT_EQ(deepseek_style->memory.parameters, 351408);
  EXPECT_EQ(deepseek_style->memory.gradients, 351360);
  EXPECT_EQ(deepseek_style->memory.optimizer, 8 * 351360 / 4);
  // The same with GPT-OSS's trained router matmul bias (router_bias) instead: it has a
  // gradient like every weight, so gradients equal parameters.
  std::ifstream in(std::string(PERFSIM_SOURCE_DIR) + "/models/nano.textproto");
  std::stringstream text;
  text << in.rdbuf();
  std::string model = text.str();
  const std::string score_bias = "has_score_correction_bias: true";
  ASSERT_NE(model.find(score_bias), std::string::npos);
  model.replace(model.find(score_bias), score_bias.size(), "has_bias: true");
  const std::string path = ::testing::TempDir() + "/nano_router_bias.textproto";
  std::ofstream(path) << model;
  o = NanoFwdBwd(path);
  o.adam = true;
  absl::StatusOr<Prediction> gpt_oss_style = Predict(o);
  ASSERT_TRUE(gpt_oss_style.ok()) << gpt_oss_style.status();
  EXPECT_EQ(gpt_oss_style->memory.parameters, 351408);
  EXPECT_EQ(gpt_oss_style->memory.gradients, 351408);
  EXPECT_EQ(gpt_oss_style->memory.optimizer, 8 * 351408 / 4);
}

TEST(PredictCliTest, BadInputExitsTwo) {
  const CliResult unknown_hw = RunCli({"predict", "--hw", "tpu_v9"});
  EXPECT_EQ(unknown_hw.code, 2);
  EXPECT_THAT(unknown_hw.err, HasSubstr("unknown hardware 'tpu_v9'"));
  EXPECT_EQ(RunCli({"predict", "--routing", "zipf:x"}).code, 2);
  EXPECT_EQ(RunCli({"predict", "--parallelism", "ep=3"}).code, 2);
}

}  // namespace
}  // namespace perfsim
