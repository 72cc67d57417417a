// `perfsim run`: inputs from .npy files, saved outputs, the checksum, determinism across
// thread counts, and the errors of its contract (exit 2 with a message naming the problem).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/report.pb.h"
#include "sim/interp/npy.h"
#include "sim/util/status_matchers.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;

const std::string kJaxDir = std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/";



// A fresh, empty directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/run_command_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Rows [index * rows/parts, (index+1) * rows/parts) of `global` (dimension 0 split in `parts`):
// the block a device holds of an array sharded on its leading dimension.
Literal LeadingBlock(const Literal& global, int64_t parts, int64_t index) {
  std::vector<int64_t> dims = global.shape().dimensions();
  dims[0] /= parts;
  Literal block(Shape::Array(global.shape().element_type(), dims));
  const size_t bytes = block.data().size();
  std::memcpy(block.mutable_data().data(), global.data().data() + index * bytes, bytes);
  return block;
}

// The interpreter golden test's criterion (tests/interp/jax_golden_test.cc, where the
// tolerances are derived): max |got - want| / max |want| <= 1e-5 for f32, 2^-7 for bf16.
void ExpectMatchesGolden(const Literal& got, const Literal& want, const std::string& what) {
  ASSERT_EQ(got.shape().dimensions(), want.shape().dimensions()) << what;
  ASSERT_EQ(got.shape().element_type(), want.shape().element_type()) << what;
  const double tolerance =
      got.shape().element_type() == PrimitiveType::kBF16 ? std::ldexp(1.0, -7) : 1e-5;
  double scale = 1e-30;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    scale = std::max(scale, std::fabs(want.GetAsDouble(i)));
  }
  for (int64_t i = 0; i < want.element_count(); ++i) {
    ASSERT_LE(std::fabs(got.GetAsDouble(i) - want.GetAsDouble(i)) / scale, tolerance)
        << what << " index " << i << ": got " << got.GetAsDouble(i) << ", want "
        << want.GetAsDouble(i);
  }
}

struct GoldenCase {
  std::string module;
  int64_t num_inputs;
  int64_t num_outputs;
  PrimitiveType type;
  int64_t devices;
  // Inputs sharded on their leading dimension over the devices (the rest are replicated), as
  // the module's partition_spec in MANIFEST.json says.
  std::vector<bool> sharded_inputs;
};

class RunGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RunGolden, SavedOutputsMatchJaxOnTheCommittedInputs) {
  const GoldenCase& c = GetParam();
  const std::string dir = FreshDir(c.module);
  std::vector<std::string> inputs;
  for (int64_t i = 0; i < c.num_inputs; ++i) {
    const std::string file = absl::StrCat(kJaxDir, c.module, ".in", i, ".npy");
    if (c.sharded_inputs.empty() || !c.sharded_inputs[i]) {
      inputs.push_back(file);
      continue;
    }
    // One file per device, named with the {d} placeholder --inputs expands.
    PERFSIM_ASSERT_OK_AND_ASSIGN(Literal global, ReadNpyFile(file, c.type));
    for (int64_t d = 0; d < c.devices; ++d) {
      PERFSIM_ASSERT_OK(WriteNpyFile(absl::StrCat(dir, "/in", i, "_", d, ".npy"),
                                     LeadingBlock(global, c.devices, d)));
    }
    inputs.push_back(absl::StrCat(dir, "/in", i, "_{d}.npy"));
  }
  const std::string out_dir = dir + "/out";
  CliResult r =
      RunCli({"run", kJaxDir + c.module + ".compiled.hlo", "--devices", absl::StrCat(c.devices),
              "--inputs", absl::StrJoin(inputs, ","), "--save-outputs", out_dir});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (int64_t k = 0; k < c.num_outputs; ++k) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(
        Literal want_global,
        ReadNpyFile(absl::StrCat(kJaxDir, c.module, ".out", k, ".npy"), c.type));
    for (int64_t d = 0; d < c.devices; ++d) {
      const std::string saved = absl::StrCat(out_dir, "/out_", d, "_", k, ".npy");
      PERFSIM_ASSERT_OK_AND_ASSIGN(Literal got, ReadNpyFile(saved, c.type));
      // A device holding 1/devices of the leading dimension holds its block of the output.
      const bool sharded =
          c.devices > 1 && got.shape().rank() > 0 &&
          got.shape().dimensions(0) * c.devices == want_global.shape().dimensions(0);
      ExpectMatchesGolden(got, sharded ? LeadingBlock(want_global, c.devices, d) : want_global,
                          saved);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modules, RunGolden,
                         ::testing::Values(
                             // Tuple of five f32 gradients, argsort + ragged-dot.
                             GoldenCase{"moe_ragged_dot_grad", 6, 5, PrimitiveType::kF32, 1, {}},
                             // bf16 stored as <u2 bit patterns, in and out.
                             GoldenCase{"elementwise_bf16", 2, 8, PrimitiveType::kBF16, 1, {}},
                             // 8 devices, per-device files for x, wi_0, wi_1, wo and the cotangent.
                             GoldenCase{"moe_ep_ragged_a2a_grad",
                                        6,
                                        5,
                                        PrimitiveType::kF32,
                                        8,
                                        {true, false, true, true, true, true}}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return info.param.module;
                         });

// A lowered (unpartitioned) shard_map program, tools/jax/shard_map_golden.py: every device runs
// the global program, xla.sdy.GlobalToLocalShape hands it its block of x [8,6] (2x2 mesh,
// P('x','y')) and w (P('y', None)), the body all-reduces over 'y' and all-gathers over 'x', and
// xla.sdy.LocalToGlobalShape assembles the global outputs: both are x @ w [8,5] as JAX
// computed them, on every device.
TEST(RunCommand, LoweredShardMapProgramMatchesJax) {
  const std::string base = std::string(PERFSIM_TESTDATA_DIR) + "/hlo/shard_map/shard_map_matmul";
  const std::string out_dir = FreshDir("shard_map") + "/out";
  CliResult r = RunCli({"run", base + ".lowered.hlo", "--devices", "4", "--inputs",
                        base + ".in0.npy," + base + ".in1.npy", "--save-outputs", out_dir});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (int64_t k = 0; k < 2; ++k) {
    PERFSIM_ASSERT_OK_AND_ASSIGN(
        Literal want, ReadNpyFile(absl::StrCat(base, ".out", k, ".npy"), PrimitiveType::kF32));
    for (int64_t d = 0; d < 4; ++d) {
      const std::string saved = absl::StrCat(out_dir, "/out_", d, "_", k, ".npy");
      PERFSIM_ASSERT_OK_AND_ASSIGN(Literal got, ReadNpyFile(saved, PrimitiveType::kF32));
      ExpectMatchesGolden(got, want, saved);
    }
  }
  // The mesh has 4 devices: another count is a located usage error, not a crash.
  CliResult wrong = RunCli({"run", base + ".lowered.hlo", "--devices", "8"});
  EXPECT_EQ(wrong.code, kExitBadInput) << wrong.err;
  EXPECT_THAT(wrong.err, HasSubstr("expected --devices 4 (the devices of mesh @mesh)"));
}

// The output rows of a table, without the header lines (the peak of live buffers, which
// depends on thread timing, is in the header).
std::string OutputRows(const std::string& table) {
  const size_t at = table.find("output device");
  return at == std::string::npos ? "" : table.substr(table.find('\n', at));
}

TEST(RunCommand, SameBitsWhateverTheThreadCount) {
  const std::string module = kJaxDir + "moe_ep_ragged_a2a_fwd.compiled.hlo";
  std::vector<std::string> rows;
  std::vector<std::string> saved;
  for (const std::string threads : {"1", "3", "0"}) {
    const std::string dir = FreshDir("threads" + threads);
    CliResult r =
        RunCli({"run", module, "--seed", "7", "--threads", threads, "--save-outputs", dir});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    rows.push_back(OutputRows(r.out));
    std::string bytes;
    for (int d = 0; d < 8; ++d) bytes += ReadFile(absl::StrCat(dir, "/out_", d, "_0.npy"));
    saved.push_back(bytes);
  }
  // 8 devices (no --devices: the module's replica groups span devices 0..7), one output each.
  EXPECT_EQ(std::count(rows[0].begin(), rows[0].end(), '\n'), 1 + 8) << rows[0];
  EXPECT_FALSE(saved[0].empty());
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i], rows[0]);
    EXPECT_TRUE(saved[i] == saved[0]) << "saved outputs differ between thread counts";
  }
}

