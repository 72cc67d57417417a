// ring_of_experts: the validate suite (data, expert and tensor parallel, padded kernel rows),
// the kernel calls (only the local groups, the rest zeroed by the kernel), the collectives, a
// tiling megablox refuses, and JAX's expert-parallel goldens (moe_ep_ragged_a2a_fwd / _grad:
// the same MoE function, computed here by a different algorithm).
//
// Model nano (D = 40, F = 56, E = 12, K = 2, shared expert), batch 4 × seq 16 = 64 tokens.
// Tolerance: validate's 1e-5 ∞-norm relative error for f32 (sim/validate/validate.h).
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "sim/validate/validate.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::ExpectAllPass;
using ::perfsim::testing::TestStepSpec;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kBackend[] = "ring_of_experts";

StepSpec NanoSpec(Phase phase, Parallelism p = {}) {
  StepSpec spec = TestStepSpec("nano", kBackend, phase);
  spec.parallelism = p;
  return spec;
}

TEST(RingOfExpertsTest, DefaultParallelismPutsTheLargestDivisorOfEOnEp) {
  const MoeBackend* backend = *FindBackend(kBackend);
  const StepSpec spec = NanoSpec(Phase::kForward);
  const Parallelism p8 = backend->DefaultParallelism(8, spec);  // 8 does not divide E = 12
  EXPECT_EQ(p8.ep, 4);
  EXPECT_EQ(p8.fsdp, 2);  // the rest shards D = 40 (ExpertParallelWithFsdp, lowering.h)
  EXPECT_EQ(p8.dp, 1);
  EXPECT_EQ(backend->DefaultParallelism(2, spec).ep, 2);
}

TEST(RingOfExpertsTest, ValidateSuitePassesEveryCase) {
  // 5 router families × 4 routings × 2 phases × devices 1, 2, 4, 8 (ep 1, 2, 4, 4 with fsdp 2).
  SuiteOptions options{.base = NanoSpec(Phase::kForward), .backends = {kBackend}};
  EXPECT_EQ(ExpectAllPass(RunSuite(options), /*tolerance=*/1e-5), 160);
}

TEST(RingOfExpertsTest, ValidateSuitePassesWithTensorParallelism) {
  for (Parallelism p : {Parallelism{.ep = 2, .tp = 2}, Parallelism{.dp = 2, .ep = 2, .tp = 2},
                        Parallelism{.tp = 4}}) {
    SCOPED_TRACE(ParallelismToString(p));
    SuiteOptions options{
        .base = NanoSpec(Phase::kForward), .backends = {kBackend}, .parallelism = p};
    EXPECT_EQ(ExpectAllPass(RunSuite(options), /*tolerance=*/1e-5), 40);
  }
}

TEST(RingOfExpertsTest, ValidateSuitePassesWithPaddedKernelRows) {
  // Every row tile 48: the gathered rows M = EP·T_l·K = 64·2 = 128 (64 with K = 1) pad to 144
  // (96) on 1 and 4 devices. On one device all E groups are local (G_local = G), so the padding
  // rows the kernel never writes are poisoned, and must be sliced off before anything reads them.
  SuiteOptions options{
      .base = NanoSpec(Phase::kForward), .backends = {kBackend}, .devices = {1, 4}};
  for (ProjectionTilings* t : {&options.base.knobs.wi, &options.base.knobs.wo}) {
    t->fwd.tm = t->dlhs.tm = t->drhs.tm = 48;
  }
  EXPECT_EQ(ExpectAllPass(RunSuite(options), /*tolerance=*/1e-5), 80);
  StepSpec spec = options.base;
  spec.parallelism = {.ep = 4};
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  int pads = 0;
  for (const auto& i : step->module->entry()->instructions()) {
    if (i->opcode() == Opcode::kPad) {
      EXPECT_EQ(i->shape().dimensions(0), 144) << i->name();
      ++pads;
    }
  }
  EXPECT_GT(pads, 0);
}

struct KernelCall {
  std::string target;
  std::vector<int64_t> lhs, rhs, group_sizes, result;
  std::string config;
};

