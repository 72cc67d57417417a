// capacity_einsum: the capacity formula, the validate suite at a capacity that never drops, and
// the dropping itself against a reference derived by hand from MaxText's generate_masks rule.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/validate/validate.h"
#include "tests/lowering/lowering_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::TestStepSpec;
using ::testing::HasSubstr;

StepSpec NanoSpec(Phase phase, double capacity_factor) {
  StepSpec spec = TestStepSpec("nano", "capacity_einsum", phase);
  spec.knobs.capacity_factor = capacity_factor;
  return spec;
}

// C as the lowering built it: dimension C of the dispatched tensor [E, B, C, D].
int64_t LoweredCapacity(const StepSpec& spec) {
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  EXPECT_TRUE(step.ok()) << step.status();
  if (!step.ok()) return -1;
  for (const auto& [instruction, dims] : step->dim_names) {
    if (dims == "EBCD") return instruction->shape().dimensions(2);
  }
  ADD_FAILURE() << "no EBCD tensor in the lowering";
  return -1;
}

TEST(CapacityEinsumTest, CapacityPerSequenceFollowsMaxTextsFormula) {
  // C = int(max(ceil(S·K/E)·cf, cf)). nano: S=16, K=2, E=12, ceil(32/12) = 3.
  EXPECT_EQ(LoweredCapacity(NanoSpec(Phase::kForward, 1.25)), 3);  // int(3.75)
  EXPECT_EQ(LoweredCapacity(NanoSpec(Phase::kForward, 2.0)), 6);   // 3·2
  EXPECT_EQ(LoweredCapacity(NanoSpec(Phase::kForward, 0.5)), 1);   // int(max(1.5, 0.5))
  EXPECT_EQ(LoweredCapacity(NanoSpec(Phase::kForward, 6.0)), 18);  // cf = E/K: 18 >= S = 16
  // Mixtral 8x7B (E=8, K=2), S=4096, cf=1.25: ceil(8192/8) = 1024, C = 1280. The sequence, not
  // the global batch, sets C: batch 2 gives the same.
  absl::StatusOr<ModelConfig> mixtral = ResolveModel("mixtral_8x7b");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status();
  StepSpec spec = StepSpec::Defaults(*mixtral);
  spec.batch = 2;
  spec.seq = 4096;
  spec.backend = "capacity_einsum";
  spec.knobs.capacity_factor = 1.25;
  EXPECT_EQ(LoweredCapacity(spec), 1280);
}

TEST(CapacityEinsumTest, UnusableCapacitiesAreRefusedWithTheirReason) {
  const MoeBackend* backend = *FindBackend("capacity_einsum");
  // cf = 0.3: int(max(3·0.3, 0.3)) = int(0.9) = 0 slots.
  absl::Status s = backend->Supports(NanoSpec(Phase::kForward, 0.3));
  EXPECT_THAT(s.message(), HasSubstr("expected a capacity C = int(max(ceil(S*K/E)*cf, cf)) >= 1"));
  EXPECT_THAT(s.message(), HasSubstr("got C = 0"));
  s = backend->Supports(NanoSpec(Phase::kForward, -1));
  EXPECT_THAT(s.message(), HasSubstr("expected capacity_factor > 0"));
  // batch 4 over dp·ep = 8 would split sequences, whose capacity is per sequence.
  StepSpec split = NanoSpec(Phase::kForward, 6);
  split.parallelism = Parallelism{.dp = 4, .ep = 2};
  s = backend->Supports(split);
  EXPECT_THAT(s.message(), HasSubstr("expected batch divisible by dp*fsdp*ep"));
}

TEST(CapacityEinsumTest, DefaultParallelismUsesEveryAxis) {
  const MoeBackend* backend = *FindBackend("capacity_einsum");
  const StepSpec spec = NanoSpec(Phase::kForward, 12);
  Parallelism p = backend->DefaultParallelism(8, spec);
  EXPECT_EQ(p.ep, 2);
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.tp, 2);
  p = backend->DefaultParallelism(4, spec);
  EXPECT_EQ(p.ep, 2);
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.tp, 1);
}