TEST(RunCommand, DifferentSeedsGiveDifferentInputs) {
  // Guards the test above against a seed that is ignored (every run identical trivially).
  const std::string module = kJaxDir + "moe_ragged_dot_fwd.compiled.hlo";
  CliResult a = RunCli({"run", module, "--seed", "1"});
  CliResult b = RunCli({"run", module, "--seed", "2"});
  ASSERT_EQ(a.code, kExitOk) << a.err;
  ASSERT_EQ(b.code, kExitOk) << b.err;
  EXPECT_NE(OutputRows(a.out), OutputRows(b.out));
}

// u8[6] holding the bytes of "foobar": its FNV-1a 64 is the published test vector
// 0x85944171f73967e8 (Fowler/Noll/Vo reference test suite), derived independently of perfsim.
constexpr char kFoobarModule[] = R"(HloModule foobar

ENTRY main {
  ROOT c = u8[6] constant({102, 111, 111, 98, 97, 114})
}
)";

TEST(RunCommand, ChecksumIsFnv1a64OfTheStoredBytes) {
  CliResult r = RunCli({"run", "-"}, kFoobarModule);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("85944171f73967e8"));
  EXPECT_THAT(r.out, HasSubstr("102 111 111 98 ..."));
}

// The JSON read back into its message (proto/report.proto), unknown keys refused.
report::RunReport ParseRunReport(const std::string& json) {
  report::RunReport report;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &report);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return report;
}

TEST(RunCommand, JsonHasTheSameFields) {
  CliResult r = RunCli({"run", "-", "--format", "json"}, kFoobarModule);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const report::RunReport report = ParseRunReport(r.out);
  EXPECT_EQ(report.module(), "foobar");
  EXPECT_EQ(report.inputs().string_value(), "random");
  ASSERT_EQ(report.outputs_size(), 1);
  const report::RunOutput& out = report.outputs(0);
  EXPECT_EQ(out.shape(), "u8[6]");
  EXPECT_EQ(out.dtype(), "u8");
  EXPECT_THAT(out.dimensions(), ::testing::ElementsAre(6));
  EXPECT_EQ(out.fnv1a64(), "85944171f73967e8");
  std::vector<double> first;
  for (const google::protobuf::Value& v : out.first_values()) first.push_back(v.number_value());
  EXPECT_THAT(first, ::testing::ElementsAre(102, 111, 111, 98));
}

TEST(RunCommand, CountsNanAndInfAndPrintsThemAsJsonStrings) {
  // 0/0 = NaN, 1/0 = inf, -1/0 = -inf, 1/1 = 1: one NaN, two infinities.
  const char* text = R"(HloModule nan_inf

ENTRY main {
  n = f32[4] constant({0, 1, -1, 1})
  d = f32[4] constant({0, 0, 0, 1})
  ROOT q = f32[4] divide(n, d)
}
)";
  CliResult table = RunCli({"run", "-"}, text);
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("1      2  nan inf -inf 1"));
  CliResult json = RunCli({"run", "-", "--format=json"}, text);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const report::RunOutput out = ParseRunReport(json.out).outputs(0);
  EXPECT_EQ(out.nan_count(), 1);
  EXPECT_EQ(out.inf_count(), 2);
  ASSERT_EQ(out.first_values_size(), 4);
  EXPECT_EQ(out.first_values(0).string_value(), "nan");
  EXPECT_EQ(out.first_values(1).string_value(), "inf");
  EXPECT_EQ(out.first_values(2).string_value(), "-inf");
  EXPECT_EQ(out.first_values(3).number_value(), 1);
}

