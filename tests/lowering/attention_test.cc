// The attention lowering (sim/lowering/attention.h) against JAX: the committed goldens in
// tests/testdata/attention (tools/jax/attention_goldens.py: B=2, S=16, D=32, f32; forward y and
// jax.vjp's gradients of sum(y · dy)). perfsim lowers the block with its own hand-written
// backward, the interpreter runs it on the golden inputs, and the outputs must match JAX's:
// on one device, and on a tensor-parallel group (each device given its shard of the weights,
// its outputs put back together).
//
// Tolerance: ∞-norm relative error ≤ 1e-5 per output. Both sides compute in f32 with different
// summation orders (perfsim's dot_generals over grouped heads, JAX's einsums over repeated K/V
// heads through XLA:CPU), and differently rounded transcendentals (exp, cos, sin, rsqrt: an ulp
// or so each); every contraction is over at most 128 products (D = 32, S = 16 keys, B·S = 32
// rows, B·S·H = 128 for a norm scale's gradient), so the error stays a few hundred f32 ulps
// (~1e-7 each) below the largest element. A wrong mask, scale, rope sign, missing gradient term
// or collective is off by 1e-2 or more.
#include "sim/lowering/attention.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/hw/chip_registry.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/npy.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/moe/model_registry.h"
#include "sim/simulator/simulator.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;

constexpr double kTolerance = 1e-5;  // the file comment says why

// The golden cases (tools/jax/attention_goldens.py CASES), as AttentionSpecs.
struct GoldenCase {
  std::string name;
  AttentionSpec attention;
};

AttentionSpec Gqa(int64_t heads, int64_t kv, int64_t head_dim) {
  AttentionSpec a;
  a.set_kind(ATTENTION_KIND_GQA);
  a.set_num_query_heads(heads);
  a.set_num_kv_heads(kv);
  a.set_head_dim(head_dim);
  return a;
}

AttentionSpec Mla(int64_t heads, int64_t q_lora, int64_t kv_lora, int64_t nope, int64_t rope,
                  int64_t v) {
  AttentionSpec a;
  a.set_kind(ATTENTION_KIND_MLA);
  a.set_num_query_heads(heads);
  a.set_num_kv_heads(heads);
  MlaSpec* m = a.mutable_mla();
  m->set_q_lora_rank(q_lora);
  m->set_kv_lora_rank(kv_lora);
  m->set_qk_nope_head_dim(nope);
  m->set_qk_rope_head_dim(rope);
  m->set_v_head_dim(v);
  a.set_rope_theta(10000.0);
  return a;
}

// A GQA case without rope is one whose every layer is NoPE (nope_layer_interval 1).
std::vector<GoldenCase> GoldenCases() {
  std::vector<GoldenCase> cases;
  AttentionSpec mha = Gqa(4, 4, 8);
  mha.set_nope_layer_interval(1);
  cases.push_back({"mha_causal", mha});
  AttentionSpec gqa = Gqa(4, 2, 8);
  gqa.set_rope_theta(10000.0);
  cases.push_back({"gqa_causal_rope", gqa});
  AttentionSpec mqa = Gqa(4, 1, 8);
  mqa.set_rope_theta(10000.0);
  cases.push_back({"mqa_causal_rope", mqa});
  AttentionSpec swa = gqa;
  swa.add_layer_scopes(ATTENTION_SCOPE_SLIDING_WINDOW);
  swa.add_layer_scopes(ATTENTION_SCOPE_GLOBAL);
  swa.set_local_window_tokens(5);
  cases.push_back({"gqa_sliding_window", swa});
  AttentionSpec chunked = Gqa(4, 2, 8);
  chunked.set_rope_theta(500000.0);
  chunked.add_layer_scopes(ATTENTION_SCOPE_CHUNKED);
  chunked.set_local_window_tokens(4);
  cases.push_back({"gqa_chunked", chunked});
  AttentionSpec qk_norm = Gqa(4, 2, 8);
  qk_norm.set_rope_theta(1000000.0);
  qk_norm.set_qk_norm(true);
  cases.push_back({"gqa_qk_norm", qk_norm});
  cases.push_back({"mla_causal", Mla(4, 16, 16, 8, 4, 8)});
  cases.push_back({"mla_no_q_lora", Mla(4, 0, 16, 8, 4, 6)});
  return cases;
}

