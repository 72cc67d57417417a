// ep_ragged_a2a: the validate suite (data, expert and tensor parallel), the receive buffers by
// formula, the static receive-buffer check with an undersized buffer (known_bugs.md #10) and an
// adversarial routing run on the interpreter, a combine backward fed the pre-all-to-all tensor
// (known_bugs.md #17), and JAX's own expert-parallel program (the committed goldens
// moe_ep_ragged_a2a_fwd / _grad) on its inputs.
//
// Model nano (D = 40, F = 56, E = 12, K = 2, shared expert), batch 4 × seq 16 = 64 tokens.
// Tolerance: validate's 1e-5 ∞-norm relative error for f32 (sim/validate/validate.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status_matchers.h"
#include "sim/validate/validate.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::ExpectAllPass;
using ::perfsim::testing::StatusIs;
using ::perfsim::testing::TestStepSpec;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kBackend[] = "ep_ragged_a2a";

StepSpec NanoSpec(Phase phase, Parallelism p = {}) {
  StepSpec spec = TestStepSpec("nano", kBackend, phase);
  spec.parallelism = p;
  return spec;
}

TEST(EpRaggedA2aTest, DefaultParallelismPutsTheLargestDivisorOfEOnEp) {
  const MoeBackend* backend = *FindBackend(kBackend);
  const StepSpec spec = NanoSpec(Phase::kForward);
  // E = 12: 1 -> ep 1; 2 -> ep 2; 4 -> ep 4; 8 -> ep 4 (8 does not divide 12), and the other
  // 2 on fsdp, which shards D = 40 (ExpertParallelWithFsdp, lowering.h).
  const int64_t want_ep[] = {1, 2, 4, 4}, want_fsdp[] = {1, 1, 1, 2};
  const int64_t devices[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const Parallelism p = backend->DefaultParallelism(devices[i], spec);
    EXPECT_EQ(p.ep, want_ep[i]) << devices[i];
    EXPECT_EQ(p.fsdp, want_fsdp[i]) << devices[i];
    EXPECT_EQ(p.dp, 1) << devices[i];
    EXPECT_EQ(p.tp, 1) << devices[i];
  }
}

TEST(EpRaggedA2aTest, ValidateSuitePassesEveryCase) {
  // 5 router families × 4 routings × 2 phases × devices 1, 2, 4, 8 (ep 1, 2, 4, 4 with fsdp 2).
  SuiteOptions options{.base = NanoSpec(Phase::kForward), .backends = {kBackend}};
  EXPECT_EQ(ExpectAllPass(RunSuite(options), /*tolerance=*/1e-5), 160);
}

TEST(EpRaggedA2aTest, ValidateSuitePassesWithTensorParallelism) {
  // F split over tp: the wo partial sums are reduce-scattered over D, the combine moves D/TP
  // columns, y is all-gathered back; dx, d_weights and Llama 4's d_scale are summed over tp.
  for (Parallelism p : {Parallelism{.ep = 2, .tp = 2}, Parallelism{.dp = 2, .ep = 2, .tp = 2},
                        Parallelism{.tp = 4}}) {
    SCOPED_TRACE(ParallelismToString(p));
    SuiteOptions options{
        .base = NanoSpec(Phase::kForward), .backends = {kBackend}, .parallelism = p};
    EXPECT_EQ(ExpectAllPass(RunSuite(options), /*tolerance=*/1e-5), 40);
  }
}

std::vector<const Instruction*> Find(const Module& module, Opcode opcode, absl::string_view stage) {
  std::vector<const Instruction*> found;
  const std::string scope = absl::StrCat("op_name=\"moe/", stage, "\"");
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->opcode() == opcode &&
        instruction->attributes().metadata.find(scope) != std::string::npos) {
      found.push_back(instruction.get());
    }
  }
  return found;
}

// The receive buffer (output operand) of each ragged-all-to-all of `stage`, and what it declares
// (its annotation's RaggedBuffer in text format, "" when it has none).
struct Buffer {
  std::vector<int64_t> dims;
  std::string target;
  std::string declared;
};