// Every router family (K = 2, and K = 1 for sigmoid_prescale) with cf = E = 12 >= E/K: C >= S,
// so nothing is dropped and the backend must equal dense_einsum; 1, 2, 4, 8 devices cover ep,
// dp and tp (8 = ep 2 × dp 2 × tp 2), forward and backward.
TEST(CapacityEinsumTest, ValidateSuitePassesAtANeverDropCapacity) {
  SuiteOptions options{.base = NanoSpec(Phase::kForward, 12)};
  options.backends = {"capacity_einsum"};
  std::vector<ValidationResult> results = RunSuite(options);
  ASSERT_EQ(results.size(), 4u * 2 * 5 * 4);
  for (const ValidationResult& r : results) {
    EXPECT_TRUE(r.pass) << r.router << " " << r.routing << " " << r.phase << " " << r.devices
                        << ": " << r.message;
    EXPECT_LE(r.tolerance, 1e-5);
  }
}

// With the default cf = 1.25 (C = 3 < 16) the one_expert routing sends all 16 tokens of a
// sequence to one expert: 13 are dropped, and the comparison reports the difference, not a
// pass. ValidateCase would raise cf to E/K first (PrepareForValidation), so this lowers the
// step itself and hands it to ValidateLowered.
TEST(CapacityEinsumTest, DroppingCapacityDiffersFromTheDroplessReference) {
  StepSpec spec = NanoSpec(Phase::kForward, 1.25);
  absl::StatusOr<ModelConfig> model = WithRouter(spec.model, RouterFamily::kSoftmaxTopK);
  ASSERT_TRUE(model.ok()) << model.status();
  spec.model = *model;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  ReferenceCache cache;
  ValidationResult r = ValidateLowered(
      *step, {.spec = spec, .router = RouterFamily::kSoftmaxTopK, .routing = RoutingCase::kOneExpert},
      cache);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.skipped);
  EXPECT_THAT(r.message, HasSubstr("y differs from dense_einsum"));
}

// ---------------------------------------------------------------------------------------------
// Dropping, derived by hand. Model: D=5, F=3, E=3, K=2, softmax over E then top-2 (no
// renormalisation), SwiGLU, f32, no shared expert. Batch 2, sequence 3, cf = 1:
//   C = int(max(ceil(3·2/3)·1, 1)) = 2 slots per expert per sequence.
// router_w[d][e] = 4 if d == e (d < 3), else 0, so logits[t] = 4·x[t][0:3]:
//   sequence 0: t0 x=(1, .5, 0) -> logits (4, 2, 0): picks e0, e1
//               t1 x=(.5, 1, 0) -> (2, 4, 0): e1, e0
//               t2 x=(1, 0, .5) -> (4, 0, 2): e0, e2
//   sequence 1: t3 x=(0, .5, 1) -> (0, 2, 4): e2, e1
//               t4 x=(.5, 0, 1) -> (2, 0, 4): e2, e0
//               t5 x=(0, .25, 1) -> (0, 1, 4): e2, e1
// MaxText orders a sequence's assignments s-major, then k (m = s·K + k), and counts per expert:
//   seq 0: m0 t0→e0 #1, m1 t0→e1 #1, m2 t1→e1 #2, m3 t1→e0 #2, m4 t2→e0 #3 > C: DROPPED,
//          m5 t2→e2 #1
//   seq 1: m0 t3→e2 #1, m1 t3→e1 #1, m2 t4→e2 #2, m3 t4→e0 #1, m4 t5→e2 #3 > C: DROPPED,
//          m5 t5→e1 #2
// So t2 loses its top choice e0 to t1's second choice, and the count restarts per sequence (e2
// took one slot in sequence 0 and still has two in sequence 1). Expected, with p = softmax(l):
//   y[t] = Σ over kept (t, e) of p[t][e]·FFN_e(x[t]),  FFN_e(x) = wo[e]ᵀ(silu(x·wi0[e])·(x·wi1[e]))
// y[2] and y[5] keep only their second choice. The gradients of sum(y·dy) follow the same kept
// set: d_wo[e] += a ⊗ p·dy, d_wi_j[e] += x ⊗ dh_j, and a dropped assignment's weight has
// gradient 0 (its expert output never reaches y), which reaches dx and d_router_w through the
// softmax: dl = p ⊙ (dp − Σ_e p·dp).
// The reference below computes exactly this in double precision, independently of the
// lowering. Tolerance 1e-5 (∞-norm relative): f32 sums over at most D·F = 15 products.
constexpr int kD = 5, kF = 3, kE = 3, kK = 2, kT = 6;
constexpr double kX[kT][3] = {{1, .5, 0}, {.5, 1, 0}, {1, 0, .5},
                              {0, .5, 1}, {.5, 0, 1}, {0, .25, 1}};