GoldenCase FindCase(const std::string& name) {
  for (const GoldenCase& c : GoldenCases()) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no case " << name;
  return {};
}

AttentionLoweringSpec SpecOf(const GoldenCase& c, Phase phase, int64_t tp = 1) {
  AttentionLoweringSpec spec;
  spec.attention = c.attention;
  spec.d_model = 32;
  spec.batch = 2;
  spec.seq = 16;
  spec.phase = phase;
  spec.tp = tp;
  return spec;
}

Literal Load(const std::string& golden, const std::string& tensor) {
  const std::string path =
      absl::StrCat(PERFSIM_TESTDATA_DIR, "/attention/", golden, ".", tensor, ".npy");
  absl::StatusOr<Literal> lit = ReadNpyFile(path);
  EXPECT_TRUE(lit.ok()) << lit.status();
  return lit.ok() ? *std::move(lit) : Literal();
}

void ExpectMatches(const std::string& what, const Literal& got, const Literal& want) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << what;
  double max_want = 0, max_diff = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    max_want = std::max(max_want, std::fabs(want.GetAsDouble(i)));
    const double diff = std::fabs(got.GetAsDouble(i) - want.GetAsDouble(i));
    if (!(diff <= max_diff)) max_diff = diff, worst = i;
  }
  ASSERT_GT(max_want, 0) << what;
  EXPECT_LE(max_diff / max_want, kTolerance)
      << what << ": relative error " << max_diff / max_want << " at linear index " << worst
      << ": got " << got.GetAsDouble(worst) << ", want " << want.GetAsDouble(worst)
      << " (max |want| " << max_want << ")";
}

// Elements [begin, end) of dimension `dim` (row major).
Literal SliceDim(const Literal& in, int64_t dim, int64_t begin, int64_t end) {
  std::vector<int64_t> dims = in.shape().dimensions();
  int64_t inner = 1;
  for (size_t i = dim + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t size = dims[dim];
  dims[dim] = end - begin;
  Literal out(Shape::Array(in.shape().element_type(), dims));
  for (int64_t i = 0; i < out.element_count(); ++i) {
    const int64_t outer = i / (inner * (end - begin));
    const int64_t d = i / inner % (end - begin);
    out.SetFromDouble(i, in.GetAsDouble((outer * size + begin + d) * inner + i % inner));
  }
  return out;
}

// Runs `layer` on `tp` devices, with device d given its shard of each golden input (the split
// TensorSpec::split says; the K/V weights of a K/V head shared by tp/Hkv devices are that
// head), and checks every output of every device against its shard of the golden.
void RunAndCompare(const LoweredLayer& layer, const std::string& golden, int64_t tp) {
  // The part of a golden tensor `t` (a parameter's or output's spec) device d holds.
  auto shard = [&](const TensorSpec& t, const Literal& full, int64_t d) {
    Literal part = full;
    for (size_t i = 0; i < t.split.size(); ++i) {
      if (t.split[i].empty()) continue;
      const int64_t global = full.shape().dimensions(i);
      if (global < tp) {
        // A K/V head replicated on tp/Hkv consecutive devices.
        const int64_t head = d / (tp / global);
        part = SliceDim(part, i, head, head + 1);
      } else {
        const int64_t n = global / tp;
        part = SliceDim(part, i, d * n, (d + 1) * n);
      }
    }
    return part;
  };
  std::vector<std::vector<Literal>> inputs(tp);
  for (const TensorSpec& p : layer.parameters) {
    const Literal full = Load(golden, p.name);
    for (int64_t d = 0; d < tp; ++d) inputs[d].push_back(shard(p, full, d));
  }
  InterpreterOptions options;
  options.num_devices = tp;
  absl::StatusOr<RunResult> run = RunModule(*layer.module, inputs, options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->outputs[0].size(), layer.outputs.size());
  for (size_t i = 0; i < layer.outputs.size(); ++i) {
    const TensorSpec& t = layer.outputs[i];
    const Literal full = Load(golden, t.name);
    for (int64_t d = 0; d < tp; ++d) {
      ExpectMatches(absl::StrCat(golden, " ", t.name, " on device ", d, " of ", tp),
                    run->outputs[d][i], shard(t, full, d));
    }
  }
}

class AttentionGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionGoldenTest, ForwardMatchesJax) {
  absl::StatusOr<LoweredLayer> layer =
      LowerAttention(SpecOf(FindCase(GetParam()), Phase::kForward));
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_EQ(layer->outputs.size(), 1u);
  RunAndCompare(*layer, GetParam(), 1);
}

