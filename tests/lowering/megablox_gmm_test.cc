// megablox_gmm: the validate suite, the tiling each kernel call carries, the row padding and its
// poisoned rows, and a transposed weight on a model with D == F.
//
// Model nano (D = 40, F = 56, E = 12, K = 2), batch 4 × seq 16 = 64 tokens; on one device the
// kernels see m = T·K = 128 sorted rows (64 with the K = 1 sigmoid_prescale router).
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/custom_call_targets.h"
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
using ::perfsim::testing::WithSquareExperts;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kBackend[] = "megablox_gmm";

StepSpec NanoSpec(Phase phase) { return TestStepSpec("nano", kBackend, phase); }

// nano with F = D = 40.
StepSpec SquareSpec(Phase phase) { return WithSquareExperts(NanoSpec(phase)); }

TEST(MegabloxGmmTest, ValidateSuitePassesEveryCase) {
  SuiteOptions options{.base = NanoSpec(Phase::kForward), .backends = {kBackend}};
  // 5 router families × 4 routings × 2 phases × devices 1, 2, 4, 8, all data parallel.
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 160);
}

TEST(MegabloxGmmTest, ValidateSuitePassesWithPaddedRows) {
  // wi.fwd tm = 24 does not divide the rows, so every call pads: m = 128 -> 144 on one device
  // (64 -> 72 with K = 1), 64 -> 72 on two (32 -> 48). The other row tiles shrink to 144 / 72.
  SuiteOptions options{
      .base = NanoSpec(Phase::kForward), .backends = {kBackend}, .devices = {1, 2}};
  options.base.knobs.wi.fwd.tm = 24;
  options.base.knobs.wi.dlhs.tm = 24;
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 80);
}

struct KernelCall {
  std::string target;
  std::vector<int64_t> lhs;  // operand 0 dims
  std::string rhs;           // operand 1: the weight's parameter name, or "" (tgmm)
  std::vector<int64_t> result;
  std::string config;
};

std::vector<KernelCall> KernelCalls(const Module& module) {
  std::vector<KernelCall> calls;
  for (const auto& instruction : module.entry()->instructions()) {
    const std::string& target = instruction->attributes().custom_call_target;
    if (instruction->opcode() != Opcode::kCustomCall ||
        (target != kGmmTarget && target != kTgmmTarget)) {
      continue;
    }
    const Instruction* rhs = instruction->operand(1);
    calls.push_back({target, instruction->operand(0)->shape().dimensions(),
                     rhs->opcode() == Opcode::kParameter ? rhs->name() : "",
                     instruction->shape().dimensions(),
                     instruction->attributes().backend_config.value_or("")});
  }
  return calls;
}