constexpr int kChoice[kT][kK] = {{0, 1}, {1, 0}, {0, 2}, {2, 1}, {2, 0}, {2, 1}};
constexpr bool kKept[kT][kK] = {{true, true}, {true, true}, {false, true},
                                {true, true}, {true, true}, {false, true}};

ModelConfig TinyModel() {
  ModelSpec m;
  m.set_name("capacity_tiny");
  m.set_d_model(kD);
  m.set_expert_ffn_dim(kF);
  m.set_num_experts(kE);
  m.set_experts_per_token(kK);
  m.set_num_layers(1);
  m.set_num_moe_layers(1);
  m.mutable_activation()->set_kind(ACTIVATION_KIND_SILU);
  m.mutable_activation()->set_gated(true);
  m.mutable_router()->set_kind(ROUTER_KIND_SOFTMAX_TOPK);
  m.mutable_router()->set_dtype(DTYPE_F32);
  m.set_param_dtype(DTYPE_F32);
  m.set_activation_dtype(DTYPE_F32);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(m);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

double X(int t, int d) { return d < 3 ? kX[t][d] : 0.3 * std::sin(1.0 + t + 2.0 * d); }
double RouterW(int d, int e) { return d == e ? 4.0 : 0.0; }
double Wi0(int e, int d, int f) { return 0.6 * std::sin(0.7 + e + 1.3 * d + 2.1 * f); }
double Wi1(int e, int d, int f) { return 0.6 * std::cos(0.4 + 2.0 * e + 0.9 * d + 1.7 * f); }
double Wo(int e, int f, int d) { return 0.5 * std::sin(1.9 + 3.0 * e + 1.1 * f + 0.8 * d); }
double Dy(int t, int d) { return std::cos(0.3 + 1.7 * t + 0.6 * d); }
double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

struct Reference {
  std::vector<double> y, dx, d_router_w, d_wi_0, d_wi_1, d_wo;
};

Reference HandDerivedReference() {
  Reference r{.y = std::vector<double>(kT * kD),
              .dx = std::vector<double>(kT * kD),
              .d_router_w = std::vector<double>(kD * kE),
              .d_wi_0 = std::vector<double>(kE * kD * kF),
              .d_wi_1 = std::vector<double>(kE * kD * kF),
              .d_wo = std::vector<double>(kE * kF * kD)};
  for (int t = 0; t < kT; ++t) {
    double logits[kE], p[kE], sum = 0;
    for (int e = 0; e < kE; ++e) {
      logits[e] = 0;
      for (int d = 0; d < kD; ++d) logits[e] += X(t, d) * RouterW(d, e);
      sum += std::exp(logits[e]);
    }
    for (int e = 0; e < kE; ++e) p[e] = std::exp(logits[e]) / sum;
    double dp[kE] = {0, 0, 0};
    for (int k = 0; k < kK; ++k) {
      if (!kKept[t][k]) continue;  // dropped: no output, weight gradient 0
      const int e = kChoice[t][k];
      double h0[kF], h1[kF], a[kF];
      for (int f = 0; f < kF; ++f) {
        h0[f] = h1[f] = 0;
        for (int d = 0; d < kD; ++d) {
          h0[f] += X(t, d) * Wi0(e, d, f);
          h1[f] += X(t, d) * Wi1(e, d, f);
        }
        a[f] = h0[f] * Sigmoid(h0[f]) * h1[f];
      }
      double da[kF] = {0, 0, 0};
      for (int d = 0; d < kD; ++d) {
        double o = 0;
        for (int f = 0; f < kF; ++f) o += a[f] * Wo(e, f, d);
        r.y[t * kD + d] += p[e] * o;
        dp[e] += o * Dy(t, d);
        for (int f = 0; f < kF; ++f) {
          r.d_wo[(e * kF + f) * kD + d] += a[f] * p[e] * Dy(t, d);
          da[f] += Wo(e, f, d) * p[e] * Dy(t, d);
        }
      }
      for (int f = 0; f < kF; ++f) {
        const double s = Sigmoid(h0[f]);
        const double dh0 = da[f] * h1[f] * s * (1 + h0[f] * (1 - s)), dh1 = da[f] * h0[f] * s;
        for (int d = 0; d < kD; ++d) {
          r.d_wi_0[(e * kD + d) * kF + f] += X(t, d) * dh0;
          r.d_wi_1[(e * kD + d) * kF + f] += X(t, d) * dh1;
          r.dx[t * kD + d] += dh0 * Wi0(e, d, f) + dh1 * Wi1(e, d, f);
        }
      }
    }
    double pdp = 0;
    for (int e = 0; e < kE; ++e) pdp += p[e] * dp[e];
    for (int e = 0; e < kE; ++e) {
      const double dl = p[e] * (dp[e] - pdp);
      for (int d = 0; d < kD; ++d) {
        r.dx[t * kD + d] += dl * RouterW(d, e);
        r.d_router_w[d * kE + e] += X(t, d) * dl;
      }
    }
  }
  return r;
}

Literal Fill(const TensorSpec& spec, const std::function<double(const std::vector<int>&)>& f) {
  Literal lit(Shape::Array(spec.type, spec.global_dims));
  std::vector<int> index(spec.global_dims.size(), 0);
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    lit.SetFromDouble(i, f(index));
    for (int d = static_cast<int>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < spec.global_dims[d]) break;
      index[d] = 0;
    }
  }
  return lit;
}