TEST_P(AttentionGoldenTest, GradientsMatchJaxVjp) {
  absl::StatusOr<LoweredLayer> layer =
      LowerAttention(SpecOf(FindCase(GetParam()), Phase::kForwardBackward));
  ASSERT_TRUE(layer.ok()) << layer.status();
  // y, dx and one gradient per weight: every parameter but dy.
  ASSERT_EQ(layer->outputs.size(), layer->parameters.size());
  RunAndCompare(*layer, GetParam(), 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionGoldenTest,
                         ::testing::Values("mha_causal", "gqa_causal_rope", "mqa_causal_rope",
                                           "gqa_sliding_window", "gqa_chunked", "gqa_qk_norm",
                                           "mla_causal", "mla_no_q_lora"));

// Tensor parallelism: the same numbers from the sharded module on tp devices.
struct TpCase {
  std::string golden;
  int64_t tp;
  bool sequence_parallel;
};

class AttentionTpTest : public ::testing::TestWithParam<TpCase> {};

TEST_P(AttentionTpTest, ShardedGradientsMatchJax) {
  const TpCase& tc = GetParam();
  AttentionLoweringSpec spec = SpecOf(FindCase(tc.golden), Phase::kForwardBackward, tc.tp);
  spec.sequence_parallel = tc.sequence_parallel;
  absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->module->num_partitions(), tc.tp);
  RunAndCompare(*layer, tc.golden, tc.tp);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionTpTest,
    ::testing::Values(TpCase{"gqa_causal_rope", 2, false}, TpCase{"gqa_causal_rope", 2, true},
                      TpCase{"mqa_causal_rope", 2, false}, TpCase{"mqa_causal_rope", 4, true},
                      TpCase{"gqa_causal_rope", 4, false}, TpCase{"gqa_qk_norm", 2, false},
                      TpCase{"gqa_sliding_window", 2, true}, TpCase{"mla_causal", 2, false},
                      TpCase{"mla_causal", 4, true}, TpCase{"mla_no_q_lora", 2, false}),
    [](const ::testing::TestParamInfo<TpCase>& info) {
      return absl::StrCat(info.param.golden, "_tp", info.param.tp,
                          info.param.sequence_parallel ? "_sp" : "");
    });

// ---- Bad specs: every problem reported, "expected ...; got ...".

absl::Status LowerStatus(const AttentionLoweringSpec& spec) {
  return LowerAttention(spec).status();
}

TEST(AttentionSpecTest, RejectsHeadsNotDivisibleByTp) {
  AttentionLoweringSpec spec = SpecOf({"", Gqa(6, 6, 8)}, Phase::kForward, 4);
  EXPECT_THAT(LowerStatus(spec).message(),
              HasSubstr("tp: expected a divisor of the 6 query heads; got 4"));
}

TEST(AttentionSpecTest, RejectsKvHeadsNotDivisibleByTp) {
  AttentionLoweringSpec spec = SpecOf({"", Gqa(12, 6, 8)}, Phase::kForward, 4);
  EXPECT_THAT(LowerStatus(spec).message(),
              HasSubstr("tp: expected a divisor of the 6 K/V heads (as many or more than tp); "
                        "got 4"));
}

TEST(AttentionSpecTest, RejectsTpNotAMultipleOfFewerKvHeads) {
  AttentionLoweringSpec spec = SpecOf({"", Gqa(12, 4, 8)}, Phase::kForward, 6);
  EXPECT_THAT(LowerStatus(spec).message(),
              HasSubstr("tp: expected a multiple of the 4 K/V heads (fewer than tp); got 6"));
}

TEST(AttentionSpecTest, ReportsEveryProblemAtOnce) {
  AttentionSpec a = Gqa(4, 3, 7);
  a.add_layer_scopes(ATTENTION_SCOPE_SLIDING_WINDOW);
  AttentionLoweringSpec spec = SpecOf({"", a}, Phase::kForward);
  spec.seq = 0;
  const absl::Status status = LowerStatus(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("seq: expected > 0; got 0"));
  EXPECT_THAT(status.message(),
              HasSubstr("attention.num_kv_heads: expected a divisor of the 4 query heads; got 3"));
  EXPECT_THAT(status.message(), HasSubstr("attention.head_dim: expected an even width > 0; got 7"));
  EXPECT_THAT(status.message(), HasSubstr("attention.local_window_tokens: expected > 0 for a "
                                          "ATTENTION_SCOPE_SLIDING_WINDOW layer; got 0"));
}

