// Negative tests as files, in the spirit of MLIR's invalid.mlir: every file in
// tests/testdata/invalid/ holds cases split by a line `// -----`. Each case carries one line
//
//   // expected-error@LINE:COL: <substring>     (or)     // expected-error: <substring>
//
// and must fail to parse, or parse and then fail VerifyModule (shape mismatches, cycles), with
// a message containing <substring>. With @LINE:COL the message must start with that location
// (after "<file>:" for parse errors); LINE counts lines of the whole file, since each case is
// parsed with the lines before it blanked out.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

namespace fs = std::filesystem;

struct InvalidCase {
  std::string file;  // base name
  int first_line = 1;
  std::string text;  // the case, preceded by blank lines up to first_line
  std::string expected_substring;
  int expected_line = 0;  // 0 when no @LINE:COL was given
  int expected_column = 0;
  std::string test_name;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Parses "// expected-error@12:5: text" or "// expected-error: text" at the start of `line`.
bool ParseExpectation(absl::string_view line, InvalidCase* c) {
  constexpr absl::string_view kPrefix = "// expected-error";
  if (!absl::ConsumePrefix(&line, kPrefix)) return false;
  if (absl::ConsumePrefix(&line, "@")) {
    const size_t colon = line.find(':');
    const size_t second = colon == absl::string_view::npos ? colon : line.find(':', colon + 1);
    if (second == absl::string_view::npos ||
        !absl::SimpleAtoi(line.substr(0, colon), &c->expected_line) ||
        !absl::SimpleAtoi(line.substr(colon + 1, second - colon - 1), &c->expected_column)) {
      return false;
    }
    line.remove_prefix(second);
  }
  if (!absl::ConsumePrefix(&line, ":")) return false;
  c->expected_substring = std::string(absl::StripAsciiWhitespace(line));
  return !c->expected_substring.empty();
}

std::vector<InvalidCase> LoadCases() {
  std::vector<InvalidCase> cases;
  const fs::path dir = fs::path(PERFSIM_TESTDATA_DIR) / "invalid";
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    const std::string content = ReadFile(path);
    // Split on lines that are exactly "// -----", remembering where each case starts.
    std::vector<std::string> lines = absl::StrSplit(content, '\n');
    int case_start = 0;
    int index = 0;
    auto finish = [&](int end) {
      InvalidCase c;
      c.file = path.filename().string();
      c.first_line = case_start + 1;
      c.text = std::string(case_start, '\n');
      for (int i = case_start; i < end; ++i) {
        c.text += lines[i];
        if (i + 1 < end) c.text += "\n";
        ParseExpectation(lines[i], &c);
      }
      c.test_name = absl::StrCat(path.stem().string(), "_case", index++, "_line", c.first_line);
      cases.push_back(std::move(c));
    };
    for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
      if (absl::StripTrailingAsciiWhitespace(lines[i]) == "// -----") {
        finish(i);
        case_start = i + 1;
      }
    }
    finish(static_cast<int>(lines.size()));
  }
  return cases;
}

class InvalidHloTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidHloTest, FailsWithTheExpectedError) {
  const InvalidCase& c = GetParam();
  ASSERT_FALSE(c.expected_substring.empty())
      << c.file << ": the case at line " << c.first_line << " has no '// expected-error' line";
  auto module = ParseHloModule(c.text, c.file);
  absl::Status status = module.status();
  std::string location_prefix = absl::StrCat(c.file, ":");
  if (module.ok()) {
    status = VerifyModule(**module);
    location_prefix.clear();
  }
  ASSERT_FALSE(status.ok()) << c.file << " line " << c.first_line
                            << ": parsed and verified, expected an error containing '"
                            << c.expected_substring << "'";
  const std::string message(status.message());
  EXPECT_THAT(message, ::testing::HasSubstr(c.expected_substring)) << c.file;
  if (c.expected_line > 0) {
    EXPECT_TRUE(absl::StartsWith(
        message, absl::StrCat(location_prefix, c.expected_line, ":", c.expected_column, ":")))
        << c.file << ": expected the error at " << c.expected_line << ":" << c.expected_column
        << "; got: " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, InvalidHloTest, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& info) {
                           std::string name = info.param.test_name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Guards against the directory going missing: the files above hold well over 50 cases.
TEST(InvalidHlo, FindsTheCaseFiles) { EXPECT_GE(LoadCases().size(), 50u); }

}  // namespace
}  // namespace perfsim