TEST(RunCommand, HelpDocumentsTheDistributionAndTheChecksum) {
  CliResult r = RunCli({"run", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("uniform in [-1, 1)"));
  EXPECT_THAT(r.out, HasSubstr("FNV-1a 64"));
  EXPECT_THAT(r.out, HasSubstr("out_<d>_<i>.npy"));
  EXPECT_THAT(RunCli({"--help"}).out, HasSubstr("run FILE.hlo"));
}

// --- errors: exit 2 and a message naming the problem --------------------------------------

const std::string kRaggedFwd = kJaxDir + "moe_ragged_dot_fwd.compiled.hlo";

std::vector<std::string> CommittedInputs(const std::string& module, int count) {
  std::vector<std::string> files;
  for (int i = 0; i < count; ++i) files.push_back(absl::StrCat(kJaxDir, module, ".in", i, ".npy"));
  return files;
}

TEST(RunCommandErrors, MissingInputFile) {
  std::vector<std::string> files = CommittedInputs("moe_ragged_dot_fwd", 5);
  files[2] = "/nonexistent/wi_0.npy";
  CliResult r = RunCli({"run", kRaggedFwd, "--inputs", absl::StrJoin(files, ",")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/wi_0.npy"));
  EXPECT_THAT(r.err, HasSubstr("parameter 2"));
}

TEST(RunCommandErrors, WrongNumberOfInputs) {
  CliResult r = RunCli({"run", kRaggedFwd, "--inputs",
                        absl::StrJoin(CommittedInputs("moe_ragged_dot_fwd", 3), ",")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--inputs: expected 5 .npy files"));
  EXPECT_THAT(r.err, HasSubstr("got 3"));
}

TEST(RunCommandErrors, WrongInputShape) {
  // router_w [24, 16] given where x [64, 24] is expected.
  std::vector<std::string> files = CommittedInputs("moe_ragged_dot_fwd", 5);
  files[0] = files[1];
  CliResult r = RunCli({"run", kRaggedFwd, "--inputs", absl::StrJoin(files, ",")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("expected f32[64,24] for parameter 0"));
  EXPECT_THAT(r.err, HasSubstr("got f32[24,16]"));
}

TEST(RunCommandErrors, WrongInputDtype) {
  const std::string dir = FreshDir("dtype");
  Literal s32(Shape::Array(PrimitiveType::kS32, {64, 24}));
  PERFSIM_ASSERT_OK(WriteNpyFile(dir + "/x.npy", s32));
  std::vector<std::string> files = CommittedInputs("moe_ragged_dot_fwd", 5);
  files[0] = dir + "/x.npy";
  CliResult r = RunCli({"run", kRaggedFwd, "--inputs", absl::StrJoin(files, ",")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr(dir + "/x.npy"));
  EXPECT_THAT(r.err, HasSubstr("f32"));
  EXPECT_THAT(r.err, HasSubstr("s32"));
}

TEST(RunCommandErrors, NotAnNpyFile) {
  const std::string dir = FreshDir("garbage");
  std::vector<std::string> files = CommittedInputs("moe_ragged_dot_fwd", 5);
  files[4] = WriteFile(dir + "/wo.npy", "not numpy");
  CliResult r = RunCli({"run", kRaggedFwd, "--inputs", absl::StrJoin(files, ",")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("wo.npy: npy: expected the \\x93NUMPY magic"));
}

TEST(RunCommandErrors, OpTheInterpreterDoesNotRun) {
  CliResult r = RunCli({"run", "-"}, R"(HloModule feed

ENTRY main {
  t = token[] after-all()
  in = (f32[4], token[]) infeed(t)
  ROOT x = f32[4] get-tuple-element(in), index=0
}
)");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("<stdin>: run failed:"));
  EXPECT_THAT(r.err, HasSubstr("infeed"));
}

TEST(RunCommandErrors, MemoryBudgetBelowThePlannedNeedIsRefusedBeforeTheRun) {
  // The five inputs are 64*24 + 24*16 + 3 * 16*24*40 = 48,000 floats = 192,000 bytes, so a
  // budget of 250,000 bytes admits them; the intermediates (a [128, 40] f32 activation alone is
  // 20,480 bytes) do not fit beside them. The static plan (sim/interp/memory_plan.h) sees it
  // before anything runs and names the instruction at the peak.
  CliResult r = RunCli({"run", kRaggedFwd, "--memory-budget", "250KB"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("moe_ragged_dot_fwd.compiled.hlo: memory budget: the run needs "));
  EXPECT_THAT(r.err, HasSubstr("(inputs 192000 + 1 device x "));
  EXPECT_THAT(r.err, HasSubstr("budget 250000 bytes: expected a need within the budget"));
  EXPECT_EQ(RunCli({"run", kRaggedFwd, "--memory-budget", "1MiB"}).code, kExitOk);
}

TEST(RunCommandErrors, MemoryBudgetBelowTheRandomInputs) {
  CliResult r = RunCli({"run", kRaggedFwd, "--memory-budget", "100KiB"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("(inputs 192000 + 1 device x "));
  EXPECT_THAT(r.err, HasSubstr("budget 102400 bytes: expected a need within the budget"));
}

TEST(RunCommandErrors, RandomInputsBeyondTheBudgetAreRefusedBeforeAllocation) {
  // 2^31 floats = 8 GiB of input and 8 GiB of result, four times the default budget of 4 GiB;
  // the test would run out of memory (or take minutes) if the inputs were made first.
  CliResult r = RunCli({"run", "-"}, R"(HloModule huge

ENTRY main {
  x = f32[2048,1024,1024] parameter(0)
  ROOT n = f32[2048,1024,1024] negate(x)
}
)");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("the run needs 17179869184 bytes (inputs 8589934592 + 1 device x "
                               "8589934592, peaking at n); budget 4294967296 bytes"));
}

TEST(RunCommandErrors, MemoryNeedBeyondInt64IsRefusedNotWrappedIntoAnyBudget) {
  // f32[2305843009213693951] is 2^63 - 4 bytes and fits int64; with the 4-byte input the need
  // is 2^63 bytes, one past int64. Wrapped, the need was negative, passed --memory-budget 1
  // and the run died of std::bad_alloc; saturated, it is refused with need vs budget.
  CliResult r = RunCli({"run", "-", "--memory-budget", "1"}, R"(HloModule huge_need

ENTRY main {
  x = f32[] parameter(0)
  ROOT a = f32[2305843009213693951] broadcast(x), dimensions={}
}
)");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("memory budget: the run needs at least 9223372036854775807 "
                               "(int64's limit) bytes (inputs 4 + 1 device x "
                               "9223372036854775804, peaking at a); budget 1 bytes"));
}

// A ragged-all-to-all over two devices whose s64 offsets come from the module (constants) or,
// with `from_inputs`, from .npy files: one f32[3] row (12 bytes) each way.
std::string RaggedAllToAllModule(bool from_inputs, const std::string& input_offset,
                                 const std::string& output_offset) {
  auto offsets = [&](const std::string& name, int number, const std::string& value) {
    return from_inputs
               ? absl::StrCat("  ", name, " = s64[2] parameter(", number, ")\n")
               : absl::StrCat("  ", name, " = s64[2] constant({", value, ", ", value, "})\n");
  };
  return absl::StrCat("HloModule ragged_wrap\n\nENTRY main {\n",
                      "  input = f32[4,3] parameter(0)\n", "  output = f32[4,3] parameter(1)\n",
                      offsets("input_offsets", 2, input_offset), offsets("send_sizes", 3, "1"),
                      offsets("output_offsets", 4, output_offset), offsets("recv_sizes", 5, "1"),
                      "  ROOT r = f32[4,3] ragged-all-to-all(input, output, input_offsets, "
                      "send_sizes, output_offsets, recv_sizes), replica_groups={{0,1}}\n}\n");
}

constexpr char kWrapMessage[] =
    "expected offset + size <= 4 with offset >= 0 and size >= 0; got 9223372036854775807 + 1";

TEST(RunCommandErrors, RaggedAllToAllOutputOffsetThatWrapsInt64IsRefused) {
  // 2^63 - 1 + 1 wraps negative: unchecked, the row was written 12 bytes before the output
  // buffer and the run aborted with "double free or corruption".
  CliResult r = RunCli({"run", "-", "--devices", "2"},
                       RaggedAllToAllModule(false, "0", "9223372036854775807"));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("output rows output_offsets["));
  EXPECT_THAT(r.err, HasSubstr(kWrapMessage));
}

TEST(RunCommandErrors, RaggedAllToAllInputOffsetThatWrapsInt64IsRefused) {
  // The read side: unchecked, the run exited 0 printing 12 heap bytes from before the input.
  CliResult r = RunCli({"run", "-", "--devices", "2"},
                       RaggedAllToAllModule(false, "9223372036854775807", "0"));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("input rows input_offsets["));
  EXPECT_THAT(r.err, HasSubstr(kWrapMessage));
}

TEST(RunCommandErrors, RaggedAllToAllOffsetsFromNpyInputsThatWrapInt64AreRefused) {
  const std::string dir = FreshDir("ragged_wrap");
  auto s64 = [](int64_t value) {
    Literal l(Shape::Array(PrimitiveType::kS64, {2}));
    l.SetFromInt64(0, value);
    l.SetFromInt64(1, value);
    return l;
  };
  Literal rows(Shape::Array(PrimitiveType::kF32, {4, 3}));
  const std::vector<std::pair<std::string, Literal>> inputs = {
      {"input", rows},
      {"output", rows},
      {"input_offsets", s64(0)},
      {"send_sizes", s64(1)},
      {"output_offsets", s64(std::numeric_limits<int64_t>::max())},
      {"recv_sizes", s64(1)}};
  std::vector<std::string> files;
  for (const auto& [name, literal] : inputs) {
    files.push_back(absl::StrCat(dir, "/", name, ".npy"));
    PERFSIM_ASSERT_OK(WriteNpyFile(files.back(), literal));
  }
  CliResult r = RunCli({"run", "-", "--devices", "2", "--inputs", absl::StrJoin(files, ",")},
                       RaggedAllToAllModule(true, "", ""));
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("output rows output_offsets["));
  EXPECT_THAT(r.err, HasSubstr(kWrapMessage));
}

TEST(RunCommandErrors, BadFlagValues) {
  CliResult budget = RunCli({"run", kRaggedFwd, "--memory-budget", "lots"});
  EXPECT_EQ(budget.code, kExitBadInput);
  EXPECT_THAT(budget.err, HasSubstr("--memory-budget: expected bytes"));
  CliResult devices = RunCli({"run", kRaggedFwd, "--devices", "0"});
  EXPECT_EQ(devices.code, kExitBadInput);
  EXPECT_THAT(devices.err, HasSubstr("--devices: expected an integer >= 1; got '0'"));
  CliResult many = RunCli({"run", kRaggedFwd, "--devices", "5000"});
  EXPECT_EQ(many.code, kExitBadInput);
  EXPECT_THAT(many.err, HasSubstr("--devices: expected at most 4096; got 5000"));
  CliResult format = RunCli({"run", kRaggedFwd, "--format", "xml"});
  EXPECT_EQ(format.code, kExitBadInput);
  EXPECT_THAT(format.err, HasSubstr("--format: expected table or json; got 'xml'"));
  CliResult no_file = RunCli({"run"});
  EXPECT_EQ(no_file.code, kExitBadInput);
  EXPECT_THAT(no_file.err, HasSubstr("expected one FILE.hlo; got 0"));
}

TEST(RunCommandErrors, DeviceCountDisagreesWithTheModule) {
  // The module's collectives have replica groups over devices 0..7.
  CliResult r = RunCli({"run", kJaxDir + "moe_ep_ragged_a2a_fwd.compiled.hlo", "--devices", "4"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("run failed"));
}

TEST(RunCommandErrors, MissingModuleFile) {
  CliResult r = RunCli({"run", "/nonexistent/module.hlo"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/module.hlo"));
}

TEST(RunCommandErrors, InvalidModuleGivesLineAndColumn) {
  CliResult r =
      RunCli({"run", "-"}, "HloModule m\n\nENTRY main {\n  ROOT x = f32[4] negate(y)\n}\n");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:4:"));
}

}  // namespace
}  // namespace perfsim