TEST(AttentionSpecTest, RejectsSequenceNotDivisibleUnderSequenceParallelism) {
  AttentionLoweringSpec spec = SpecOf({"", Gqa(4, 2, 8)}, Phase::kForward, 4);
  spec.seq = 18;
  spec.sequence_parallel = true;
  EXPECT_THAT(LowerStatus(spec).message(),
              HasSubstr("seq: expected a multiple of tp = 4 under sequence parallelism; got 18"));
}

TEST(AttentionSpecTest, RejectsMlaWithFewerKvHeads) {
  AttentionSpec a = Mla(4, 16, 16, 8, 4, 8);
  a.set_num_kv_heads(2);
  EXPECT_THAT(LowerStatus(SpecOf({"", a}, Phase::kForward)).message(),
              HasSubstr("attention.num_kv_heads: expected the 4 query heads under MLA; got 2"));
}

// ---- Annotations, text round trip, the simulator.

TEST(AttentionAnnotationTest, EveryInstructionHasBlockPhaseAndParametersTheirRole) {
  absl::StatusOr<LoweredLayer> layer =
      LowerAttention(SpecOf(FindCase("gqa_qk_norm"), Phase::kForwardBackward, 2));
  ASSERT_TRUE(layer.ok()) << layer.status();
  int forward = 0, backward = 0;
  for (const auto& i : layer->module->entry()->instructions()) {
    ASSERT_NE(i->annotation(), nullptr) << i->name();
    EXPECT_EQ(i->annotation()->block(), Annotation::BLOCK_ATTENTION) << i->name();
    const Annotation::Phase phase = i->annotation()->phase();
    EXPECT_TRUE(phase == Annotation::PHASE_FORWARD || phase == Annotation::PHASE_BACKWARD)
        << i->name();
    (phase == Annotation::PHASE_FORWARD ? forward : backward) += 1;
    // Nothing forward reads a backward value.
    if (phase == Annotation::PHASE_FORWARD) {
      for (const Instruction* operand : i->operands()) {
        EXPECT_EQ(operand->annotation()->phase(), Annotation::PHASE_FORWARD)
            << i->name() << " reads " << operand->name();
      }
    }
  }
  EXPECT_GT(forward, 0);
  EXPECT_GT(backward, 0);
  const std::vector<Instruction*>& params = layer->module->entry()->parameters();
  ASSERT_EQ(params.size(), layer->parameters.size());
  for (size_t p = 0; p < params.size(); ++p) {
    EXPECT_EQ(params[p]->annotation()->role(), layer->parameters[p].role) << params[p]->name();
  }
  EXPECT_EQ(layer->parameters.front().role, Annotation::ROLE_ACTIVATION);
  EXPECT_EQ(layer->parameters.back().role, Annotation::ROLE_COTANGENT);
  EXPECT_EQ(params.back()->annotation()->phase(), Annotation::PHASE_BACKWARD);
  // y, the root's first element, is forward.
  EXPECT_EQ(layer->module->entry()->root()->operand(0)->annotation()->phase(),
            Annotation::PHASE_FORWARD);
}

TEST(AttentionTextTest, PrintsParsesBackAndRunsTheSame) {
  for (const char* golden : {"gqa_sliding_window", "mla_causal"}) {
    absl::StatusOr<LoweredLayer> layer =
        LowerAttention(SpecOf(FindCase(golden), Phase::kForwardBackward, 2));
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::string text = PrintModule(*layer->module);
    absl::StatusOr<std::unique_ptr<Module>> parsed = ParseHloModule(text, golden);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_TRUE(VerifyModule(**parsed).ok());
    EXPECT_EQ(PrintModule(**parsed), text);
    // The parsed module computes what the golden says.
    LoweredLayer reparsed{
        .module = *std::move(parsed), .parameters = layer->parameters, .outputs = layer->outputs};
    RunAndCompare(reparsed, golden, 2);
  }
}

