// Round trip over every real HLO module we have: the XLA corpus in shared/reference (read in
// place, never copied) and every .hlo under tests/testdata/hlo (recursively, so generated JAX
// dumps in tests/testdata/hlo/jax/ are picked up as they land).
//
// For each file: it parses; it verifies; printing it, parsing the print and printing again
// gives the same text (Print(Parse(Print(Parse(t)))) == Print(Parse(t))).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

namespace fs = std::filesystem;

struct CorpusFile {
  std::string path;
  std::string test_name;
};

std::string TestNameFor(const std::string& prefix, const fs::path& relative) {
  std::string name = prefix + "_" + relative.string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

void AddHloFiles(const fs::path& root, const std::string& prefix, bool recursive,
                 std::vector<CorpusFile>* out) {
  std::error_code error;
  if (!fs::is_directory(root, error)) return;
  std::vector<CorpusFile> found;
  auto consider = [&](const fs::directory_entry& entry) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo") {
      found.push_back(
          {entry.path().string(), TestNameFor(prefix, fs::relative(entry.path(), root))});
    }
  };
  if (recursive) {
    for (const auto& entry : fs::recursive_directory_iterator(root, error)) consider(entry);
  } else {
    for (const auto& entry : fs::directory_iterator(root, error)) consider(entry);
  }
  std::sort(found.begin(), found.end(),
            [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  out->insert(out->end(), found.begin(), found.end());
}

std::vector<CorpusFile> AllCorpusFiles() {
  std::vector<CorpusFile> files;
  AddHloFiles(fs::path(PERFSIM_SHARED_DIR) / "reference" / "xla_hlo_corpus", "xla", false, &files);
  AddHloFiles(fs::path(PERFSIM_TESTDATA_DIR) / "hlo", "testdata", true, &files);
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class HloCorpusTest : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(HloCorpusTest, ParsesVerifiesAndRoundTrips) {
  const CorpusFile& file = GetParam();
  const std::string text = ReadFile(file.path);
  ASSERT_FALSE(text.empty()) << file.path;
  const std::string filename = fs::path(file.path).filename().string();

  PERFSIM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Module> module, ParseHloModule(text, filename));
  ASSERT_NE(module->entry(), nullptr);
  EXPECT_THAT(VerifyModule(*module), testing::IsOk()) << file.path;

  const std::string printed = PrintModule(*module);
  auto reparsed = ParseHloModule(printed, "printed.hlo");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\nprinted text:\n" << printed;
  EXPECT_EQ(PrintModule(**reparsed), printed);
  EXPECT_EQ((*reparsed)->instruction_count(), module->instruction_count());
  EXPECT_EQ((*reparsed)->computations().size(), module->computations().size());
}

INSTANTIATE_TEST_SUITE_P(AllFiles, HloCorpusTest, ::testing::ValuesIn(AllCorpusFiles()),
                         [](const ::testing::TestParamInfo<CorpusFile>& info) {
                           return info.param.test_name;
                         });

// The corpus is known to hold 60 modules; a smaller count means files were not found.
TEST(HloCorpus, FindsTheWholeXlaCorpus) {
  std::vector<CorpusFile> files;
  AddHloFiles(fs::path(PERFSIM_SHARED_DIR) / "reference" / "xla_hlo_corpus", "xla", false, &files);
  EXPECT_GE(files.size(), 60u);
}

}  // namespace
}  // namespace perfsim
