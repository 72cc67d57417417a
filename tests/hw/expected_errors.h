// Expected-error annotations in test data files, in the spirit of MLIR's expected-error.
//
// A line of a test file that ends in "# ERROR: <text>" expects exactly one reported problem
// "<file>:<that line>:<col>: ...<text>...". ExpectErrorsMatch checks that the reported problems
// (one per line of a Status message) and the annotations pair up one to one.
#ifndef PERFSIM_TESTS_HW_EXPECTED_ERRORS_H_
#define PERFSIM_TESTS_HW_EXPECTED_ERRORS_H_

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace perfsim {
namespace testing {

struct ExpectedError {
  int line;  // 1-based
  std::string text;
};

inline std::vector<ExpectedError> ReadExpectedErrors(const std::string& contents) {
  std::vector<ExpectedError> expected;
  int line = 0;
  for (absl::string_view text : absl::StrSplit(contents, '\n')) {
    ++line;
    constexpr absl::string_view kMarker = "# ERROR: ";
    const size_t at = text.find(kMarker);
    // The header comment mentions the marker in quotes; only a marker after content counts.
    if (at == absl::string_view::npos || at == 0 || text[at - 1] == '"') continue;
    expected.push_back({line, std::string(text.substr(at + kMarker.size()))});
  }
  return expected;
}

inline void ExpectErrorsMatch(absl::string_view message, absl::string_view filename,
                              const std::vector<ExpectedError>& expected) {
  std::vector<std::string> reported = absl::StrSplit(message, '\n', absl::SkipEmpty());
  std::vector<bool> used(reported.size(), false);
  for (const ExpectedError& want : expected) {
    const std::string prefix = absl::StrCat(filename, ":", want.line, ":");
    bool found = false;
    for (size_t i = 0; i < reported.size() && !found; ++i) {
      if (!used[i] && absl::StartsWith(reported[i], prefix) &&
          absl::StrContains(reported[i], want.text)) {
        used[i] = found = true;
      }
    }
    EXPECT_TRUE(found) << "no problem reported as " << prefix << " ... " << want.text
                       << "\nreported:\n"
                       << message;
  }
  for (size_t i = 0; i < reported.size(); ++i) {
    EXPECT_TRUE(used[i]) << "unexpected problem: " << reported[i];
  }
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_HW_EXPECTED_ERRORS_H_