void ExpectClose(absl::string_view name, const Literal& got, const std::vector<double>& want) {
  ASSERT_EQ(got.element_count(), static_cast<int64_t>(want.size())) << name;
  double max_want = 0, max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_want = std::max(max_want, std::fabs(want[i]));
    max_diff = std::max(max_diff, std::fabs(got.GetAsDouble(i) - want[i]));
  }
  EXPECT_GT(max_want, 1e-3) << name << " is trivially zero";
  EXPECT_LE(max_diff / max_want, 1e-5) << name;
}

TEST(CapacityEinsumTest, DropsExactlyTheTokensMaxTextsRuleDrops) {
  StepSpec spec = StepSpec::Defaults(TinyModel());
  spec.batch = 2;
  spec.seq = 3;
  spec.phase = Phase::kForwardBackward;
  spec.backend = "capacity_einsum";
  spec.knobs.capacity_factor = 1;
  EXPECT_EQ(LoweredCapacity(spec), 2);
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Literal> inputs;
  for (const TensorSpec& p : step->parameters) {
    if (p.name == "x") inputs.push_back(Fill(p, [](auto& i) { return X(i[0], i[1]); }));
    if (p.name == "router_w")
      inputs.push_back(Fill(p, [](auto& i) { return RouterW(i[0], i[1]); }));
    if (p.name == "wi_0") inputs.push_back(Fill(p, [](auto& i) { return Wi0(i[0], i[1], i[2]); }));
    if (p.name == "wi_1") inputs.push_back(Fill(p, [](auto& i) { return Wi1(i[0], i[1], i[2]); }));
    if (p.name == "wo") inputs.push_back(Fill(p, [](auto& i) { return Wo(i[0], i[1], i[2]); }));
    if (p.name == "dy") inputs.push_back(Fill(p, [](auto& i) { return Dy(i[0], i[1]); }));
  }
  ASSERT_EQ(inputs.size(), step->parameters.size());
  absl::StatusOr<RunResult> run = RunModule(*step->module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(run.ok()) << run.status();
  const Reference want = HandDerivedReference();
  const std::vector<Literal>& got = run->outputs[0];
  ASSERT_EQ(step->outputs.size(), 6u);  // y, dx, d_router_w, d_wi_0, d_wi_1, d_wo
  ExpectClose("y", got[0], want.y);
  ExpectClose("dx", got[1], want.dx);
  ExpectClose("d_router_w", got[2], want.d_router_w);
  ExpectClose("d_wi_0", got[3], want.d_wi_0);
  ExpectClose("d_wi_1", got[4], want.d_wi_1);
  ExpectClose("d_wo", got[5], want.d_wo);
  // The drops are visible: dense_einsum (nothing dropped) gives a different y for t2 and t5
  // only (their dropped first choices), the same for the other tokens.
  StepSpec dense = spec;
  dense.backend = "dense_einsum";
  absl::StatusOr<LoweredStep> ref = LowerStep(dense);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<RunResult> ref_run = RunModule(*ref->module, {inputs}, InterpreterOptions());
  ASSERT_TRUE(ref_run.ok()) << ref_run.status();
  for (int t = 0; t < kT; ++t) {
    double diff = 0;
    for (int d = 0; d < kD; ++d) {
      diff = std::max(diff, std::fabs(got[0].GetAsDouble(t * kD + d) -
                                      ref_run->outputs[0][0].GetAsDouble(t * kD + d)));
    }
    if (t == 2 || t == 5) {
      EXPECT_GT(diff, 1e-3) << "token " << t << " should have lost its first choice";
    } else {
      EXPECT_LE(diff, 1e-6) << "token " << t << " lost nothing";
    }
  }
}

}  // namespace
}  // namespace perfsim