std::string DeclaredBuffer(const Instruction& a2a) {
  const Annotation* annotation = a2a.annotation();
  if (annotation == nullptr || !annotation->has_buffer()) return "";
  return annotation->buffer().ShortDebugString();
}

std::vector<Buffer> ReceiveBuffers(const Module& module, absl::string_view stage) {
  std::vector<Buffer> buffers;
  for (const Instruction* a2a : Find(module, Opcode::kRaggedAllToAll, stage)) {
    const Instruction* out = a2a->operand(1);
    buffers.push_back({out->shape().dimensions(),
                       out->opcode() == Opcode::kCustomCall
                           ? out->attributes().custom_call_target
                           : std::string(OpcodeSpelling(out->opcode())),
                       DeclaredBuffer(*a2a)});
  }
  return buffers;
}

TEST(EpRaggedA2aTest, ReceiveBuffersHaveMaxTextsSizeUninitialised) {
  // nano at ep = 4: T_l = 64/4 = 16, K = 2, EP = 4, E/K = 6. Dispatch receive buffer
  // R = T_l·K·min(EP, E/K) = 16·2·min(4, 6) = 128 rows of D = 40: every one of the 4·16 tokens
  // of the group can send both picks to one shard (E_l = 3 ≥ K), 4·16·2 = 128, so R is the
  // worst case exactly. The combine receives this device's own T_l·K = 32 rows back. Both are
  // jax.lax.empty (AllocateBuffer, poisoned in the interpreter).
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForwardBackward, {.ep = 4}));
  ASSERT_TRUE(step.ok()) << step.status();
  const std::string alloc(kAllocateBufferTarget);
  std::vector<Buffer> dispatch = ReceiveBuffers(*step->module, "dispatch");
  ASSERT_EQ(dispatch.size(), 1u);
  EXPECT_EQ(dispatch[0].dims, (std::vector<int64_t>{128, 40}));
  EXPECT_EQ(dispatch[0].target, alloc);
  EXPECT_EQ(dispatch[0].declared, "received: RECEIVED_EXPERT_ROWS");
  std::vector<Buffer> combine = ReceiveBuffers(*step->module, "combine");
  ASSERT_EQ(combine.size(), 1u);
  EXPECT_EQ(combine[0].dims, (std::vector<int64_t>{32, 40}));
  EXPECT_EQ(combine[0].target, alloc);
  EXPECT_EQ(combine[0].declared, "received: RECEIVED_TOKEN_ROWS");
  // The backward's transposed exchanges receive into zeros shaped like the forward operands
  // (JAX's transpose rule): the combine's transpose into [R, D], the dispatch's into [T_l·K, D].
  std::vector<Buffer> combine_bwd = ReceiveBuffers(*step->module, "combine_bwd");
  ASSERT_EQ(combine_bwd.size(), 1u);
  EXPECT_EQ(combine_bwd[0].dims, (std::vector<int64_t>{128, 40}));
  EXPECT_EQ(combine_bwd[0].target, "broadcast");
  EXPECT_EQ(combine_bwd[0].declared, "received: RECEIVED_EXPERT_ROWS");
  std::vector<Buffer> dispatch_bwd = ReceiveBuffers(*step->module, "dispatch_bwd");
  ASSERT_EQ(dispatch_bwd.size(), 1u);
  EXPECT_EQ(dispatch_bwd[0].dims, (std::vector<int64_t>{32, 40}));
  EXPECT_EQ(dispatch_bwd[0].declared, "received: RECEIVED_TOKEN_ROWS");
  // Each transpose exchanges its offsets with an all-to-all first (two per exchange).
  EXPECT_EQ(Find(*step->module, Opcode::kAllToAll, "combine_bwd").size(), 2u);
  EXPECT_EQ(Find(*step->module, Opcode::kAllToAll, "dispatch_bwd").size(), 2u);
  PERFSIM_EXPECT_OK(CheckLoweredStep(*step));
}

