// The printer over XLA's own test suite (shared/reference/xla_test_suite, read in place, never
// copied): every module expectations.csv marks `accept` that perfsim parses and verifies prints
// to a fixed point, Print(Parse(Print(m))) == Print(m), with as many instructions and
// computations as the module had.
//
// Whether XLA reads that print back with the same meaning needs jaxlib:
// tools/jax/xla_print_check.py checks it by hand (tools/jax/README.md).
//
// The suite grows as the parser learns more of it; the test covers whatever parses, and fails
// if fewer modules parse than the 4,235 that did when it was written.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"

namespace perfsim {
namespace {

namespace fs = std::filesystem;

const fs::path kSuite = fs::path(PERFSIM_SHARED_DIR) / "reference" / "xla_test_suite";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Files expectations.csv marks `accept` (columns: file,expect,why_may_reject).
std::vector<std::string> AcceptedFiles() {
  std::vector<std::string> files;
  std::istringstream csv(ReadFile(kSuite / "expectations.csv"));
  std::string line;
  while (std::getline(csv, line)) {
    const std::vector<std::string> columns = absl::StrSplit(line, ',');
    if (columns.size() >= 2 && columns[1] == "accept") files.push_back(columns[0]);
  }
  return files;
}

// The first line where two texts differ, for the failure message.
std::string FirstDifference(const std::string& a, const std::string& b) {
  const std::vector<std::string> lines_a = absl::StrSplit(a, '\n');
  const std::vector<std::string> lines_b = absl::StrSplit(b, '\n');
  for (size_t i = 0; i < lines_a.size() || i < lines_b.size(); ++i) {
    const std::string left = i < lines_a.size() ? lines_a[i] : "<end>";
    const std::string right = i < lines_b.size() ? lines_b[i] : "<end>";
    if (left != right) {
      return absl::StrCat("line ", i + 1, ":\n    first:  ", left, "\n    second: ", right);
    }
  }
  return "texts equal";
}

// Why a module perfsim accepts does not round-trip, or "" when it does.
std::string RoundTripProblem(const Module& module) {
  const std::string printed = PrintModule(module);
  absl::StatusOr<std::unique_ptr<Module>> reparsed = ParseHloModule(printed, "printed.hlo");
  if (!reparsed.ok())
    return absl::StrCat("the print does not parse: ", reparsed.status().message());
  const std::string reprinted = PrintModule(**reparsed);
  if (reprinted != printed) {
    return absl::StrCat("print -> parse -> print differs at ", FirstDifference(printed, reprinted));
  }
  if ((*reparsed)->instruction_count() != module.instruction_count() ||
      (*reparsed)->computations().size() != module.computations().size()) {
    return absl::StrCat("the print has ", (*reparsed)->instruction_count(), " instructions in ",
                        (*reparsed)->computations().size(), " computations; the module had ",
                        module.instruction_count(), " in ", module.computations().size());
  }
  return "";
}

TEST(XlaSuiteRoundTrip, EveryAcceptedModulePrintsToAFixedPoint) {
  std::error_code error;
  if (!fs::is_regular_file(kSuite / "expectations.csv", error)) {
    GTEST_SKIP() << "no XLA test suite at " << kSuite;
  }
  const std::vector<std::string> files = AcceptedFiles();
  // The suite holds 4,790 modules XLA accepts (README.md there).
  ASSERT_GE(files.size(), 4790u) << "expectations.csv lists too few accepted modules";

  int64_t accepted = 0;
  std::vector<std::string> problems;
  for (const std::string& file : files) {
    const std::string text = ReadFile(kSuite / "modules" / file);
    absl::StatusOr<std::unique_ptr<Module>> module = ParseHloModule(text, file);
    if (!module.ok() || !VerifyModule(**module).ok()) continue;  // rejected: not this test's
    ++accepted;
    const std::string problem = RoundTripProblem(**module);
    if (!problem.empty()) problems.push_back(absl::StrCat(file, ": ", problem));
  }
  EXPECT_GE(accepted, 4235) << "fewer suite modules parse and verify than when this test was "
                               "written";
  std::string listed;
  for (size_t i = 0; i < problems.size() && i < 20; ++i)
    absl::StrAppend(&listed, problems[i], "\n");
  EXPECT_TRUE(problems.empty()) << problems.size() << " of " << accepted
                                << " accepted modules do not round-trip; the first ones:\n"
                                << listed;
}

}  // namespace
}  // namespace perfsim