// A realistic size for a golden case's attention: S = 2048 tokens, D = 1024, 16 query heads
// (GQA: 2 K/V heads of 64, window 512; MLA: the widths below), tp = 4 with sequence
// parallelism.
AttentionLoweringSpec LargeSpec(const std::string& golden) {
  AttentionLoweringSpec spec = SpecOf(FindCase(golden), Phase::kForwardBackward, 4);
  spec.d_model = 1024;
  spec.seq = 2048;
  spec.batch = 1;
  spec.sequence_parallel = true;
  spec.attention.set_num_query_heads(16);
  if (spec.attention.kind() == ATTENTION_KIND_MLA) {
    spec.attention.set_num_kv_heads(16);
    MlaSpec* m = spec.attention.mutable_mla();
    m->set_q_lora_rank(256);
    m->set_kv_lora_rank(128);
    m->set_qk_nope_head_dim(64);
    m->set_qk_rope_head_dim(32);
    m->set_v_head_dim(64);
  } else {
    spec.attention.set_head_dim(64);
    spec.attention.set_local_window_tokens(512);
  }
  return spec;
}

// The matmul FLOPs of one device's fwd_bwd module (plain ops compute the whole S x S score
// matrix, masked or not). Per device: B = 1, S = 2048, D = 1024, local heads Hl = 16/4 = 4.
//   GQA (Hkv = 2 < tp: one K/V head per device, Dh = 64), forward:
//     q 2·S·D·Hl·Dh, k and v 2·S·D·Dh each, scores and P·V 2·Hl·S·S·Dh each, wo 2·S·Hl·Dh·D;
//   MLA (A = 256, C = 128, N = 64, P = 32, V = 64), forward:
//     x·wq_a 2·S·D·A, ·wq_b 2·S·A·Hl·(N+P), x·wkv_a 2·S·D·(C+P), ·wkv_b 2·S·C·Hl·(N+V),
//     scores 2·Hl·S·S·(N+P), P·V 2·Hl·S·S·V, wo 2·S·Hl·V·D.
// The backward has two matmuls of the same size for each forward one (an input gradient and
// a weight gradient; dP and dV; dQ and dK), so fwd_bwd = 3 x forward. The simulator counts
// every op; the elementwise work (softmax, masks, rope, norms: tens of FLOPs per score) adds
// under 5% at S = 2048.
double MatmulFlops(bool mla) {
  const double S = 2048, D = 1024, Hl = 4;
  if (!mla) {
    const double Dh = 64;
    return 3 * (2 * S * D * Hl * Dh + 2 * 2 * S * D * Dh + 2 * 2 * Hl * S * S * Dh +
                2 * S * Hl * Dh * D);
  }
  const double A = 256, C = 128, N = 64, P = 32, V = 64;
  return 3 * (2 * S * D * A + 2 * S * A * Hl * (N + P) + 2 * S * D * (C + P) +
              2 * S * C * Hl * (N + V) + 2 * Hl * S * S * (N + P) + 2 * Hl * S * S * V +
              2 * S * Hl * V * D);
}

TEST(AttentionSimulatorTest, TimesEveryOpOnTpuV5p) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok()) << chip.status();
  for (const char* golden : {"gqa_sliding_window", "mla_causal"}) {
    AttentionLoweringSpec spec = LargeSpec(golden);
    const bool mla = spec.attention.kind() == ATTENTION_KIND_MLA;
    absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
    ASSERT_TRUE(layer.ok()) << layer.status();
    absl::StatusOr<Topology> topology = TopologyForModule(*layer->module, *chip, "");
    ASSERT_TRUE(topology.ok()) << topology.status();
    absl::StatusOr<Timeline> t = SimulateModule(*layer->module, *chip, *topology);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_GT(t->step_seconds, 0) << golden;
    EXPECT_THAT(t->untimed, ::testing::IsEmpty()) << golden;
    EXPECT_GT(t->communication_busy, 0) << golden;  // the tp collectives
    EXPECT_EQ(t->num_devices, 4) << golden;
    EXPECT_GE(t->flops, MatmulFlops(mla)) << golden;
    EXPECT_LE(t->flops, 1.05 * MatmulFlops(mla)) << golden;
  }
}

// ---- The flash kernel: the attention core as one custom-call each way.

std::vector<const Instruction*> CustomCalls(const Module& module) {
  std::vector<const Instruction*> calls;
  for (const auto& i : module.entry()->instructions()) {
    if (i->opcode() == Opcode::kCustomCall) calls.push_back(i.get());
  }
  return calls;
}