TEST(EpRaggedA2aTest, ReceiveBufferIsCappedWhenExpertsPerShardAreFewerThanK) {
  // 12 devices, ep = 12 (E_l = 1 < K = 2), batch 12 × seq 4 = 48 tokens, T_l = 4:
  // R = T_l·K·min(EP, E/K) = 4·2·min(12, 6) = 48. A token has one expert per shard, so a shard
  // receives at most one row per token: 12·4·min(2, 1) = 48. With tp = 2 (24 devices) the
  // combine moves D/TP = 20 columns.
  StepSpec spec = NanoSpec(Phase::kForward, {.ep = 12, .tp = 2});
  spec.batch = 12;
  spec.seq = 4;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(ReceiveBuffers(*step->module, "dispatch")[0].dims, (std::vector<int64_t>{48, 40}));
  EXPECT_EQ(ReceiveBuffers(*step->module, "combine")[0].dims, (std::vector<int64_t>{8, 20}));
  PERFSIM_EXPECT_OK(CheckLoweredStep(*step));
}

// known_bugs.md #10's mutation: the receive buffer of `stage`'s ragged-all-to-all (and so the
// exchange's result) resized to `rows`.
void ResizeReceiveBuffer(LoweredStep& step, int64_t rows, absl::string_view stage = "dispatch") {
  for (const Instruction* found : Find(*step.module, Opcode::kRaggedAllToAll, stage)) {
    auto* a2a = const_cast<Instruction*>(found);
    for (Instruction* t : {a2a->operand(1), a2a}) {
      std::vector<int64_t> dims = t->shape().dimensions();
      dims[0] = rows;
      t->set_shape(Shape::Array(t->shape().element_type(), dims));
    }
  }
}

TEST(EpRaggedA2aTest, StaticCheckFailsAnUndersizedReceiveBufferNamingIt) {
  // Sizing the buffer T_l·K = 32 (forgetting min(EP, E/K)), or one row short of 128.
  for (int64_t rows : {32, 127}) {
    absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForward, {.ep = 4}));
    ASSERT_TRUE(step.ok()) << step.status();
    ResizeReceiveBuffer(*step, rows);
    std::vector<const Instruction*> a2a = Find(*step->module, Opcode::kRaggedAllToAll, "dispatch");
    ASSERT_EQ(a2a.size(), 1u);
    const std::string buffer = a2a[0]->operand(1)->name();
    EXPECT_THAT(CheckLoweredStep(*step),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("ragged-all-to-all"),
                               HasSubstr("receive buffer " + buffer + " f32[" +
                                         std::to_string(rows) + ",40]"),
                               HasSubstr("to hold the 128 rows"),
                               HasSubstr("n·T_l·min(K, E_l) = 4·16·min(2, 3)"),
                               HasSubstr("known_bugs.md #10"))));
    ValidationCase c{.spec = step->spec};
    ReferenceCache cache;
    ValidationResult r = ValidateLowered(*step, c, cache);
    EXPECT_FALSE(r.pass);
    EXPECT_THAT(r.message, AllOf(HasSubstr("static check"), HasSubstr(buffer)));
  }
}

TEST(EpRaggedA2aTest, StaticCheckBoundsTheCombineBufferByTheDevicesOwnAssignments) {
  // Whatever the routing, the combine brings back this device's T_l·K = 16·2 = 32 rows.
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForward, {.ep = 4}));
  ASSERT_TRUE(step.ok()) << step.status();
  ResizeReceiveBuffer(*step, 31, "combine");
  EXPECT_THAT(
      CheckLoweredStep(*step),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("ragged-all-to-all.1"), HasSubstr("f32[31,40]"),
                     HasSubstr("to hold the 32 rows"), HasSubstr("token_rows: T_l·K = 16·2"))));
}

double RelativeError(const Literal& got, const Literal& want) {
  double max_want = 0, max_diff = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
    const double diff = std::fabs(got.GetAsDouble(i) - want.GetAsDouble(i));
    if (!(diff <= max_diff)) max_diff = diff;  // NaN counts as infinitely wrong
  }
  return max_diff / max_want;
}

