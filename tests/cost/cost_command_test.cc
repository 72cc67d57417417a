// `perfsim cost` through the CLI library: output, exit codes, and every module of the XLA HLO
// corpus (shared/reference/xla_hlo_corpus, read in place) costed without error.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

using ::testing::HasSubstr;

const std::string kJaxDir = std::string(PERFSIM_TESTDATA_DIR) + "/hlo/jax/";
const std::string kCorpusDir = std::string(PERFSIM_SHARED_DIR) + "/reference/xla_hlo_corpus/";

CliResult Cost(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"cost"};
  full.insert(full.end(), args.begin(), args.end());
  return RunCli(full);
}

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &s).ok()) << text.substr(0, 200);
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CostCommand, XlaCompatibleJsonTotalsAreXlasOwn) {
  // XLA's cost analysis of this very text, from the committed .cost.json.
  const google::protobuf::Struct xla = ParseJson(ReadFile(kJaxDir + "moe_ragged_dot_grad.cost.json"))
                                           .fields()
                                           .at("compiled_hlo_text")
                                           .struct_value();
  const CliResult run = Cost({kJaxDir + "moe_ragged_dot_grad.compiled.hlo", "--hw", "tpu_v5p",
                        "--xla-compatible", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const google::protobuf::Struct json = ParseJson(run.out);
  const auto& totals = json.fields().at("totals").struct_value().fields();
  EXPECT_EQ(totals.at("flops").number_value(), xla.fields().at("flops").number_value());
  EXPECT_EQ(totals.at("transcendentals").number_value(),
            xla.fields().at("transcendentals").number_value());
  EXPECT_EQ(totals.at("bytes_accessed").number_value(),
            xla.fields().at("bytes accessed").number_value());
  EXPECT_EQ(json.fields().at("mode").string_value(), "xla-compatible");
  // Every row has the documented fields; operand lists as long as the operand lists.
  const auto& rows = json.fields().at("instructions").list_value().values();
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const auto& f = row.struct_value().fields();
    for (const char* key : {"name", "opcode", "flops", "transcendentals", "bytes_accessed",
                            "operand_bytes_accessed", "output_bytes_accessed", "seconds", "bound"}) {
      EXPECT_TRUE(f.count(key)) << key;
    }
  }
}

TEST(CostCommand, TableListsEveryEntryInstructionAndATotal) {
  const CliResult run = Cost({kJaxDir + "dot_general.lowered.hlo", "--hw", "gpu_h100"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("module jit_dot_general on gpu_h100 (true counts)"));
  EXPECT_THAT(run.out, HasSubstr("\ntotal "));
  EXPECT_THAT(run.out, HasSubstr(" dot "));
}

TEST(CostCommand, CollectiveModuleIsTimedOnTheSliceItNames) {
  const CliResult run = Cost({kJaxDir + "collective_all_gather.compiled.hlo", "--hw", "tpu_v5p",
                        "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const google::protobuf::Struct json = ParseJson(run.out);
  EXPECT_EQ(json.fields().at("devices").number_value(), 8);
  EXPECT_THAT(json.fields().at("topology").string_value(), HasSubstr("2x2x2"));
  bool found = false;
  for (const auto& row : json.fields().at("instructions").list_value().values()) {
    const auto& f = row.struct_value().fields();
    if (f.at("opcode").string_value() != "all-gather") continue;
    found = true;
    EXPECT_EQ(f.at("bound").string_value(), "communication");
    EXPECT_GT(f.at("seconds").number_value(), 0);
  }
  EXPECT_TRUE(found);
}

TEST(CostCommand, BadInputIsAClearErrorWithExitTwo) {
  CliResult run = Cost({kJaxDir + "dot_general.lowered.hlo", "--hw", "tpu_v99"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.err, HasSubstr("tpu_v99"));
  run = Cost({kJaxDir + "dot_general.lowered.hlo"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.err, HasSubstr("--hw: expected a chip name"));
  run = Cost({kJaxDir + "dot_general.lowered.hlo", "--hw", "tpu_v5p", "--devices", "zero"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.err, HasSubstr("--devices: expected a positive integer; got 'zero'"));
  run = Cost({kJaxDir + "dot_general.lowered.hlo", "--hw", "tpu_v5p", "--format=xml"});
  EXPECT_EQ(run.code, 2);
  run = Cost({kJaxDir + "no_such_module.hlo", "--hw", "tpu_v5p"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.err, HasSubstr("no_such_module.hlo"));
  run = Cost({kJaxDir + "collective_all_gather.compiled.hlo", "--hw", "tpu_v7x", "--devices", "3"});
  EXPECT_EQ(run.code, 2);
  EXPECT_THAT(run.err, HasSubstr("expected a multiple of the 2 devices per chip of tpu_v7x; got 3"));
}

TEST(CostCommand, EveryCommittedJaxModuleCostsInBothModes) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kJaxDir)) {
    if (entry.path().extension() != ".hlo") continue;
    ++files;
    for (const char* hw : {"tpu_v7x", "gpu_h100"}) {
      for (bool xla : {false, true}) {
        std::vector<std::string> args = {entry.path().string(), "--hw", hw, "--format=json"};
        if (xla) args.push_back("--xla-compatible");
        const CliResult run = Cost(args);
        ASSERT_EQ(run.code, 0) << entry.path() << " " << hw << ": " << run.err;
        const google::protobuf::Struct json = ParseJson(run.out);
        const auto& totals = json.fields().at("totals").struct_value().fields();
        EXPECT_EQ(totals.at("untimed_instructions").number_value(), 0) << entry.path();
        EXPECT_GE(totals.at("seconds").number_value(), 0) << entry.path();
        if (!xla) {
          EXPECT_GE(totals.at("flops").number_value(), 0) << entry.path();
        }
      }
    }
  }
  EXPECT_EQ(files, 72);
}

TEST(CostCommand, EveryCorpusModuleCostsInBothModes) {
  int modules = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpusDir)) {
    if (entry.path().extension() != ".hlo") continue;
    ++modules;
    for (const char* hw : {"tpu_v5p", "gpu_h100"}) {
      for (bool xla : {false, true}) {
        std::vector<std::string> args = {entry.path().string(), "--hw", hw, "--format=json"};
        if (xla) args.push_back("--xla-compatible");
        const CliResult run = Cost(args);
        ASSERT_EQ(run.code, 0) << entry.path() << " " << hw << ": " << run.err;
        const google::protobuf::Struct json = ParseJson(run.out);
        const double seconds =
            json.fields().at("totals").struct_value().fields().at("seconds").number_value();
        EXPECT_GE(seconds, 0) << entry.path();
        if (!xla) {
          // True counts are never XLA's -1 "unknown".
          EXPECT_GE(json.fields().at("totals").struct_value().fields().at("flops").number_value(), 0)
              << entry.path();
        }
      }
    }
  }
  EXPECT_EQ(modules, 60);
}

}  // namespace
}  // namespace perfsim