std::vector<KernelCall> KernelCalls(const Module& module) {
  std::vector<KernelCall> calls;
  for (const auto& i : module.entry()->instructions()) {
    const std::string& target = i->attributes().custom_call_target;
    if (i->opcode() != Opcode::kCustomCall || (target != kGmmTarget && target != kTgmmTarget)) {
      continue;
    }
    calls.push_back({target, i->operand(0)->shape().dimensions(),
                     i->operand(1)->shape().dimensions(), i->operand(2)->shape().dimensions(),
                     i->shape().dimensions(), i->attributes().backend_config.value_or("")});
  }
  return calls;
}

TEST(RingOfExpertsTest, KernelsRunTheLocalGroupsOverAllGatheredRows) {
  // ep = 4: M = 4·16·2 = 128 gathered rows, group sizes over all E = 12 (rolled so that this
  // shard's E_l = 3 experts come first), rhs the local [3, ...] weights, group_offset 0:
  // G_local = 3 < G = 12, so megablox zeroes the rows of the other 9 groups. Default tiles
  // (512, 1024, 1024): the row tile shrinks to the 128 rows (no padding), tk and tn run as
  // configured (megablox_calls.h).
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForwardBackward, {.ep = 4}));
  ASSERT_TRUE(step.ok()) << step.status();
  const std::vector<KernelCall> calls = KernelCalls(*step->module);
  ASSERT_EQ(calls.size(), 9u);  // gmm: 3 forward, 3 dlhs; tgmm: 3 drhs
  int gmm = 0, tgmm = 0;
  for (const KernelCall& c : calls) {
    EXPECT_EQ(c.group_sizes, (std::vector<int64_t>{12}));
    EXPECT_THAT(c.config, HasSubstr("\"group_offset\":0"));
    if (c.target == kGmmTarget) {
      ++gmm;
      EXPECT_EQ(c.lhs[0], 128);
      EXPECT_EQ(c.rhs[0], 3);
      EXPECT_EQ(c.result[0], 128);
    } else {
      ++tgmm;
      EXPECT_EQ(c.lhs[1], 128);  // lhs transposed [k, m]
      EXPECT_EQ(c.result[0], 3);
    }
  }
  EXPECT_EQ(gmm, 6);
  EXPECT_EQ(tgmm, 3);
  EXPECT_EQ(calls[0].config,
            R"({"tiling":[128,1024,1024],"transpose_rhs":false,"group_offset":0})");
  // The collectives of 1a.4: x, ids, weights all-gathered (forward), y reduce-scattered over ep;
  // backward: dy all-gathered, d_weights and dx reduce-scattered. No all-to-all.
  int all_gathers = 0, reduce_scatters = 0;
  for (const auto& i : step->module->entry()->instructions()) {
    EXPECT_NE(i->opcode(), Opcode::kRaggedAllToAll);
    EXPECT_NE(i->opcode(), Opcode::kAllToAll);
    all_gathers += i->opcode() == Opcode::kAllGather;
    reduce_scatters += i->opcode() == Opcode::kReduceScatter;
  }
  EXPECT_EQ(all_gathers, 4);
  EXPECT_EQ(reduce_scatters, 3);
}

TEST(RingOfExpertsTest, ARowTileMegabloxRefusesFailsTheLowering) {
  // wi.fwd tm 48 pads 128 gathered rows to 144; a wo.dlhs tm of 96 does not divide 144.
  StepSpec spec = NanoSpec(Phase::kForwardBackward, {.ep = 4});
  spec.knobs.wi.fwd.tm = 48;
  spec.knobs.wo.dlhs.tm = 96;
  absl::Status status = LowerStep(spec).status();
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("wo.dlhs tiling (96, 1024, 1024)"),
                    HasSubstr("expected tm dividing the padded row count m = 144"),
                    HasSubstr("128 gathered rows EP·T_l·K"), HasSubstr("got tm = 96")));
  ValidationCase c{.spec = spec};
  ReferenceCache cache;
  ValidationResult r = ValidateCase(c, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.skipped);
  // The forward never runs the dlhs kernel.
  spec.phase = Phase::kForward;
  EXPECT_TRUE(LowerStep(spec).ok());
}

