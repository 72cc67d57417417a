// Issue 16's input and output classes through the command line: inputs are regular files or
// stdin under a stated size limit; every write is checked and atomic; rates and declared
// costs are range-checked so that no prediction is inf or NaN; a validate that compared
// nothing does not pass.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;
using ::testing::Not;

// A directory of its own for each test, removed at the end.
class IoContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("io_contract_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  }
  static std::string Read(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream s;
    s << file.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

constexpr char kNegate[] = R"(HloModule negate_module

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(x)
}
)";

TEST_F(IoContractTest, DevZeroAsAnInputIsRefusedByName) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"hlo", "check", "/dev/zero"},
                                             {"cost", "/dev/zero", "--hw", "tpu_v5p"},
                                             {"run", "/dev/zero"},
                                             {"accuracy", "/dev/zero"},
                                             {"hw", "show", "/dev/zero"}}) {
    const CliResult r = RunCli(args);
    EXPECT_EQ(r.code, kExitBadInput) << args[0];
    EXPECT_THAT(r.err, HasSubstr("/dev/zero: expected a regular file or '-'; got a character "
                                 "device"))
        << args[0];
  }
}

TEST_F(IoContractTest, ADirectoryAsAnInputIsRefusedByName) {
  const CliResult r = RunCli({"hlo", "check", dir_.string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr(dir_.string() + ": expected a regular file or '-'; got a "
                                                "directory"));
}

TEST_F(IoContractTest, ADirectoryInRunInputsIsRefusedNotAnUncaughtException) {
  const std::string module = Write("negate.hlo", kNegate);
  const CliResult r = RunCli({"run", module, "--inputs", dir_.string()});
  EXPECT_EQ(r.code, kExitBadInput) << r.err;
  EXPECT_THAT(r.err, HasSubstr("got a directory"));
}

TEST_F(IoContractTest, TraceToAFullDeviceIsAnError) {
  const CliResult r = RunCli({"predict", "--trace", "/dev/full"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err,
              HasSubstr("--trace: /dev/full: expected a regular file to write; got a character "
                        "device"));
}

TEST_F(IoContractTest, TraceIntoAMissingDirectoryNamesThePath) {
  const std::string path = Path("no/such/trace.json");
  const CliResult r = RunCli({"predict", "--trace", path});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--trace: " + path + ": cannot write"));
}

TEST_F(IoContractTest, TraceIsWrittenWholeWithNoTemporaryLeft) {
  const std::string path = Path("trace.json");
  const CliResult r = RunCli({"predict", "--trace", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string trace = Read(path);
  EXPECT_EQ(trace.front(), '{');
  EXPECT_EQ(trace[trace.find_last_not_of('\n')], '}');
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(IoContractTest, SavedOutputsAreAllOrNothing) {
  // Two outputs; the second's target is a directory, so neither file may appear.
  const std::string module = Write("pair.hlo", R"(HloModule pair

ENTRY main {
  x = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(x)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(n, x)
}
)");
  const std::string out = Path("out");
  std::filesystem::create_directories(std::filesystem::path(out) / "out_0_1.npy");
  const CliResult r = RunCli({"run", module, "--save-outputs", out});
  EXPECT_EQ(r.code, kExitBadInput) << r.err;
  EXPECT_THAT(r.err, HasSubstr("out_0_1.npy: expected a regular file to write; got a directory"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(out) / "out_0_0.npy"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(out)) ++entries;
  EXPECT_EQ(entries, 1);  // only the directory that was in the way
}

TEST_F(IoContractTest, ImplausibleHardwareRatesAreRefusedBeforeTheyMakeInf) {
  // 1e-308 bytes/s once passed validation and printed "step time inf us".
  const std::string builtin =
      Read(std::string(PERFSIM_SOURCE_DIR) + "/hardware/tpu_v5p.textproto");
  const size_t at = builtin.find("hbm_bytes_per_second:");
  ASSERT_NE(at, std::string::npos);
  const size_t end = builtin.find('\n', at);
  const std::string slow = builtin.substr(0, at) + "hbm_bytes_per_second: 1e-308" +
                           builtin.substr(end);
  const std::string path = Write("slow.textproto", slow);
  const CliResult r = RunCli({"predict", "--model", "nano", "--hw", path, "--parallelism",
                              "ep=1", "--backend", "sparse_ragged_dot"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err, HasSubstr("memory.hbm_bytes_per_second: expected a value in [1e+06, "
                               "1e+15] bytes/s; got 1e-308"));
  EXPECT_THAT(r.out, Not(HasSubstr("inf")));
}

TEST_F(IoContractTest, ANegativeDeclaredKernelCostIsRefused) {
  const std::string module = Write("pallas.hlo", R"(HloModule pallas

ENTRY main {
  x = f32[128,128]{1,0} parameter(0)
  ROOT k = f32[128,128]{1,0} custom-call(x), custom_call_target="tpu_custom_call", backend_config={"custom_call_config": {"cost_estimate": {"flops": -1, "transcendentals": 0, "bytes_accessed": 131072}}}
}
)");
  const CliResult r = RunCli({"cost", module, "--hw", "tpu_v5p"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.err,
              HasSubstr("k: cost_estimate.flops: expected a finite number in [0, 1e30]; got -1"));
}

TEST_F(IoContractTest, APlausibleDeclaredKernelCostIsUsed) {
  const std::string module = Write("pallas.hlo", R"(HloModule pallas

ENTRY main {
  x = f32[128,128]{1,0} parameter(0)
  ROOT k = f32[128,128]{1,0} custom-call(x), custom_call_target="tpu_custom_call", backend_config={"custom_call_config": {"cost_estimate": {"flops": 4194304, "transcendentals": 0, "bytes_accessed": 131072}}}
}
)");
  const CliResult r = RunCli({"cost", module, "--hw", "tpu_v5p", "--format=json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"flops\": 4194304"));
}

TEST_F(IoContractTest, StdoutToAFullDeviceExitsNonZero) {
  // Through the real binary: the check is in main(), on the process's standard output.
  const std::string command =
      absl::StrCat(PERFSIM_BINARY, " hw list 2>&1 >/dev/full; echo \"exit=$?\"");
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  ::pclose(pipe);
  EXPECT_THAT(output, HasSubstr("perfsim: <stdout>: write failed"));
  EXPECT_THAT(output, HasSubstr("exit=3"));
}

TEST_F(IoContractTest, ValidateWhereEveryCaseIsSkippedDoesNotPass) {
  // 64 tokens of the nano model cannot be split over 3 expert-parallel devices: the one case
  // asked for is skipped, nothing is compared, and that once exited 0.
  const CliResult r = RunCli({"validate", "--backend", "ep_ragged_a2a", "--devices", "3",
                              "--phase", "fwd", "--routing", "random", "--router",
                              "softmax_topk"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_THAT(r.out, HasSubstr("0 passed, 0 failed, 1 skipped"));
  EXPECT_THAT(r.err, HasSubstr("perfsim: validate: expected at least one case to run; got 1 "
                               "case, skipped (first: ep_ragged_a2a: expected batch·seq "
                               "divisible by dp·fsdp·ep"));
  // One case that runs is enough for a pass.
  const CliResult ran = RunCli({"validate", "--backend", "ep_ragged_a2a", "--devices", "3,4",
                                "--phase", "fwd", "--routing", "random", "--router",
                                "softmax_topk"});
  EXPECT_EQ(ran.code, kExitOk) << ran.out << ran.err;
}

}  // namespace
}  // namespace perfsim
