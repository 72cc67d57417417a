// `perfsim lower` and `perfsim validate` through the CLI library: outputs, JSON schema, exit
// codes and error messages.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/validate_report.pb.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::NanoLowerArgs;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;
using ::testing::Not;



TEST(LowerCliTest, EveryBackendPrintsAModuleThatParsesVerifiesAndRoundTrips) {
  // Each backend on a mesh it supports (ep for the expert-parallel ones), forward and backward,
  // native and in the grouped-matmul forms that XLA:CPU can run: print -> parse -> print is the
  // identity.
  const std::vector<std::pair<std::string, std::string>> backends = {
      {"dense_einsum", "dp=2"},         {"capacity_einsum", "dp=2"},
      {"sparse_ragged_dot", "dp=2"},    {"megablox_gmm", "dp=2"},
      {"ep_ragged_a2a", "ep=2"},        {"ring_of_experts", "ep=2"},
      {"grouped_gemm_aligned", "ep=2"}, {"fused_expert_ffn", "dp=2"}};
  for (const auto& [backend, mesh] : backends) {
    for (const char* form : {"native", "ragged_dot", "masked_dot"}) {
      CliResult r = RunCli(NanoLowerArgs({"--backend", backend, "--phase", "fwd_bwd",
                                          "--parallelism", mesh, "--grouped-matmul", form}));
      ASSERT_EQ(r.code, 0) << backend << " " << form << ": " << r.err;
      absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(r.out, "lowered.hlo");
      ASSERT_TRUE(m.ok()) << backend << " " << form << ": " << m.status();
      EXPECT_TRUE(VerifyModule(**m).ok()) << backend << " " << form;
      EXPECT_EQ(PrintModule(**m), r.out) << backend << " " << form;
      EXPECT_THAT(r.out, HasSubstr("op_name=\"moe/router\"")) << backend;
      EXPECT_THAT(r.out, HasSubstr("op_name=\"moe/experts_bwd\"")) << backend;
      if (std::string(form) == "masked_dot") {
        EXPECT_THAT(r.out, Not(HasSubstr("ragged-dot("))) << backend;
        EXPECT_THAT(r.out, Not(HasSubstr("perfsim.gmm"))) << backend;
      }
    }
  }
}

