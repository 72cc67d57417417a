// Bad input through the whole command line, as files of cases (the CLI counterpart of
// tests/ir/invalid_hlo_test.cc): every file in tests/testdata/invalid/cli/*.case holds cases
// split by a line `// -----`. Each case has
//
//   // command: run {module} --max-loop-iterations 1000   perfsim's arguments, split at spaces
//   // exit: 2                                             the exit code the contract says
//   // expected-error: <substring>                         in what perfsim writes to stderr
//
// and optionally the text of a module after those lines: it is written to a file of its own,
// whose path replaces `{module}` in the command; `{dir}` is a fresh directory. No case may
// crash, hang or write outside its directory: each is one class of issue 16's bad inputs.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

namespace fs = std::filesystem;
using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

struct CliCase {
  std::string name;  // file stem and index, for the test name
  std::string command;
  int exit_code = -1;
  std::string expected_error;
  std::string module;  // empty: the case needs no file
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<CliCase> LoadCases() {
  std::vector<CliCase> cases;
  const fs::path dir = fs::path(PERFSIM_TESTDATA_DIR) / "invalid" / "cli";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".case") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    int index = 0;
    for (absl::string_view chunk : absl::StrSplit(ReadFile(file), "// -----\n")) {
      CliCase c;
      c.name = absl::StrCat(file.stem().string(), "_", index++);
      std::vector<std::string> module_lines;
      for (absl::string_view line : absl::StrSplit(chunk, '\n')) {
        if (absl::ConsumePrefix(&line, "// command: ")) {
          c.command = std::string(line);
        } else if (absl::ConsumePrefix(&line, "// exit: ")) {
          EXPECT_TRUE(absl::SimpleAtoi(line, &c.exit_code)) << c.name;
        } else if (absl::ConsumePrefix(&line, "// expected-error: ")) {
          c.expected_error = std::string(line);
        } else if (!absl::StartsWith(line, "//")) {
          module_lines.emplace_back(line);
        }
      }
      c.module = std::string(absl::StripAsciiWhitespace(absl::StrJoin(module_lines, "\n")));
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

class InvalidCliTest : public ::testing::TestWithParam<CliCase> {};

TEST_P(InvalidCliTest, ExitsAsTheContractSaysWithTheMessage) {
  const CliCase& c = GetParam();
  ASSERT_FALSE(c.command.empty()) << c.name << ": no '// command:' line";
  ASSERT_GE(c.exit_code, 0) << c.name << ": no '// exit:' line";
  ASSERT_FALSE(c.expected_error.empty()) << c.name << ": no '// expected-error:' line";
  const fs::path dir =
      fs::path(::testing::TempDir()) / absl::StrCat("invalid_cli_", ::getpid(), "_", c.name);
  fs::remove_all(dir);
  fs::create_directories(dir / "work");
  const std::string module_path = (dir / "module.hlo").string();
  if (!c.module.empty()) std::ofstream(module_path) << c.module << "\n";
  const std::string command = absl::StrReplaceAll(
      c.command, {{"{module}", module_path}, {"{dir}", (dir / "work").string()}});
  const std::vector<std::string> args = absl::StrSplit(command, ' ', absl::SkipEmpty());
  const CliResult r = RunCli(args);
  EXPECT_EQ(r.code, c.exit_code) << command << "\nstderr: " << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr(c.expected_error)) << command;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidCliTest, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<CliCase>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace perfsim
