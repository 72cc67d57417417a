// `perfsim validate --block` (sim/validate/block_validate.h): every block of nano and of built-in
// models, lowered for tp devices, agrees with the block on one device within kBlockTolerance;
// a lowering with a planted bug (a dropped tensor-parallel all-reduce) is caught; the command
// line's exit codes and messages.
#include "sim/validate/block_validate.h"

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "sim/ir/opcode.h"
#include "sim/lowering/attention.h"
#include "sim/lowering/dense_layers.h"
#include "sim/moe/model_registry.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

ModelConfig Model(const std::string& name) {
  absl::StatusOr<ModelConfig> model = ResolveModel(name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

struct Counts {
  int pass = 0, fail = 0, skip = 0;
  double worst = 0;
  std::map<std::string, int> cases;  // "attention chunked+rope" -> count of run cases
};

Counts CountOf(const std::vector<BlockValidationResult>& results) {
  Counts c;
  for (const BlockValidationResult& r : results) {
    (r.skipped ? c.skip : r.pass ? c.pass : c.fail)++;
    if (!r.skipped) {
      ++c.cases[r.layer_kind.empty() ? r.block : absl::StrCat(r.block, " ", r.layer_kind)];
    }
    for (const TensorError& e : r.errors) c.worst = std::max(c.worst, e.max_rel_error);
    EXPECT_TRUE(r.pass || r.skipped)
        << r.block << " " << r.layer_kind << " " << r.phase << " tp " << r.tp
        << (r.sequence_parallel ? " sp" : "") << ": " << r.message;
  }
  return c;
}

// nano: one global+rope GQA layer (4 query heads, 2 K/V heads), no dense FFN, no vocabulary.
// tp = 2 and 4 (4 > 2 K/V heads: each K/V head replicated on two devices), sequence
// parallelism off and on, fwd and fwd_bwd: 8 cases, every output and gradient compared.
TEST(BlockValidateTest, NanoAttentionAgreesOnEveryTp) {
  absl::StatusOr<std::vector<BlockValidationResult>> results =
      ValidateBlocks({.model = Model("nano"), .max_devices = 4});
  ASSERT_TRUE(results.ok()) << results.status();
  const Counts c = CountOf(*results);
  EXPECT_EQ(c.pass, 8);
  // The dense FFN, embedding and LM head nano lacks: one skipped line each, after attention.
  EXPECT_EQ(c.skip, 3);
  ASSERT_EQ(results->size(), 11u);
  EXPECT_EQ(results->back().block, "lm_head");
  EXPECT_EQ(results->back().message, "the model has no vocabulary (vocab_size 0)");
  EXPECT_EQ(c.cases.at("attention global+rope"), 8);
  EXPECT_LE(c.worst, kBlockTolerance);
  // The fwd_bwd cases compared y, dx and a gradient per weight: wq, wk, wv, wo.
  const BlockValidationResult& last = (*results)[7];
  EXPECT_EQ(last.phase, "fwd_bwd");
  ASSERT_EQ(last.errors.size(), 6u);
  EXPECT_EQ(last.errors[5].tensor, "d_wo");
  EXPECT_EQ(last.message, "f32");  // nano is not scaled
}

// Llama 4 Maverick, scaled down: two attention kinds (chunked+rope on layers 0-2, global NoPE
// on layer 3), the dense FFN, the embedding and the LM head, up to tp = 8 (40 query and 8 K/V
// heads, F = 64, V = 96 all divide).
TEST(BlockValidateTest, Llama4EveryBlockAgreesOnEveryTp) {
  absl::StatusOr<std::vector<BlockValidationResult>> results =
      ValidateBlocks({.model = Model("llama4_maverick"), .max_devices = 8});
  ASSERT_TRUE(results.ok()) << results.status();
  const Counts c = CountOf(*results);
  EXPECT_EQ(c.fail, 0);
  EXPECT_EQ(c.skip, 0);
  // Attention: 2 phases x 3 tps x sp off/on; the others 2 phases x 3 tps.
  EXPECT_EQ(c.cases, (std::map<std::string, int>{{"attention chunked+rope", 12},
                                                 {"attention global+nope", 12},
                                                 {"dense_ffn", 6},
                                                 {"embedding", 6},
                                                 {"lm_head", 6}}));
  EXPECT_LE(c.worst, kBlockTolerance);
  EXPECT_GT(c.worst, 0);  // the tp runs sum in another order: not bit-identical
  EXPECT_THAT(results->front().message, HasSubstr("scaled down: D 5120 -> 64"));
  EXPECT_THAT(results->front().message, HasSubstr("window 8192 -> 4"));
}

// DeepSeek-V3's MLA (128 heads, ranks and widths scaled down), and Qwen3's QK-norm GQA with 4
// K/V heads (tp = 8 replicates each on two devices).
TEST(BlockValidateTest, MlaAndQkNormAttentionAgree) {
  for (const char* name : {"deepseek_v3", "qwen3_235b_a22b"}) {
    absl::StatusOr<std::vector<BlockValidationResult>> results =
        ValidateBlocks({.model = Model(name), .blocks = {Block::kAttention}, .max_devices = 8});
    ASSERT_TRUE(results.ok()) << name << ": " << results.status();
    const Counts c = CountOf(*results);
    EXPECT_EQ(c.pass, 12) << name;
    EXPECT_LE(c.worst, kBlockTolerance) << name;
    if (std::string(name) == "deepseek_v3") {
      EXPECT_EQ(c.cases.begin()->first, "attention mla global+rope");
    }
  }
}

// A tp that does not divide the heads is a skipped case with the lowering's reason.
TEST(BlockValidateTest, TpNotDividingTheHeadsIsSkipped) {
  // nano: 4 query heads; tp = 8 does not divide them.
  absl::StatusOr<std::vector<BlockValidationResult>> results =
      ValidateBlocks({.model = Model("nano"),
                      .blocks = {Block::kAttention},
                      .phases = {Phase::kForward},
                      .max_devices = 8});
  ASSERT_TRUE(results.ok()) << results.status();
  const Counts c = CountOf(*results);
  EXPECT_EQ(c.pass, 4);
  EXPECT_EQ(c.skip, 2);
  EXPECT_THAT(results->back().message, HasSubstr("tp: expected a divisor of the 4 query heads"));
}

// ---- Planted bugs: the comparison can fail.

// Replaces every use of the first forward (or last backward) all-reduce of the entry with its
// operand: each device keeps its partial sum, as a lowering that forgot the collective would.
void DropAllReduce(LoweredLayer& layer, bool backward) {
  Instruction* target = nullptr;
  for (const auto& i : layer.module->entry()->instructions()) {
    if (i->opcode() != Opcode::kAllReduce) continue;
    const bool is_backward = i->annotation()->phase() == Annotation::PHASE_BACKWARD;
    if (is_backward != backward) continue;
    if (target == nullptr || backward) target = i.get();
  }
  ASSERT_NE(target, nullptr) << "no " << (backward ? "backward" : "forward") << " all-reduce";
  for (const auto& i : layer.module->entry()->instructions()) {
    for (int64_t k = 0; k < i->operand_count(); ++k) {
      if (i->operand(k) == target) i->set_operand(k, target->operand(0));
    }
  }
}

AttentionLoweringSpec NanoAttention(int64_t tp, Phase phase) {
  AttentionLoweringSpec spec = AttentionLoweringSpec::FromModel(Model("nano"), 0, 2, 16);
  spec.tp = tp;
  spec.phase = phase;
  return spec;
}

TEST(BlockValidateBrokenTest, UnbrokenLoweringsPassTheSameComparison) {
  absl::StatusOr<LoweredLayer> one = LowerAttention(NanoAttention(1, Phase::kForwardBackward));
  absl::StatusOr<LoweredLayer> two = LowerAttention(NanoAttention(2, Phase::kForwardBackward));
  ASSERT_TRUE(one.ok() && two.ok());
  BlockValidationResult r = CompareBlockLowerings(*one, *two, 2, 1, kBlockTolerance);
  EXPECT_TRUE(r.pass) << r.message;
}

TEST(BlockValidateBrokenTest, DroppedForwardAllReduceIsCaught) {
  absl::StatusOr<LoweredLayer> one = LowerAttention(NanoAttention(1, Phase::kForward));
  absl::StatusOr<LoweredLayer> two = LowerAttention(NanoAttention(2, Phase::kForward));
  ASSERT_TRUE(one.ok() && two.ok());
  DropAllReduce(*two, /*backward=*/false);
  BlockValidationResult r = CompareBlockLowerings(*one, *two, 2, 1, kBlockTolerance);
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_GT(r.errors[0].max_rel_error, 1e-2);  // half of y's sum is missing on each device
  EXPECT_THAT(r.message, HasSubstr("y: relative error"));
  EXPECT_THAT(r.message, HasSubstr("of 2: got"));
}

// The dense FFN's backward all-reduce of the norm output's gradient (Megatron's "f"): without
// it dx, d_norm_scale are partial on each device; y and the weight gradients stay right.
TEST(BlockValidateBrokenTest, DroppedBackwardAllReduceIsCaughtOnTheGradients) {
  const ModelConfig model = Model("llama4_maverick");
  auto lower = [&](int64_t tp) {
    DenseFfnSpec spec = DenseFfnSpec::FromModel(model, 2, 16, tp, Phase::kForwardBackward);
    spec.d_model = 40;
    spec.ffn_dim = 64;
    spec.activation_type = spec.param_type = PrimitiveType::kF32;
    return LowerDenseFfn(spec);
  };
  absl::StatusOr<LoweredLayer> one = lower(1);
  absl::StatusOr<LoweredLayer> four = lower(4);
  ASSERT_TRUE(one.ok() && four.ok()) << one.status() << four.status();
  DropAllReduce(*four, /*backward=*/true);
  BlockValidationResult r = CompareBlockLowerings(*one, *four, 4, 7, kBlockTolerance);
  EXPECT_FALSE(r.pass);
  ASSERT_GE(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].tensor, "y");
  EXPECT_LE(r.errors[0].max_rel_error, kBlockTolerance);
  EXPECT_EQ(r.errors[1].tensor, "dx");
  EXPECT_GT(r.errors[1].max_rel_error, 1e-2);
  EXPECT_THAT(r.message, HasSubstr("dx: relative error"));
}

// ---- The command line.

TEST(BlockValidateCliTest, NanoAttentionPassesWithTheSummaryLine) {
  const auto r = RunCli({"validate", "--block", "attention"});
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("8 passed, 0 failed, 0 skipped; largest relative error"));
  EXPECT_THAT(r.out, HasSubstr("attention  global+rope"));
}