TEST(EpRaggedA2aTest, AdversarialRoutingFillsTheReceiveBufferExactly) {
  // Every token of the ep group picks two of shard 2's experts (6, 7, 8): +30 on their router
  // column 0 (x's feature 0 is 1), softmax top-k. Shard 2 then receives 4·16·2 = 128 rows, all
  // of R: the lowering matches the dense reference, and a buffer one row short overflows in
  // the interpreter's ragged-all-to-all.
  absl::StatusOr<ModelConfig> model =
      WithRouter(NanoSpec(Phase::kForward).model, RouterFamily::kSoftmaxTopK);
  ASSERT_TRUE(model.ok()) << model.status();
  StepSpec spec = NanoSpec(Phase::kForwardBackward, {.ep = 4});
  spec.model = *model;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Literal> global = MakeGlobalInputs(*step, RoutingCase::kRandom, 7);
  ASSERT_EQ(step->parameters[1].name, "router_w");
  for (int64_t e : {6, 7, 8}) global[1].SetFromDouble(e, global[1].GetAsDouble(e) + 30);

  StepSpec ref_spec = spec;
  ref_spec.backend = "dense_einsum";
  ref_spec.parallelism = {};
  absl::StatusOr<LoweredStep> ref = LowerStep(ref_spec);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<std::vector<Literal>> want = RunUnsharded(*ref, global);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<Literal>> got = RunUnsharded(*step, global);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < got->size(); ++o) {
    EXPECT_LE(RelativeError((*got)[o], (*want)[o]), 1e-5) << step->outputs[o].name;
  }

  ResizeReceiveBuffer(*step, 127);
  absl::StatusOr<std::vector<Literal>> overflow = RunUnsharded(*step, global);
  EXPECT_THAT(overflow.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ragged-all-to-all"), HasSubstr("-> device 2"),
                             HasSubstr("expected offset + size <= 127"))));
}

// known_bugs.md #17's mutation: the combine backward computes d_weights = Σ_D back·dy from the
// shard-local pre-all-to-all expert outputs (unpermuted with the same indices) instead of the
// rows the combine all-to-all brought back.
void FeedCombineBwdThePreAllToAllTensor(LoweredStep& step) {
  Computation* entry = step.module->entry();
  std::vector<const Instruction*> a2a = Find(*step.module, Opcode::kRaggedAllToAll, "combine");
  ASSERT_EQ(a2a.size(), 1u);
  Instruction* pre = a2a[0]->operand(0);
  Instruction *gather = nullptr, *r = nullptr;
  for (const auto& i : entry->instructions()) {
    if (i->opcode() == Opcode::kGather && i->operand(0) == a2a[0]) gather = i.get();
  }
  ASSERT_NE(gather, nullptr);
  for (const auto& i : entry->instructions()) {
    if (i->opcode() == Opcode::kReshape && i->operand(0) == gather) r = i.get();
  }
  ASSERT_NE(r, nullptr);
  auto wrong_gather =
      std::make_unique<Instruction>(Opcode::kGather, "mutated_gather", gather->shape());
  wrong_gather->AppendOperand(pre);
  wrong_gather->AppendOperand(gather->operand(1));
  *wrong_gather->mutable_attributes() = gather->attributes();
  Instruction* g = entry->AddInstruction(std::move(wrong_gather));
  auto wrong_r = std::make_unique<Instruction>(Opcode::kReshape, "mutated_r", r->shape());
  wrong_r->AppendOperand(g);
  Instruction* wr = entry->AddInstruction(std::move(wrong_r));
  int replaced = 0;
  const std::string scope = "op_name=\"moe/combine_bwd\"";
  for (const auto& i : entry->instructions()) {
    if (i->attributes().metadata.find(scope) == std::string::npos) continue;
    for (int64_t k = 0; k < i->operand_count(); ++k) {
      if (i->operand(k) == r) {
        i->set_operand(k, wr);
        ++replaced;
      }
    }
  }
  EXPECT_GT(replaced, 0);
}

TEST(EpRaggedA2aTest, CombineBackwardOnThePreAllToAllTensorFailsValidation) {
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForwardBackward, {.ep = 4}));
  ASSERT_TRUE(step.ok()) << step.status();
  ValidationCase c{.spec = step->spec};
  ReferenceCache cache;
  ASSERT_TRUE(ValidateLowered(*step, c, cache).pass);
  FeedCombineBwdThePreAllToAllTensor(*step);
  ValidationResult r = ValidateLowered(*step, c, cache);
  EXPECT_FALSE(r.pass);
  // The residual check sees it before any number is computed: the combine backward reads a
  // tensor of the same shape as the forward's expert outputs (the silent form), not them.
  EXPECT_THAT(r.message, AllOf(HasSubstr("residual combine.expert_outputs"),
                               HasSubstr("reads mutated_r"), HasSubstr("known_bugs.md #17")));
}

