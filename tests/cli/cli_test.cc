// The command-line contract (DESIGN.md "Command line"): exit codes and error formats.
#include "cli/cli.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;
using ::testing::StartsWith;



std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

constexpr char kValidModule[] = R"(HloModule negate_module

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(x)
}
)";

TEST(Cli, NoArgumentsIsAUsageError) {
  CliResult r = RunCli({});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("usage: perfsim <command>"));
}

TEST(Cli, HelpExitsZeroAndListsCommands) {
  CliResult r = RunCli({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("hlo check FILE"));
  EXPECT_THAT(r.out, HasSubstr("hw list"));
  EXPECT_THAT(r.out, HasSubstr("models show NAME"));
}

TEST(Cli, UnknownCommandIsAUsageError) {
  CliResult r = RunCli({"frobnicate"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate'"));
}

TEST(Cli, HloCheckAcceptsAValidModule) {
  const std::string path = WriteTempFile("valid.hlo", kValidModule);
  CliResult r = RunCli({"hlo", "check", path});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok: module negate_module, 1 computations, 2 instructions"));
}

TEST(Cli, HloCheckReadsStdin) {
  CliResult r = RunCli({"hlo", "check", "-"}, kValidModule);
  EXPECT_EQ(r.code, kExitOk) << r.err;
}

TEST(Cli, HloCheckReportsFileLineColumnAndExitsTwo) {
  // Line 5 names an operand that does not exist; the error must point at it.
  const std::string path = WriteTempFile("undefined.hlo", R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(y)
}
)");
  CliResult r = RunCli({"hlo", "check", path});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr(path + ":5:"));
  EXPECT_THAT(r.err, HasSubstr("y"));
}

TEST(Cli, HloCheckReportsShapeMismatchWithLocation) {
  // add of f32[2] and f32[3]: the verifier's shape inference rejects it on line 6.
  const std::string path = WriteTempFile("mismatch.hlo", R"(HloModule m

ENTRY main {
  a = f32[2]{0} parameter(0)
  b = f32[3]{0} parameter(1)
  ROOT s = f32[2]{0} add(a, b)
}
)");
  CliResult r = RunCli({"hlo", "check", path});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr(path + ":6:"));
  EXPECT_THAT(r.err, HasSubstr("expected"));
}

TEST(Cli, HloCheckMissingFileIsBadInput) {
  CliResult r = RunCli({"hlo", "check", "/nonexistent/file.hlo"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/file.hlo"));
}

TEST(Cli, HloPrintRoundTrips) {
  const std::string path = WriteTempFile("print.hlo", kValidModule);
  CliResult first = RunCli({"hlo", "print", path});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, StartsWith("HloModule negate_module"));
  CliResult second = RunCli({"hlo", "print", "-"}, first.out);
  ASSERT_EQ(second.code, kExitOk) << second.err;
  EXPECT_EQ(first.out, second.out);
}

TEST(Cli, HloWithoutSubcommandIsAUsageError) {
  CliResult r = RunCli({"hlo"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("usage: perfsim hlo check FILE"));
}

TEST(Cli, UnknownFlagIsAUsageError) {
  CliResult r = RunCli({"hlo", "check", "--bogus", "x.hlo"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --bogus"));
}

}  // namespace
}  // namespace perfsim
