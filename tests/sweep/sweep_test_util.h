// Shared helpers of the sweep tests: small spaces and files written to the test's temp dir.
#ifndef PERFSIM_TESTS_SWEEP_SWEEP_TEST_UTIL_H_
#define PERFSIM_TESTS_SWEEP_SWEEP_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "sim/sweep/space.h"

namespace perfsim {

// nano (D = 40, F = 56, E = 12, K = 2, one shared expert of width 56, f32) on 8 H100s (one
// NVLink domain), forward only, seq 4: every factorisation of 8 and the backends given.
inline SweepSpace NanoSpace(std::vector<std::string> backends) {
  SweepSpace s;
  s.model = "nano";
  s.hw = "gpu_h100";
  s.mesh = "8";
  s.phase = Phase::kForward;
  s.seq = 4;
  s.backends = std::move(backends);
  return s;
}

inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::string WriteTempFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  out << text;
  EXPECT_TRUE(out.good()) << path;
  return path;
}

// A copy of models/nano.textproto with `replacements` applied (whole lines "key: value").
inline std::string NanoVariant(const std::string& name,
                               std::vector<std::pair<std::string, std::string>> replacements) {
  std::string text = ReadFileOrDie(std::string(PERFSIM_SOURCE_DIR) + "/models/nano.textproto");
  for (const auto& [from, to] : replacements) {
    EXPECT_NE(text.find(from), std::string::npos) << from;
    absl::StrReplaceAll({{from, to}}, &text);
  }
  return WriteTempFile(name, text);
}

}  // namespace perfsim

#endif  // PERFSIM_TESTS_SWEEP_SWEEP_TEST_UTIL_H_
