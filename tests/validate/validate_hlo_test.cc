// `perfsim validate --hlo` on JAX-written modules with planted bugs (tools/jax/buggy_modules.py,
// committed under tests/testdata/hlo/jax_buggy/; model tests/testdata/models/jax_buggy.textproto
// with D == F == 16): each fails with exit 1 and a message that names its cause, the correct
// modules pass, and --tolerance, --routing all, --phase fwd_bwd and the keep_unused hint work.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/validate_report.pb.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::NanoLowerArgs;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

std::string Module(const std::string& name) {
  return std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax_buggy/" + name + ".hlo";
}

const std::string& Model() {
  static const std::string* model =
      new std::string(std::string(PERFSIM_TESTDATA_DIR) + "/models/jax_buggy.textproto");
  return *model;
}

CliResult Validate(const std::string& name, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"validate", "--hlo", Module(name), "--model", Model()};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunCli(args);
}

report::ValidateReport ParseReport(const std::string& json) {
  report::ValidateReport report;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &report, options);
  EXPECT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json;
  return report;
}

TEST(ValidateHloCauses, CorrectModulesPass) {
  for (const char* name : {"moe_correct_dense", "moe_correct_sorted"}) {
    CliResult r = Validate(name, {"--routing", "all"});
    EXPECT_EQ(r.code, 0) << name << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("4 passed, 0 failed")) << name;
  }
}

// known_bugs.md #1, silent form: einsum "td,efd->tef" on wi_0 [E, D, F] with D == F runs and
// gives wrong numbers; the dot's dimension numbers and wi_0's role name the F axis.
TEST(ValidateHloCauses, TransposedWeightWithEqualDAndFNamesTheAxis) {
  CliResult r = Validate("bug_transposed_wi_0");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("wi_0 is contracted over its F axis"));
  EXPECT_THAT(r.out, HasSubstr("shapes [E,F,D] vs expected [E,D,F]"));
}

TEST(ValidateHloCauses, CombineBeforeTheInversePermutationIsNamed) {
  CliResult r = Validate("bug_combine_before_unpermute");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("combine reads expert outputs before the inverse permutation"));
}

TEST(ValidateHloCauses, MissingRenormalisationIsNamed) {
  CliResult r = Validate("bug_no_renormalisation");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("y matches the reference with the top-k weights not renormalised"));
  EXPECT_THAT(r.out, HasSubstr("missing renormalisation"));
}

TEST(ValidateHloCauses, RouterInBf16IsNamed) {
  CliResult r = Validate("bug_router_bf16");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("router matmul in bf16"));
}

TEST(ValidateHloCauses, DroppedTokensAreNamed) {
  CliResult r = Validate("bug_dropped_tokens");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("tokens dropped"));
  EXPECT_THAT(r.out, HasSubstr("in a layer the model declares dropless"));
}

// The JSON carries the cause as a field, and parses back into ValidateReport.
TEST(ValidateHloCauses, JsonCarriesTheCause) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bug_transposed_wi_0", "contracting_dimensions"},
      {"bug_combine_before_unpermute", "combine_order"},
      {"bug_no_renormalisation", "renormalisation"},
      {"bug_router_bf16", "router_precision"},
      {"bug_dropped_tokens", "dropped_tokens"},
      {"moe_correct_dense", ""}};
  for (const auto& [name, cause] : cases) {
    CliResult r = Validate(name, {"--format=json"});
    EXPECT_EQ(r.code, cause.empty() ? 0 : 1) << name << r.err;
    const report::ValidateReport report = ParseReport(r.out);
    ASSERT_EQ(report.results_size(), 1) << name;
    EXPECT_EQ(report.results(0).cause(), cause) << name;
    EXPECT_EQ(report.results(0).diverging_output(), cause.empty() ? "" : "y") << name;
  }
}