TEST(AttentionFlashTest, OneKernelEachWayWithItsBlocks) {
  for (const GoldenCase& golden : GoldenCases()) {
    for (int64_t tp : {1, 2}) {
      AttentionLoweringSpec spec = SpecOf(golden, Phase::kForwardBackward, tp);
      spec.kernel = AttentionKernel::kFlash;
      spec.flash_block_q = 8;
      spec.flash_block_kv = 4;
      absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
      ASSERT_TRUE(layer.ok()) << golden.name << ": " << layer.status();
      const std::vector<const Instruction*> calls = CustomCalls(*layer->module);
      ASSERT_EQ(calls.size(), 2u) << golden.name;
      spec.kernel = AttentionKernel::kPlain;
      absl::StatusOr<LoweredLayer> plain = LowerAttention(spec);
      ASSERT_TRUE(plain.ok()) << plain.status();
      int plain_scores = 0;
      for (const auto& [op, dims] : plain->dim_names) {
        plain_scores += dims.find('S') != std::string::npos && dims.find('J') != std::string::npos;
      }
      EXPECT_GT(plain_scores, 0) << golden.name;
      const Kernel::Name kernels[] = {Kernel::KERNEL_FLASH_ATTENTION,
                                      Kernel::KERNEL_FLASH_ATTENTION_BWD};
      const absl::string_view targets[] = {kFlashAttentionTarget, kFlashAttentionBwdTarget};
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(calls[k]->attributes().custom_call_target, targets[k]) << golden.name;
        const Kernel& kernel = calls[k]->annotation()->kernel();
        EXPECT_EQ(kernel.kernel(), kernels[k]) << golden.name;
        EXPECT_EQ(kernel.tm(), 8);
        EXPECT_EQ(kernel.tn(), 4);
      }
      // No query x key matrix (names S and J) outside the kernels; the plain path has them.
      for (const auto& [op, dims] : layer->dim_names) {
        EXPECT_FALSE(dims.find('S') != std::string::npos && dims.find('J') != std::string::npos)
            << golden.name << ": " << op->name() << " " << dims;
      }
      // It prints and parses back with its annotations and backend_config.
      const std::string text = PrintModule(*layer->module);
      absl::StatusOr<std::unique_ptr<Module>> parsed = ParseHloModule(text, golden.name);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(PrintModule(**parsed), text);
      const std::vector<const Instruction*> back = CustomCalls(**parsed);
      ASSERT_EQ(back.size(), 2u);
      EXPECT_EQ(back[1]->annotation()->kernel().kernel(), Kernel::KERNEL_FLASH_ATTENTION_BWD);
      EXPECT_EQ(back[0]->attributes().backend_config, calls[0]->attributes().backend_config);
    }
  }
}

TEST(AttentionFlashTest, RejectsBlocksThatDoNotDivideTheSequence) {
  AttentionLoweringSpec spec = SpecOf(FindCase("gqa_causal_rope"), Phase::kForward);
  spec.kernel = AttentionKernel::kFlash;
  spec.flash_block_q = 6;
  spec.flash_block_kv = 0;
  const absl::Status status = LowerStatus(spec);
  EXPECT_THAT(status.message(), HasSubstr("flash_block_q: expected a divisor of seq = 16; got 6"));
  EXPECT_THAT(status.message(), HasSubstr("flash_block_kv: expected a divisor of seq = 16; got 0"));
}