// The JAX goldens' model (tools/jax/moe_models.py): T = 64, D = 24, F = 40, E = 16, K = 2,
// softmax over E, top-k, renormalised, SwiGLU, f32, no shared expert.
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

// JAX ran the same shard_map body (ep = 8, T_l = 8, E_l = 2, R = 8·2·min(8, 8) = 128) with
// ragged_all_to_all emulated; both sides compute in f32 with different summation orders, a few
// ulps (~1e-7) apart, well inside 1e-5.
TEST(EpRaggedA2aTest, MatchesJaxExpertParallelForwardAndGradient) {
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
    EXPECT_EQ(ReceiveBuffers(*step->module, "dispatch")[0].dims,
              (std::vector<int64_t>{128, 24}));  // the golden's recv_buffer_rows
    // Parameters x, router_w, wi_0, wi_1, wo (, cotangent): the golden's order.
    std::vector<Literal> inputs;
    for (size_t i = 0; i < step->parameters.size(); ++i) {
      inputs.push_back(LoadGolden(name + ".in" + std::to_string(i) + ".npy"));
    }
    absl::StatusOr<std::vector<Literal>> got = RunUnsharded(*step, inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    // fwd: out0 = y. grad: out0..4 = dx, d_router_w, d_wi_0, d_wi_1, d_wo (our outputs 1..5).
    const int outputs = grad ? 5 : 1;
    for (int o = 0; o < outputs; ++o) {
      const size_t ours = grad ? o + 1 : 0;
      Literal want = LoadGolden(name + ".out" + std::to_string(o) + ".npy");
      ASSERT_EQ((*got)[ours].shape().dimensions(), want.shape().dimensions());
      EXPECT_LE(RelativeError((*got)[ours], want), 1e-5) << step->outputs[ours].name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A token-dropping receive buffer (ragged_buffer_factor f > 0, MaxText's _truncate_matrix).
// Model: nano without its shared expert (y is the routed part alone), softmax_topk (weights
// p[e] = softmax(x·W)[e], not renormalised), ep = 2, 64 tokens: T_l = 32 per device, K = 2,
// E_l = 6. The adversarial routing (validate.h) sends every token to ep shard 1: AdversarialPicks
// gives expert 6 then expert 7 all T_l = 32 tokens each, so every token picks {6, 7} and each
// sender's chunk for shard 1 is 32 rows of expert 6 followed by 32 rows of expert 7.
// Shard 1 receives 2 senders × 64 rows = 128 (the dropless R = min(EP·T_l·K, T_l·E) = 128).
//   f = 1    R = int(32·2·1) = 64: sender 0 fills it, sender 1 sends nothing: device 1's 32
//            tokens lose both assignments (y = 0), device 0's keep both.
//   f = 1.5  R = 96: sender 1 keeps the first 32 rows of its chunk, its expert-6 rows: device
//            1's tokens keep the expert-6 assignment only.
// The expected y comes from a float64 MoE written out below, independent of the lowering.
StepSpec DroppingSpec(Phase phase, double factor) {
  StepSpec spec = NanoSpec(phase, {.ep = 2});
  ModelSpec proto = spec.model.proto();
  proto.set_num_shared_experts(0);
  proto.set_shared_expert_ffn_dim(0);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(proto);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<ModelConfig> routed = WithRouter(*model, RouterFamily::kSoftmaxTopK);
  EXPECT_TRUE(routed.ok()) << routed.status();
  spec.model = *routed;
  spec.knobs.ragged_buffer_factor = factor;
  return spec;
}

// y[t] = Σ over the kept experts e of softmax(x[t]·W)[e] · (silu(x·wi_0[e]) ⊙ (x·wi_1[e]))·wo[e],
// in float64, from the global inputs (x, router_w, wi_0, wi_1, wo in that order).
std::vector<double> ReferenceY(const std::vector<Literal>& in, int64_t d, int64_t f, int64_t e,
                               const std::function<bool(int64_t, int64_t)>& kept) {
  const int64_t tokens = in[0].shape().dimensions(0);
  std::vector<double> y(tokens * d, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<double> logits(e, 0.0);
    double top = -1e300;
    for (int64_t j = 0; j < e; ++j) {
      for (int64_t i = 0; i < d; ++i) {
        logits[j] += in[0].GetAsDouble(t * d + i) * in[1].GetAsDouble(i * e + j);
      }
      top = std::max(top, logits[j]);
    }
    double sum = 0;
    for (double l : logits) sum += std::exp(l - top);
    for (int64_t j = 0; j < e; ++j) {
      if (!kept(t, j)) continue;
      const double w = std::exp(logits[j] - top) / sum;
      for (int64_t c = 0; c < f; ++c) {
        double h0 = 0, h1 = 0;
        for (int64_t i = 0; i < d; ++i) {
          h0 += in[0].GetAsDouble(t * d + i) * in[2].GetAsDouble((j * d + i) * f + c);
          h1 += in[0].GetAsDouble(t * d + i) * in[3].GetAsDouble((j * d + i) * f + c);
        }
        const double a = h0 / (1 + std::exp(-h0)) * h1;
        for (int64_t i = 0; i < d; ++i) {
          y[t * d + i] += w * a * in[4].GetAsDouble((j * f + c) * d + i);
        }
      }
    }
  }
  return y;
}

TEST(EpRaggedA2aTest, ATruncatedBufferDropsExactlyWhatMaxTextsRuleDrops) {
  for (double factor : {1.0, 1.5}) {
    StepSpec spec = DroppingSpec(Phase::kForward, factor);
    absl::StatusOr<LoweredStep> step = LowerStep(spec);
    ASSERT_TRUE(step.ok()) << step.status();
    // Both the exchange and the buffer's group sizes declare the truncation, so the static
    // checks accept a buffer below the worst case.
    EXPECT_TRUE(CheckLoweredStep(*step).ok()) << CheckLoweredStep(*step);
    const std::vector<Literal> global = MakeGlobalInputs(*step, RoutingCase::kAdversarial, 1);
    const std::vector<std::vector<int64_t>> picks = AdversarialPicks(spec);
    for (const std::vector<int64_t>& p : picks) ASSERT_EQ(p, (std::vector<int64_t>{6, 7}));
    absl::StatusOr<std::vector<Literal>> got = RunUnsharded(*step, global);
    ASSERT_TRUE(got.ok()) << got.status();
    const int64_t d = 40, f = 56, e = 12, t_l = 32;
    const std::vector<double> want = ReferenceY(global, d, f, e, [&](int64_t t, int64_t j) {
      if (j != 6 && j != 7) return false;
      if (t < t_l) return true;          // device 0: everything fits
      return factor == 1.5 && j == 6;    // device 1: nothing (f = 1) or its expert-6 rows
    });
    double max_want = 0, max_diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_want = std::max(max_want, std::fabs(want[i]));
      max_diff = std::max(max_diff, std::fabs((*got)[0].GetAsDouble(i) - want[i]));
    }
    EXPECT_GT(max_want, 1e-2);
    EXPECT_LE(max_diff / max_want, 1e-5) << "factor " << factor;
    if (factor == 1.0) {
      for (int64_t i = t_l * d; i < 2 * t_l * d; ++i) {
        ASSERT_EQ((*got)[0].GetAsDouble(i), 0.0) << "dropped token row " << i / d;
      }
    }
  }
}

TEST(EpRaggedA2aTest, TruncationIsDeclaredInTheAnnotationAndReadBackFromPrintedText) {
  // f = 1.5: R = int(T_l·K·f) = int(32·2·1.5) = 96 rows, below the dropless worst case
  // n·T_l·min(K, E_l) = 2·32·min(2, 6) = 128. The dispatch, its received group sizes and the
  // combine's transpose (which receives into a buffer shaped like the dispatch's) declare it.
  StepSpec spec = DroppingSpec(Phase::kForwardBackward, 1.5);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<const Instruction*> dispatch =
      Find(*step->module, Opcode::kRaggedAllToAll, "dispatch");
  ASSERT_EQ(dispatch.size(), 1u);
  EXPECT_EQ(DeclaredBuffer(*dispatch[0]), "received: RECEIVED_EXPERT_ROWS truncated_rows: 96");
  std::vector<const Instruction*> combine_bwd =
      Find(*step->module, Opcode::kRaggedAllToAll, "combine_bwd");
  ASSERT_EQ(combine_bwd.size(), 1u);
  EXPECT_EQ(DeclaredBuffer(*combine_bwd[0]), "received: RECEIVED_EXPERT_ROWS truncated_rows: 96");
  int truncated_sizes = 0;
  for (const auto& instruction : step->module->entry()->instructions()) {
    const Annotation* annotation = instruction->annotation();
    if (annotation != nullptr && annotation->ragged().truncated_rows() > 0) {
      EXPECT_EQ(annotation->ragged().truncated_rows(), 96) << instruction->name();
      EXPECT_EQ(annotation->ragged().rows(), RaggedSizes::ROWS_EP_GROUP) << instruction->name();
      ++truncated_sizes;
    }
  }
  EXPECT_EQ(truncated_sizes, 1);

  // The checks read the typed declarations back from the printed module: they accept it as
  // lowered, and a dispatch buffer of 95 rows, one short of the truncated 96, fails.
  const std::string text = PrintModule(*step->module);
  EXPECT_EQ(text.find("perfsim_truncated"), std::string::npos);
  EXPECT_EQ(text.find("perfsim_receive"), std::string::npos);
  EXPECT_EQ(text.find("perfsim_align"), std::string::npos);
  for (int64_t rows : {96, 95}) {
    absl::StatusOr<std::unique_ptr<Module>> parsed = ParseHloModule(text, "truncated.hlo");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    LoweredStep back{.spec = spec, .module = *std::move(parsed)};
    ResizeReceiveBuffer(back, rows);
    PERFSIM_EXPECT_OK(CheckGroupSums(back));
    if (rows == 96) {
      PERFSIM_EXPECT_OK(CheckReceiveBuffers(back));
      continue;
    }
    EXPECT_THAT(CheckReceiveBuffers(back),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("f32[95,40]"), HasSubstr("to hold the 96 rows"),
                               HasSubstr("= 128, truncated to 96"))));
  }
}

TEST(EpRaggedA2aTest, AReceiveBufferDeclaredWithoutWhatItReceivesIsAnError) {
  // buffer { align: 8 } with no `received`: the check cannot bound it, so it says so.
  absl::StatusOr<LoweredStep> step = LowerStep(NanoSpec(Phase::kForward, {.ep = 4}));
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<const Instruction*> a2a = Find(*step->module, Opcode::kRaggedAllToAll, "dispatch");
  ASSERT_EQ(a2a.size(), 1u);
  auto* dispatch = const_cast<Instruction*>(a2a[0]);
  Annotation annotation = *dispatch->annotation();
  annotation.mutable_buffer()->Clear();
  annotation.mutable_buffer()->set_align(8);
  dispatch->set_annotation(std::make_shared<const Annotation>(annotation));
  EXPECT_THAT(CheckReceiveBuffers(*step),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(dispatch->name()),
                             HasSubstr("RECEIVED_EXPERT_ROWS or RECEIVED_TOKEN_ROWS"),
                             HasSubstr("got \"buffer { align: 8 }\""))));
}