TEST(MegabloxGmmTest, BackendConfigCarriesTheTilingOfEachKernelOnPaddedRows) {
  StepSpec spec = NanoSpec(Phase::kForwardBackward);
  spec.knobs.wi = {.fwd = {24, 64, 32}, .dlhs = {48, 16, 1024}, .drhs = {72, 1024, 8}};
  spec.knobs.wo = {.fwd = {512, 1024, 1024}, .dlhs = {144, 8, 16}, .drhs = {16, 1024, 1024}};
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  // Derivation. m = T·K = 64·2 = 128 rows; tm_f = min(24, 128) = 24, so the rows pad to
  // m_p = ⌈128/24⌉·24 = 6·24 = 144 (MaxText's gmm() pads to a multiple of the wi fwd tm).
  // Every tiling shrinks tm to at most 144; tk and tn stay as configured even where they
  // exceed the kernel's contraction k or output n (megablox allocates full-size blocks:
  // known_bugs.md #23):
  //   wi fwd  (k=D=40, n=F=56): (24, 64, 32)         -> [24,64,32]
  //   wo fwd  (k=F=56, n=D=40): (512, 1024, 1024)    -> [144,1024,1024]
  //   wo dlhs (k=D=40, n=F=56): (144, 8, 16)         -> [144,8,16], transpose_rhs
  //   wo drhs (k=F=56, n=D=40): (16, 1024, 1024)     -> [16,1024,1024]
  //   wi drhs (k=D=40, n=F=56): (72, 1024, 8)        -> [72,1024,8]
  //   wi dlhs (k=F=56, n=D=40): (48, 16, 1024)       -> [48,16,1024], transpose_rhs
  // and 24, 144, 16, 72, 48 all divide 144. gmm lhs/results have the 144 padded rows; tgmm
  // takes the lhs transposed [k, 144] and gives [E=12, k, n].
  const std::vector<KernelCall> calls = KernelCalls(*step->module);
  auto gmm = [](std::vector<int64_t> lhs, std::string rhs, std::vector<int64_t> result,
                std::string tiling, bool transpose) {
    return KernelCall{std::string(kGmmTarget), lhs, rhs, result,
                      "{\"tiling\":[" + tiling + "],\"transpose_rhs\":" +
                          (transpose ? "true" : "false") + ",\"group_offset\":0}"};
  };
  auto tgmm = [](std::vector<int64_t> lhs, std::vector<int64_t> result, std::string tiling) {
    return KernelCall{std::string(kTgmmTarget), lhs, "", result,
                      "{\"tiling\":[" + tiling + "],\"group_offset\":0}"};
  };
  const std::vector<KernelCall> want = {
      gmm({144, 40}, "wi_0", {144, 56}, "24,64,32", false),       // h0
      gmm({144, 40}, "wi_1", {144, 56}, "24,64,32", false),       // h1
      gmm({144, 56}, "wo", {144, 40}, "144,1024,1024", false),    // out
      gmm({144, 40}, "wo", {144, 56}, "144,8,16", true),          // da
      tgmm({56, 144}, {12, 56, 40}, "16,1024,1024"),              // d_wo
      tgmm({40, 144}, {12, 40, 56}, "72,1024,8"),                 // d_wi_0
      tgmm({40, 144}, {12, 40, 56}, "72,1024,8"),                 // d_wi_1
      gmm({144, 56}, "wi_0", {144, 40}, "48,16,1024", true),      // d_rows from dh0
      gmm({144, 56}, "wi_1", {144, 40}, "48,16,1024", true),      // d_rows from dh1
  };
  auto key = [](const KernelCall& c) {
    std::string k = c.target + " " + c.rhs + " " + c.config;
    for (int64_t d : c.lhs) k += " " + std::to_string(d);
    k += " ->";
    for (int64_t d : c.result) k += " " + std::to_string(d);
    return k;
  };
  std::multiset<std::string> got_keys, want_keys;
  for (const KernelCall& c : calls) got_keys.insert(key(c));
  for (const KernelCall& c : want) want_keys.insert(key(c));
  EXPECT_EQ(got_keys, want_keys);
}

TEST(MegabloxGmmTest, DefaultRowTileShrinksToTheRowsWithoutPadding) {
  // MaxText's (512, 1024, 1024) on 8 devices: m = 8·2 = 16 rows, so tm = 16, no pad, and the
  // forward wi call runs [16,1024,1024] (tk > D, tn > F: full-size blocks).
  StepSpec spec = NanoSpec(Phase::kForward);
  spec.parallelism.dp = 8;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  const std::vector<KernelCall> calls = KernelCalls(*step->module);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].lhs, (std::vector<int64_t>{16, 40}));
  EXPECT_EQ(calls[0].config, R"({"tiling":[16,1024,1024],"transpose_rhs":false,"group_offset":0})");
  for (const auto& instruction : step->module->entry()->instructions()) {
    EXPECT_NE(instruction->opcode(), Opcode::kPad) << instruction->name();
  }
}

TEST(MegabloxGmmTest, RejectsARowTileThatDoesNotDivideThePaddedRows) {
  // m_p = 144 (wi.fwd tm 24); a dlhs tm of 96 does not divide 144 (megablox: ValueError).
  StepSpec spec = NanoSpec(Phase::kForwardBackward);
  spec.knobs.wi.fwd.tm = 24;
  spec.knobs.wi.dlhs.tm = 96;
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wi.dlhs tiling (96, 1024, 1024)"),
                             HasSubstr("expected tm dividing the padded row count m = 144"),
                             HasSubstr("128 sorted rows"), HasSubstr("got tm = 96"))));
  // validate reports it as a failure of the case, not as an unsupported combination.
  ValidationCase c{.spec = spec};
  ReferenceCache cache;
  ValidationResult r = ValidateCase(c, cache);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.skipped);
  EXPECT_THAT(r.message, HasSubstr("expected tm dividing the padded row count"));
  // The forward alone never calls the dlhs kernel, so it lowers.
  spec.phase = Phase::kForward;
  EXPECT_TRUE(LowerStep(spec).ok());
  // A wo tile is checked against the same padded rows.
  spec.knobs.wo.fwd.tm = 64;
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wo.fwd tiling (64,")));
  spec.knobs.wo.fwd.tm = 0;
  EXPECT_THAT(LowerStep(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("wo.fwd tiling: expected positive tiles (tm, tk, tn); got (0,")));
}