TEST(BlockValidateCliTest, JsonIsAValidateReport) {
  const auto r = RunCli(
      {"validate", "--block=attention", "--phase", "fwd", "--devices", "2", "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  report::ValidateReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &report).ok()) << r.out;
  ASSERT_EQ(report.results_size(), 2);  // tp 2, sequence parallelism off and on
  EXPECT_EQ(report.results(0).block(), "attention");
  EXPECT_EQ(report.results(0).layer_kind(), "global+rope");
  EXPECT_EQ(report.results(0).status(), "pass");
  EXPECT_EQ(report.results(0).parallelism().tp(), 2);
  EXPECT_FALSE(report.results(0).sequence_parallel());
  EXPECT_TRUE(report.results(1).sequence_parallel());
  EXPECT_EQ(report.results(0).errors(0).tensor(), "y");
}

TEST(BlockValidateCliTest, BadInputExitsTwoWithAClearMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--block", "mlp"},
       "--block: expected attention, dense_ffn, embedding, lm_head or all; got 'mlp'"},
      {{"--block", "embedding"}, "--block embedding: nano has no embedding (vocab_size 0)"},
      {{"--block", "dense_ffn"}, "--block dense_ffn: nano has no dense FFN (dense_ffn_dim 0)"},
      {{"--block", "attention", "--devices", "1"},
       "--devices: expected at least 2 (tp = 2, 4, ... up to it); got 1"},
      {{"--block", "attention", "--devices", "x"}, "--devices: expected a device count; got 'x'"},
      {{"--block", "attention", "--phase", "both"}, "--phase"},
      {{"--block", "attention", "--tolerance", "0"}, "--tolerance: expected a positive number"},
      // GPT-OSS's attention sinks and biases are not lowered: nothing can be compared.
      {{"--block", "attention", "--model", "gpt_oss_120b"},
       "expected at least one case to run; got 4 skipped (first: attention: the lowering "
       "refuses the block"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"validate"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = RunCli(args);
    EXPECT_EQ(r.code, 2) << flags[1] << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr(message)) << flags[1];
  }
}

TEST(BlockValidateCliTest, ModelWithoutAttentionExitsTwo) {
  // nano without its attention block.
  std::ifstream in(absl::StrCat(PERFSIM_SOURCE_DIR, "/models/nano.textproto"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = text.find("attention {");
  ASSERT_NE(begin, std::string::npos);
  text.erase(begin, text.find('}', begin) + 1 - begin);
  const std::string path = absl::StrCat(::testing::TempDir(), "/nano.textproto");
  std::ofstream(path) << text;
  const auto r = RunCli({"validate", "--block", "attention", "--model", path});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("--block attention: nano has no attention"));
}

}  // namespace
}  // namespace perfsim