TEST(EpRaggedA2aTest, DroppedAssignmentsGetNoGradient) {
  // f = 1, fwd_bwd: device 1's tokens are dropped entirely, so their dx is 0 and every weight
  // gradient is that of device 0's 32 tokens alone: the dense reference on those 32 tokens.
  StepSpec spec = DroppingSpec(Phase::kForwardBackward, 1.0);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  const std::vector<Literal> global = MakeGlobalInputs(*step, RoutingCase::kAdversarial, 1);
  absl::StatusOr<std::vector<Literal>> got = RunUnsharded(*step, global);
  ASSERT_TRUE(got.ok()) << got.status();

  StepSpec half = spec;
  half.backend = "dense_einsum";
  half.parallelism = {};
  half.batch = 2;
  half.knobs.ragged_buffer_factor = -1;
  absl::StatusOr<LoweredStep> ref = LowerStep(half);
  ASSERT_TRUE(ref.ok()) << ref.status();
  std::vector<Literal> half_inputs;
  for (size_t i = 0; i < global.size(); ++i) {
    const std::string& name = step->parameters[i].name;
    if (name != "x" && name != "dy") {
      half_inputs.push_back(global[i]);
      continue;
    }
    Literal rows(Shape::Array(global[i].shape().element_type(), {32, 40}));
    for (int64_t j = 0; j < 32 * 40; ++j) rows.SetFromDouble(j, global[i].GetAsDouble(j));
    half_inputs.push_back(std::move(rows));
  }
  absl::StatusOr<std::vector<Literal>> want = RunUnsharded(*ref, half_inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t o = 0; o < got->size(); ++o) {
    const std::string& name = step->outputs[o].name;
    if (name == "y" || name == "dx") {
      // The first 32 rows are device 0's tokens; the other 32 were dropped.
      double max_want = 0, max_diff = 0;
      for (int64_t j = 0; j < 32 * 40; ++j) {
        max_want = std::max(max_want, std::fabs((*want)[o].GetAsDouble(j)));
        max_diff = std::max(max_diff,
                            std::fabs((*got)[o].GetAsDouble(j) - (*want)[o].GetAsDouble(j)));
      }
      EXPECT_LE(max_diff / max_want, 1e-5) << name;
      for (int64_t j = 32 * 40; j < 64 * 40; ++j) {
        ASSERT_EQ((*got)[o].GetAsDouble(j), 0.0) << name << " of dropped token " << j / 40;
      }
      continue;
    }
    EXPECT_LE(RelativeError((*got)[o], (*want)[o]), 1e-5) << name;
  }
}