TEST(MegabloxGmmTest, PoisonedPaddingRowsNeverReachAnOutput) {
  StepSpec spec = NanoSpec(Phase::kForwardBackward);
  spec.knobs.wi.fwd.tm = 24;  // 128 rows padded to 144
  spec.knobs.wi.dlhs.tm = 24;
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  ASSERT_TRUE(step.ok()) << step.status();
  std::vector<Literal> inputs = MakeGlobalInputs(*step, RoutingCase::kRandom, /*seed=*/1);
  std::mutex mutex;
  int gmm_calls = 0;
  int64_t padding_nan = 0, padding_values = 0, covered_non_finite = 0;
  InterpreterOptions options;
  options.observer = [&](int64_t, const Instruction& instruction, const Literal& value) {
    if (instruction.attributes().custom_call_target != kGmmTarget) return;
    std::lock_guard<std::mutex> lock(mutex);
    ++gmm_calls;
    const int64_t n = value.shape().dimensions(1);
    for (int64_t i = 0; i < value.element_count(); ++i) {
      const bool padding = i / n >= 128;
      const bool finite = std::isfinite(value.GetAsDouble(i));
      if (padding) {
        ++padding_values;
        padding_nan += std::isnan(value.GetAsDouble(i)) ? 1 : 0;
      } else if (!finite) {
        ++covered_non_finite;
      }
    }
  };
  absl::StatusOr<RunResult> run = RunModule(*step->module, {inputs}, options);
  ASSERT_TRUE(run.ok()) << run.status();
  // 6 gmm calls (h0, h1, out, da, two d_rows halves), each with 16 padding rows, all NaN.
  EXPECT_EQ(gmm_calls, 6);
  EXPECT_GT(padding_values, 0);
  EXPECT_EQ(padding_nan, padding_values);
  EXPECT_EQ(covered_non_finite, 0);
  for (size_t o = 0; o < run->outputs[0].size(); ++o) {
    const Literal& out = run->outputs[0][o];
    for (int64_t i = 0; i < out.element_count(); ++i) {
      ASSERT_TRUE(std::isfinite(out.GetAsDouble(i))) << step->outputs[o].name << " at " << i;
    }
  }
  ReferenceCache cache;
  ValidationResult r = ValidateLowered(*step, ValidationCase{.spec = spec}, cache);
  EXPECT_TRUE(r.pass) << r.message;
}

TEST(MegabloxGmmTest, SquareModelPassesAndATransposedWeightFails) {
  SuiteOptions options{
      .base = SquareSpec(Phase::kForward), .backends = {kBackend}, .devices = {1, 2}};
  EXPECT_EQ(ExpectAllPass(RunSuite(options)), 80);

  // Mutation: the forward wi_0 gmm reads its [E, D, F] weight as [E, F, D] (transpose_rhs
  // flipped: known_bugs.md #2's [G, N, K] for [G, K, N]). With D == F every shape still checks.
  absl::StatusOr<LoweredStep> step = LowerStep(SquareSpec(Phase::kForward));
  ASSERT_TRUE(step.ok()) << step.status();
  Instruction* mutated = nullptr;
  for (const auto& instruction : step->module->entry()->instructions()) {
    if (instruction->attributes().custom_call_target == kGmmTarget &&
        instruction->operand(1)->name() == "wi_0") {
      ASSERT_EQ(mutated, nullptr) << "one forward wi_0 gmm expected";
      mutated = instruction.get();
    }
  }
  ASSERT_NE(mutated, nullptr);
  std::string& config = *mutated->mutable_attributes()->backend_config;
  const size_t at = config.find("\"transpose_rhs\":false");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, std::string("\"transpose_rhs\":false").size(), "\"transpose_rhs\":true");
  ReferenceCache cache;
  ValidationCase c{.spec = step->spec};
  // The static check sees D contracted with F by name.
  ValidationResult by_names = ValidateLowered(*step, c, cache);
  EXPECT_FALSE(by_names.pass);
  EXPECT_THAT(by_names.message,
              AllOf(HasSubstr("static check"), HasSubstr(mutated->name()),
                    HasSubstr("expected contracting dimensions with the same logical name"),
                    HasSubstr("(D, size 40) vs rhs wi_0 dimension 2 (F, size 40)"),
                    HasSubstr("known_bugs.md #2")));
  // Without the names (a lowering that recorded none), the numbers catch it.
  step->dim_names.erase(mutated->operand(0));
  ValidationResult by_numbers = ValidateLowered(*step, c, cache);
  EXPECT_FALSE(by_numbers.pass);
  EXPECT_THAT(by_numbers.message, HasSubstr("y differs from dense_einsum"));
}

}  // namespace
}  // namespace perfsim