// The kernels' declared FLOPs count the tiles the mask leaves visible. S = 2048 in blocks of
// 128: 16 query blocks. Causal: block i computes i + 1 key blocks, 136 in all. Sliding window
// W = 512: block i sees keys from 128·i − 511, i.e. key blocks i − 4 .. i (5 tiles) for i >= 4
// and 0 .. i before: 1 + 2 + 3 + 4 + 12·5 = 70. Per tile and (batch, local query head; B = 1,
// Hl = 4): forward 2·128·128·(Dqk + Dv), backward 2·128·128·(3·Dqk + 2·Dv).
//   GQA (window, Dqk = Dv = 64): 2·4·70·16384·128 = 1,174,405,120 and ·320: 2,936,012,800.
//   MLA (causal, Dqk = 96, Dv = 64): 2·4·136·16384·160 = 2,852,126,720 and ·416: 7,415,529,472.
TEST(AttentionFlashTest, SimulatorTimesTheKernelsByTheirVisibleTiles) {
  absl::StatusOr<Chip> chip = ResolveChip("tpu_v5p");
  ASSERT_TRUE(chip.ok()) << chip.status();
  const std::map<std::string, std::pair<double, double>> want = {
      {"gqa_sliding_window", {1174405120.0, 2936012800.0}},
      {"mla_causal", {2852126720.0, 7415529472.0}}};
  for (const auto& [golden, flops] : want) {
    AttentionLoweringSpec spec = LargeSpec(golden);
    spec.kernel = AttentionKernel::kFlash;
    absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
    ASSERT_TRUE(layer.ok()) << layer.status();
    absl::StatusOr<Topology> topology = TopologyForModule(*layer->module, *chip, "");
    ASSERT_TRUE(topology.ok()) << topology.status();
    absl::StatusOr<Timeline> t = SimulateModule(*layer->module, *chip, *topology);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_THAT(t->untimed, ::testing::IsEmpty()) << golden;
    int found = 0;
    for (const TimelineOp& op : t->ops) {
      if (op.opcode != "custom-call") continue;
      EXPECT_EQ(op.flops, found == 0 ? flops.first : flops.second) << golden << " " << op.name;
      EXPECT_GT(op.seconds, 0) << golden << " " << op.name;
      ++found;
    }
    EXPECT_EQ(found, 2) << golden;
    // The plain module computes and stores every score of the S x S matrix; the kernel only
    // the visible tiles, in VMEM.
    spec.kernel = AttentionKernel::kPlain;
    absl::StatusOr<LoweredLayer> plain = LowerAttention(spec);
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<Timeline> tp = SimulateModule(*plain->module, *chip, *topology);
    ASSERT_TRUE(tp.ok()) << tp.status();
    EXPECT_LT(t->step_seconds, tp->step_seconds) << golden;
  }
}

// ---- The built-in models.

int CountOpcode(const Module& module, Opcode opcode) {
  int n = 0;
  for (const auto& i : module.entry()->instructions()) n += i->opcode() == opcode;
  return n;
}

// Every built-in model's attention lowers on one device and on tp = 8, and its weights (the
// norm scales aside) hold the elements ModelConfig::AttentionParamsPerLayer counts
// independently (DeepSeek-V3: 187,105,280).
TEST(AttentionModelTest, BuiltInModelsLowerWithTheirParameterCount) {
  for (const char* name : {"deepseek_v3", "kimi_k2", "deepseek_v2_lite", "qwen3_30b_a3b",
                           "qwen3_235b_a22b", "mixtral_8x7b", "mixtral_8x22b", "llama4_maverick"}) {
    absl::StatusOr<ModelConfig> model = ResolveModel(name);
    ASSERT_TRUE(model.ok()) << model.status();
    AttentionLoweringSpec spec = AttentionLoweringSpec::FromModel(*model, 0, 1, 256);
    spec.phase = Phase::kForwardBackward;
    absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
    ASSERT_TRUE(layer.ok()) << name << ": " << layer.status();
    int64_t elements = 0;
    for (const TensorSpec& t : layer->parameters) {
      if (t.role != Annotation::ROLE_TRAINED_WEIGHT || absl::EndsWith(t.name, "_norm")) continue;
      int64_t n = 1;
      for (int64_t d : t.global_dims) n *= d;
      elements += n;
    }
    EXPECT_EQ(elements, model->AttentionParamsPerLayer()) << name;
    spec.tp = 8;
    spec.sequence_parallel = true;
    layer = LowerAttention(spec);
    EXPECT_TRUE(layer.ok()) << name << " on tp = 8: " << layer.status();
  }
}

// Llama 4 Maverick's layer pattern: chunked attention with RoPE on layers 0-2, global NoPE
// attention on layer 3.
TEST(AttentionModelTest, LayerPatternPicksScopeAndRope) {
  absl::StatusOr<ModelConfig> model = ResolveModel("llama4_maverick");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<LoweredLayer> chunked =
      LowerAttention(AttentionLoweringSpec::FromModel(*model, 0, 1, 64));
  ASSERT_TRUE(chunked.ok()) << chunked.status();
  absl::StatusOr<LoweredLayer> nope =
      LowerAttention(AttentionLoweringSpec::FromModel(*model, 3, 1, 64));
  ASSERT_TRUE(nope.ok()) << nope.status();
  EXPECT_GT(CountOpcode(*chunked->module, Opcode::kCos), 0);
  EXPECT_EQ(CountOpcode(*nope->module, Opcode::kCos), 0);
  // The chunked mask divides positions by the chunk; the global one does not.
  EXPECT_GT(CountOpcode(*chunked->module, Opcode::kDivide),
            CountOpcode(*nope->module, Opcode::kDivide));
}