TEST(ValidateHloOptions, ToleranceIsHonoured) {
  // The sorted layer sums each token's K rows where the reference sums all E: ~1e-7 apart.
  CliResult r = Validate("moe_correct_sorted", {"--tolerance", "1e-12"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("> 1e-12)"));
  r = Validate("moe_correct_sorted", {"--tolerance", "1e-3"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  // A loose tolerance lets the bf16 router's small error through the numbers; the static check
  // still fails it.
  r = Validate("bug_router_bf16", {"--tolerance", "0.5"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("router matmul in bf16"));
}

TEST(ValidateHloOptions, RoutingAllRunsEveryCase) {
  CliResult r = Validate("bug_no_renormalisation", {"--routing", "all"});
  EXPECT_EQ(r.code, 1);
  for (const char* routing : {" random ", " skewed ", " empty_experts ", " one_expert "}) {
    EXPECT_THAT(r.out, HasSubstr(routing));
  }
  // one_expert routes every token to one expert with weight ~1 (logit +30) and the second pick
  // ~e^-30: the k weights already sum to 1, so renormalising changes nothing there.
  EXPECT_THAT(r.out, HasSubstr("1 passed, 3 failed"));
}

// A jax.grad module: dy last, the five gradients out. Every gradient is compared and the one
// that differs is named (not a "forward mismatch" of dx against y).
TEST(ValidateHloOptions, PhaseFwdBwdComparesEveryGradient) {
  CliResult r = Validate("moe_correct_grad", {"--phase", "fwd_bwd", "--routing", "all"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("4 passed, 0 failed"));
  r = Validate("bug_grad_wo", {"--phase", "fwd_bwd", "--format=json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const report::ValidateReport report = ParseReport(r.out);
  ASSERT_EQ(report.results_size(), 1);
  const report::ValidateResult& v = report.results(0);
  EXPECT_EQ(v.diverging_output(), "d_wo");
  std::vector<std::string> tensors;
  for (const report::ValidateTensorError& e : v.errors()) tensors.push_back(e.tensor());
  EXPECT_THAT(tensors, ::testing::ElementsAre("dx", "d_router_w", "d_wi_0", "d_wi_1", "d_wo"));
  EXPECT_THAT(v.message(), HasSubstr("d_wo differs from the reference"));
  EXPECT_THAT(v.message(), HasSubstr("dx, d_router_w, d_wi_0, d_wi_1 match"));
  // Without --phase fwd_bwd the count says what the extra parameter is.
  r = Validate("moe_correct_grad");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("validate it with --phase fwd_bwd"));
}

TEST(ValidateHloOptions, AParameterCountShortOfTheContractMentionsKeepUnused) {
  CliResult r = Validate("bug_keep_unused");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("got 4"));
  EXPECT_THAT(r.err, HasSubstr("keep_unused=True"));
}

// capacity_einsum at its default capacity factor drops some of the K assignments of some
// tokens: no row is all zero, but the rows that differ are counted against those that match.
TEST(ValidateHloCauses, AFaultConfinedToSomeTokensIsLocalised) {
  CliResult lowered = RunCli(NanoLowerArgs({"--backend", "capacity_einsum", "--phase", "fwd"}));
  ASSERT_EQ(lowered.code, 0) << lowered.err;
  CliResult r = RunCli({"validate", "--hlo", "-"}, lowered.out);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("[0-9]+ of 64 tokens' rows differ and the other "
                                              "[0-9]+ match: a fault confined to some tokens"));
}

// `--phase all` sweeps both phases of the suite (it was once refused as a step's phase).
TEST(ValidateOptions, PhaseAllRunsBothPhases) {
  for (const char* flag : {"--phase=all", "--phase all"}) {
    std::vector<std::string> args = {"validate", "--backend",    "dense_einsum", "--devices", "1",
                                     "--router", "softmax_topk", "--routing",    "random"};
    if (std::string(flag) == "--phase all") {
      args.insert(args.end(), {"--phase", "all"});
    } else {
      args.push_back(flag);
    }
    CliResult r = RunCli(args);
    EXPECT_EQ(r.code, 0) << flag << r.err;
    EXPECT_THAT(r.out, HasSubstr(" fwd_bwd "));
    EXPECT_THAT(r.out, HasSubstr("2 passed, 0 failed")) << flag;
  }
}

// The static checks on their own: perfsim's own lowerings, as user modules, pass them.
TEST(UserModuleChecks, PerfsimLoweringsPass) {
  for (const char* backend : {"dense_einsum", "sparse_ragged_dot", "ep_ragged_a2a", "megablox_gmm",
                              "grouped_gemm_aligned", "ring_of_experts"}) {
    for (const char* phase : {"fwd", "fwd_bwd"}) {
      CliResult lowered = RunCli(NanoLowerArgs({"--backend", backend, "--phase", phase}));
      ASSERT_EQ(lowered.code, 0) << lowered.err;
      CliResult r = RunCli({"validate", "--hlo", "-", "--phase", phase}, lowered.out);
      EXPECT_EQ(r.code, 0) << backend << " " << phase << "\n" << r.out << r.err;
    }
  }
}

}  // namespace
}  // namespace perfsim