TEST(LowerCliTest, InputsDirHoldsEveryDevicesShardOfEveryParameter) {
  const std::string dir = ::testing::TempDir() + "/lower_inputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CliResult r = RunCli(NanoLowerArgs(
      {"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--inputs-dir", dir, "--seed", "3"}));
  ASSERT_EQ(r.code, 0) << r.err;
  // nano fwd: x, router_w, wi_0, wi_1, wo, router_score_bias, ws_0, ws_1, ws_o on 2 devices.
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) files += f.is_regular_file();
  EXPECT_EQ(files, 9 * 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/in2.d1.npy"));  // wi_0's shard on device 1
  r = RunCli({"lower", "--seed", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected them only with --inputs-dir"));
}

TEST(LowerCliTest, BadInputIsExitTwoWithTheReason) {
  CliResult r = RunCli({"lower", "--backend", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown backend 'nope'; known: dense_einsum"));
  r = RunCli(NanoLowerArgs(
      {"--backend", "dense_einsum", "--parallelism", "ep=5", "--hw", "gpu_h100", "--mesh", "5"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected batch·seq divisible by dp·fsdp·ep"));
  r = RunCli({"lower", "--batch", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--batch: expected a positive integer; got 'x'"));
  r = RunCli(NanoLowerArgs({"--backend", "dense_einsum", "--parallelism", "ep=2"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("backend dense_einsum: expected ep=1 and tp=1"));
  r = RunCli({"lower", "--backend", "dense_einsum", "--grouped-matmul", "dense"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--grouped-matmul: expected a grouped-matmul form (native, "
                               "ragged_dot, masked_dot); got 'dense'"));
  // A token-dropping buffer is lowered (ep_ragged_a2a_test.cc); a meaningless one is bad input.
  r = RunCli(NanoLowerArgs(
      {"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--ragged-buffer-factor", "1.5"}));
  EXPECT_EQ(r.code, 0) << r.err;
  // int(32·2·1.5) = 96 rows: the dispatch's receive buffer declares its truncation.
  EXPECT_THAT(r.out, HasSubstr("buffer { received: RECEIVED_EXPERT_ROWS truncated_rows: 96 }"));
  r = RunCli(NanoLowerArgs(
      {"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--ragged-buffer-factor", "nan"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("ragged_buffer_factor: expected a finite number at most 16384"));
  r = RunCli(NanoLowerArgs(
      {"--backend", "ep_ragged_a2a", "--parallelism", "ep=2", "--ragged-buffer-factor", "0.001"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("of at least 1 row"));
}

// validate's JSON is proto/validate_report.proto's ValidateReport (unknown fields refused).
report::ValidateReport ParseReport(const std::string& json) {
  report::ValidateReport report;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &report, options);
  EXPECT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json;
  return report;
}

TEST(ValidateCliTest, JsonHasTheContractFields) {
  CliResult r = RunCli({"validate", "--backend", "sparse_ragged_dot", "--devices", "2",
                        "--router", "topk_softmax", "--routing", "skewed", "--phase", "fwd_bwd",
                        "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const report::ValidateReport report = ParseReport(r.out);
  ASSERT_EQ(report.results_size(), 1);
  const report::ValidateResult& v = report.results(0);
  EXPECT_EQ(v.backend(), "sparse_ragged_dot");
  EXPECT_EQ(v.router(), "topk_softmax");
  EXPECT_EQ(v.routing(), "skewed");
  EXPECT_EQ(v.phase(), "fwd_bwd");
  EXPECT_EQ(v.devices(), 2);
  EXPECT_EQ(v.parallelism().dp(), 2);
  EXPECT_EQ(v.parallelism().ep(), 1);
  EXPECT_EQ(v.status(), "pass");
  EXPECT_EQ(v.message(), "");
  EXPECT_EQ(v.cause(), "");
  bool d_wo = false;
  for (const report::ValidateTensorError& e : v.errors()) d_wo |= e.tensor() == "d_wo";
  EXPECT_TRUE(d_wo);
  // Every key is printed, an empty one included.
  EXPECT_THAT(r.out, HasSubstr("\"message\": \"\""));
  EXPECT_THAT(r.out, HasSubstr("\"diverging_output\": \"\""));
}

TEST(ValidateCliTest, TableAndUserModule) {
  CliResult r = RunCli({"validate", "--backend", "dense_einsum", "--devices", "1",
                        "--phase", "fwd", "--router", "softmax_topk", "--routing", "random"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 passed, 0 failed"));
  const std::string testdata = PERFSIM_TESTDATA_DIR;
  r = RunCli({"validate", "--hlo", testdata + "/hlo/jax/moe_ep_ragged_a2a_fwd.compiled.hlo",
              "--model", testdata + "/models/jax_golden.textproto", "--parallelism", "ep=8"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("1 passed, 0 failed"));
}

// The reference-cache bug: the adversarial routing's inputs depend on the mesh and on
// align_size, so cases of different backends must not share reference outputs.
TEST(ValidateCliTest, AdversarialRoutingPassesAcrossBackendsAndMeshes) {
  CliResult r = RunCli({"validate", "--backend",
                        "dense_einsum,grouped_gemm_aligned,ep_ragged_a2a,sparse_ragged_dot",
                        "--routing", "adversarial", "--devices", "1,2,4", "--phase", "fwd",
                        "--router", "softmax_topk"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("12 passed, 0 failed"));
  // The case the bug failed: dense_einsum's cached reference reused for grouped_gemm_aligned.
  r = RunCli({"validate", "--backend", "dense_einsum,grouped_gemm_aligned", "--routing",
              "adversarial", "--devices", "1", "--phase", "fwd", "--router", "softmax_topk"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("2 passed, 0 failed"));
}

// A failing case is exit 1 and says which backend, tensor, index and both values: here a
// user module (`validate --hlo -` reads stdin) that is dense_einsum's forward with the shared
// expert's output dropped.
TEST(ValidateCliTest, AFailureIsExitOneNamingBackendTensorIndexAndValues) {
  CliResult lowered = RunCli(NanoLowerArgs({"--backend", "dense_einsum"}));
  ASSERT_EQ(lowered.code, 0) << lowered.err;
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloModule(lowered.out, "dense.hlo");
  ASSERT_TRUE(m.ok()) << m.status();
  // y = y_routed + y_shared: make the root's element 0 read y_routed alone.
  Instruction* root = (*m)->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kTuple);
  Instruction* y = root->operand(0);
  ASSERT_EQ(y->opcode(), Opcode::kAdd) << y->name();
  root->set_operand(0, y->operand(0));
  const std::string text = PrintModule(**m);
  CliResult r = RunCli({"validate", "--hlo", "-"}, text);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "y differs from the reference at \\[[0-9]+,[0-9]+\\]: got -?[0-9.e-]+, "
                         "want -?[0-9.e-]+ \\(relative error"));
  // The JSON names the same: backend, the tensor and its index, and both values.
  r = RunCli({"validate", "--hlo", "-", "--format=json"}, text);
  EXPECT_EQ(r.code, 1);
  const report::ValidateReport report = ParseReport(r.out);
  ASSERT_EQ(report.results_size(), 1);
  EXPECT_EQ(report.results(0).backend(), "-");
  EXPECT_EQ(report.results(0).status(), "fail");
  EXPECT_EQ(report.results(0).diverging_output(), "y");
  ASSERT_GE(report.results(0).errors_size(), 1);
  EXPECT_EQ(report.results(0).errors(0).tensor(), "y");
  EXPECT_EQ(report.results(0).errors(0).index_size(), 2);
  EXPECT_NE(report.results(0).errors(0).got(), report.results(0).errors(0).want());
  // A backend's failing case names the backend: sparse_ragged_dot sums each token's K expert
  // outputs where dense_einsum sums all E (zeros included), so they differ in the last bits; a
  // tolerance of 1e-12 turns that into a failure.
  r = RunCli({"validate", "--backend", "sparse_ragged_dot", "--devices", "1", "--phase",
              "fwd_bwd", "--router", "softmax_topk", "--routing", "random", "--tolerance",
              "1e-12"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "sparse_ragged_dot: [a-z_0-9]+ differs from dense_einsum at "
                         "\\[[0-9,]+\\]: got -?[0-9.e-]+, want -?[0-9.e-]+ \\(relative error "
                         "[0-9.e-]+ > 1e-12\\)"));
  EXPECT_THAT(r.out, HasSubstr("0 passed, 1 failed"));
}

TEST(ValidateCliTest, BadFlagsAreExitTwo) {
  CliResult r = RunCli({"validate", "--router", "sigmoid"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--router: expected a router family (model, softmax_topk"));
  r = RunCli({"validate", "--routing", "hot"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--routing: expected a routing case (random, skewed"));
  r = RunCli({"validate", "--devices", "0"});
  EXPECT_EQ(r.code, 2);
  r = RunCli({"validate", "--tolerance", "-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tolerance: expected a positive number; got '-1'"));
  r = RunCli({"validate", "--hlo", "/nonexistent.hlo"});
  EXPECT_EQ(r.code, 2);
  const std::string testdata = PERFSIM_TESTDATA_DIR;
  r = RunCli({"validate", "--hlo", testdata + "/hlo/jax/moe_dense_einsum_fwd.lowered.hlo"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected per-device shape"));
}

}  // namespace
}  // namespace perfsim