ModelConfig GoldenModel() {
  ModelSpec spec;
  spec.set_name("jax_golden");
  spec.set_d_model(24);
  spec.set_expert_ffn_dim(40);
  spec.set_num_experts(16);
  spec.set_experts_per_token(2);
  spec.set_num_layers(1);
  spec.set_num_moe_layers(1);
  spec.mutable_activation()->set_kind(ACTIVATION_KIND_SILU);
  spec.mutable_activation()->set_gated(true);
  spec.mutable_router()->set_kind(ROUTER_KIND_SOFTMAX_TOPK);
  spec.mutable_router()->set_renormalize(true);
  spec.mutable_router()->set_dtype(DTYPE_F32);
  spec.set_param_dtype(DTYPE_F32);
  spec.set_activation_dtype(DTYPE_F32);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

Literal LoadGolden(const std::string& name) {
  absl::StatusOr<Literal> lit = ReadNpyFile(std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/" + name);
  EXPECT_TRUE(lit.ok()) << name << ": " << lit.status();
  return lit.ok() ? *std::move(lit) : Literal();
}

double RelativeError(const Literal& got, const Literal& want) {
  double max_want = 0, max_diff = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
    const double diff = std::fabs(got.GetAsDouble(i) - want.GetAsDouble(i));
    if (!(diff <= max_diff)) max_diff = diff;
  }
  return max_diff / max_want;
}

// JAX's goldens come from the ragged-all-to-all program at ep = 8 (T = 64, D = 24, F = 40,
// E = 16, K = 2); ring of experts computes the same MoE at ep = 8 (E_l = 2, 128 gathered rows)
// by another route, so its y and gradients must match them too. f32 on both sides, different
// summation orders: a few ulps (~1e-7) apart, inside 1e-5.
TEST(RingOfExpertsTest, MatchesJaxExpertParallelForwardAndGradient) {
  for (Phase phase : {Phase::kForward, Phase::kForwardBackward}) {
    const bool grad = phase == Phase::kForwardBackward;
    const std::string name = grad ? "moe_ep_ragged_a2a_grad" : "moe_ep_ragged_a2a_fwd";
    SCOPED_TRACE(name);
    StepSpec spec = StepSpec::Defaults(GoldenModel());
    spec.batch = 1;
    spec.seq = 64;
    spec.phase = phase;
    spec.backend = kBackend;
    spec.parallelism = {.ep = 8};
    absl::StatusOr<LoweredStep> step = LowerStep(spec);
    ASSERT_TRUE(step.ok()) << step.status();
    const int64_t n = 8;
    std::vector<std::vector<Literal>> inputs(n);
    for (size_t i = 0; i < step->parameters.size(); ++i) {
      Literal global = LoadGolden(name + ".in" + std::to_string(i) + ".npy");
      for (int64_t d = 0; d < n; ++d) {
        inputs[d].push_back(ShardOf(global, step->parameters[i], spec.parallelism, d));
      }
    }
    InterpreterOptions options;
    options.num_devices = n;
    absl::StatusOr<RunResult> run = RunModule(*step->module, inputs, options);
    ASSERT_TRUE(run.ok()) << run.status();
    const int outputs = grad ? 5 : 1;
    for (int o = 0; o < outputs; ++o) {
      const size_t ours = grad ? o + 1 : 0;  // grad: dx, d_router_w, d_wi_0, d_wi_1, d_wo
      std::vector<Literal> shards;
      for (int64_t d = 0; d < n; ++d) shards.push_back(run->outputs[d][ours]);
      absl::StatusOr<Literal> got = Unshard(shards, step->outputs[ours], spec.parallelism);
      ASSERT_TRUE(got.ok()) << got.status();
      Literal want = LoadGolden(name + ".out" + std::to_string(o) + ".npy");
      ASSERT_EQ(got->shape().dimensions(), want.shape().dimensions());
      EXPECT_LE(RelativeError(*got, want), 1e-5) << step->outputs[ours].name;
    }
  }
}

}  // namespace
}  // namespace perfsim