// GPT-OSS's attention biases and sinks are not lowered: a clear error, not a silent omission.
TEST(AttentionModelTest, RefusesBiasesAndSinks) {
  absl::StatusOr<ModelConfig> model = ResolveModel("gpt_oss_120b");
  ASSERT_TRUE(model.ok()) << model.status();
  const absl::Status status =
      LowerAttention(AttentionLoweringSpec::FromModel(*model, 0, 1, 64)).status();
  EXPECT_THAT(status.message(), HasSubstr("attention.has_bias: expected false"));
  EXPECT_THAT(status.message(), HasSubstr("attention.has_sinks: expected false"));
}

// ---- bf16: the matmuls produce bf16, the softmax and norms compute in f32.

// The golden inputs rounded to bf16 and run through the bf16 module, against the f32 goldens.
// Tolerance 3e-2: every bf16 value carries a relative rounding error up to 2^-9 ≈ 2e-3, and
// the backward rounds a chain of about ten matmul and elementwise results before a gradient;
// the worst seen is 1.6e-2 (deterministic: the interpreter's bits do not vary). The f32 test
// above pins the math at 1e-5; this one checks the bf16 module's types and conversions.
TEST(AttentionBf16Test, MatchesTheF32GoldensAtBf16Precision) {
  for (const char* golden : {"gqa_qk_norm", "mla_causal"}) {
    AttentionLoweringSpec spec = SpecOf(FindCase(golden), Phase::kForwardBackward, 2);
    spec.dtype = PrimitiveType::kBF16;
    absl::StatusOr<LoweredLayer> layer = LowerAttention(spec);
    ASSERT_TRUE(layer.ok()) << layer.status();
    std::vector<std::vector<Literal>> inputs(2);
    for (const TensorSpec& p : layer->parameters) {
      const Literal full = Load(golden, p.name);
      for (int64_t d = 0; d < 2; ++d) {
        Literal part = full;
        for (size_t i = 0; i < p.split.size(); ++i) {
          if (p.split[i].empty()) continue;
          const int64_t n = full.shape().dimensions(i) / 2;
          part = SliceDim(part, i, d * n, (d + 1) * n);
        }
        Literal bf16(Shape::Array(PrimitiveType::kBF16, part.shape().dimensions()));
        for (int64_t e = 0; e < part.element_count(); ++e) {
          bf16.SetFromDouble(e, part.GetAsDouble(e));
        }
        inputs[d].push_back(std::move(bf16));
      }
    }
    InterpreterOptions options;
    options.num_devices = 2;
    absl::StatusOr<RunResult> run = RunModule(*layer->module, inputs, options);
    ASSERT_TRUE(run.ok()) << run.status();
    for (size_t i = 0; i < layer->outputs.size(); ++i) {
      const TensorSpec& t = layer->outputs[i];
      Literal want = Load(golden, t.name);
      Literal got = run->outputs[0][i];
      if (!t.split.empty()) {
        // Device 0's shard of a split output.
        for (size_t k = 0; k < t.split.size(); ++k) {
          if (t.split[k].empty()) continue;
          want = SliceDim(want, k, 0, want.shape().dimensions(k) / 2);
        }
      }
      ASSERT_EQ(got.shape().element_type(), PrimitiveType::kBF16) << t.name;
      double max_want = 0, max_diff = 0;
      for (int64_t e = 0; e < want.element_count(); ++e) {
        max_want = std::max(max_want, std::fabs(want.GetAsDouble(e)));
        max_diff = std::max(max_diff, std::fabs(got.GetAsDouble(e) - want.GetAsDouble(e)));
      }
      EXPECT_LE(max_diff / max_want, 3e-2) << golden << " " << t.name;
      EXPECT_GT(max_diff, 0) << golden << " " << t.name << ": bf16 should round somewhere";
    }
  }
}

}  // namespace
}  // namespace perfsim