TEST(EpRaggedA2aTest, ValidateRaisesADroppingFactorAndReportsDrops) {
  // validate compares with the dropless reference, so it raises f to min(EP, E/K) = 2 first
  // and says so (as capacity_einsum does with its capacity factor)...
  StepSpec spec = DroppingSpec(Phase::kForwardBackward, 1.0);
  ReferenceCache cache;
  ValidationResult r = ValidateCase({.spec = spec, .routing = RoutingCase::kRandom}, cache);
  EXPECT_TRUE(r.pass) << r.message;
  EXPECT_THAT(r.message, HasSubstr("ragged buffer factor raised from 1"));
  EXPECT_THAT(r.message, HasSubstr("to min(EP, E/K) = 2 so that nothing drops"));
  // ... and the dropping module itself, run as lowered, differs and says why.
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  ValidationResult dropped =
      ValidateLowered(*step, {.spec = spec, .routing = RoutingCase::kAdversarial}, cache);
  EXPECT_FALSE(dropped.pass);
  EXPECT_THAT(dropped.message, HasSubstr("differs from dense_einsum"));
  EXPECT_THAT(dropped.message, HasSubstr("ragged_buffer_factor 1: receive buffers of 64 rows "
                                         "drop what the dropless reference keeps"));
}

TEST(EpRaggedA2aTest, BadBufferFactorsAreInvalidArguments) {
  StepSpec spec = NanoSpec(Phase::kForward, {.ep = 4});
  spec.knobs.ragged_buffer_factor = std::nan("");
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ragged_buffer_factor: expected a finite number")));
  // T_l·K = 16·2 = 32 rows: f = 0.01 gives int(0.32) = 0 rows.
  spec.knobs.ragged_buffer_factor = 0.01;
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("of at least 1 row"), HasSubstr("int(32·0.01) = 0"))));
  // A factor at or above the dropless one never truncates: the plain dropless exchange.
  spec.knobs.ragged_buffer_factor = 4;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  for (const auto& instruction : step->module->entry()->instructions()) {
    const Annotation* annotation = instruction->annotation();
    if (annotation == nullptr) continue;
    EXPECT_EQ(annotation->buffer().truncated_rows(), 0) << instruction->name();
    EXPECT_EQ(annotation->ragged().truncated_rows(), 0) << instruction->name();
  }
}

}  // namespace
}  // namespace perfsim
