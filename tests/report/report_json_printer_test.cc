// ReportJson (sim/util/report_json.cc) prints the same bytes as protobuf's JSON printer with
// report.proto's options, for every report perfsim writes and for the edge cases of its number
// and string formats; protobuf's printer is the reference, run in the same test.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/report.pb.h"
#include "proto/validate_report.pb.h"
#include "sim/util/proto_format.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;

const std::string kTestdata = PERFSIM_TESTDATA_DIR;

// protobuf's printer with the options report.proto documents, ending in one newline.
std::string ProtobufJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(message, &out, options).ok());
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

// The command's JSON output read into M, printed again by protobuf: the same bytes.
template <typename M>
void ExpectCommandPrintsAsProtobuf(const std::vector<std::string>& args,
                                   const std::string& stdin_text = "") {
  const CliResult run = RunCli(args, stdin_text);
  ASSERT_EQ(run.code, 0) << args[0] << ": " << run.err;
  M report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &report).ok()) << run.out;
  EXPECT_EQ(run.out, ProtobufJson(report)) << args[0];
}

TEST(ReportJsonPrinter, EveryCommandsJsonIsWhatProtobufPrints) {
  const std::string jax = kTestdata + "/hlo/jax/";
  ExpectCommandPrintsAsProtobuf<report::PredictReport>({"predict", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::PredictReport>(
      {"predict", "--model", "mixtral_8x7b", "--hw", "gpu_h100", "--mesh", "8", "--backend",
       "grouped_gemm_aligned", "--parallelism", "ep=8", "--batch", "32", "--routing", "zipf:1.2",
       "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::PredictReport>(
      {"predict", "--hlo", jax + "moe_ep_ragged_a2a_grad.compiled.hlo", "--hw", "tpu_v5p",
       "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::CostReport>(
      {"cost", jax + "moe_ragged_dot_grad.compiled.hlo", "--hw", "tpu_v5p", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::CostReport>(
      {"cost", jax + "collective_all_gather.compiled.hlo", "--hw", "tpu_v5p", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::FitReport>(
      {"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape", "16384,1024,1024,8", "--dtype",
       "bf16", "--search", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::AccuracyReport>(
      {"accuracy", kTestdata + "/accuracy/measure_moe_format.csv", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::SweepReport>(
      {"sweep", "--model", "nano", "--hw", "gpu_h100", "--mesh", "8", "--phase", "fwd", "--seq",
       "4", "--quiet", "--backends", "dense_einsum,ep_ragged_a2a", "--top", "3", "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::ValidateReport>(
      {"validate", "--backend", "sparse_ragged_dot", "--devices", "2", "--phase", "fwd_bwd",
       "--format=json"});
  ExpectCommandPrintsAsProtobuf<report::RunReport>({"run", "-", "--seed", "7", "--format=json"},
                                                   R"(HloModule m
ENTRY e {
  p = f32[3] parameter(0)
  c = f32[3] constant({0.1, -2.5e-300, 7})
  ROOT s = f32[3] add(p, c)
}
)");
}

// The lists are arrays of ReportJson texts: each element as protobuf prints it.
TEST(ReportJsonPrinter, ListElementsAreWhatProtobufPrints) {
  for (const char* what : {"hw", "models"}) {
    const CliResult run = RunCli({what, "list", "--format=json"});
    ASSERT_EQ(run.code, 0) << run.err;
    google::protobuf::ListValue list;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &list).ok());
    ASSERT_GT(list.values_size(), 3) << what;
    std::string rebuilt = "[";
    for (int i = 0; i < list.values_size(); ++i) {
      std::string element;
      if (std::string(what) == "hw") {
        report::HwListEntry entry;
        std::string text;
        ASSERT_TRUE(google::protobuf::util::MessageToJsonString(list.values(i), &text).ok());
        ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &entry).ok());
        element = ProtobufJson(entry);
      } else {
        report::ModelListEntry entry;
        std::string text;
        ASSERT_TRUE(google::protobuf::util::MessageToJsonString(list.values(i), &text).ok());
        ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &entry).ok());
        element = ProtobufJson(entry);
      }
      element.pop_back();
      absl::StrAppend(&rebuilt, i == 0 ? "\n" : ",\n", element);
    }
    EXPECT_EQ(run.out, rebuilt + "\n]\n") << what;
  }
}

// Doubles: protobuf's SimpleDtoa ("%.15g", "%.17g" when that does not read back), over the
// values reports hold (times, bytes, counts, fractions) and arbitrary bit patterns: zeros,
// subnormals, the extremes, integers past 2^53, and non-finite values as strings.
TEST(ReportJsonPrinter, DoublesPrintAsProtobufPrintsThem) {
  std::vector<double> values = {0.0,
                                -0.0,
                                0.1,
                                0.1 + 0.2,
                                2.0 / 3,
                                1.0000000000000002,
                                1e-7,
                                1.5e-5,
                                123456,
                                1e15,
                                1e16,
                                1e17,
                                1e21,
                                9007199254740993.0,
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  std::mt19937_64 random(20261127);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t bits = random();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    values.push_back(value);
    values.push_back(std::ldexp(static_cast<double>(random() % 1000000), -20));  // times in s
    values.push_back(static_cast<double>(random() % (uint64_t{1} << 50)));       // bytes
  }
  report::PredictPhase phase;
  google::protobuf::Value number;
  for (const double value : values) {
    phase.set_seconds(value);
    EXPECT_EQ(ReportJson(phase), ProtobufJson(phase)) << value;
    number.set_number_value(value);
    EXPECT_EQ(ReportJson(number), ProtobufJson(number)) << value;
  }
}

// Strings: every ASCII character, multi-byte UTF-8, and the format characters protobuf escapes.
TEST(ReportJsonPrinter, StringsEscapeAsProtobufEscapesThem) {
  std::vector<std::string> texts = {"", "plain", "a<b>&c", "quote \" backslash \\ slash /",
                                    "\u00e9t\u00e9", "\U0001F600", "\u2028\u2029", "\u00ad",
                                    "\u0080\u009f", "\ufeff", "\u200b", "\u4e2d\u6587"};
  for (int c = 1; c < 128; ++c) texts.push_back(std::string(1, static_cast<char>(c)) + "x");
  report::PredictScenario scenario;
  for (const std::string& text : texts) {
    scenario.set_model(text);
    EXPECT_EQ(ReportJson(scenario), ProtobufJson(scenario)) << text;
  }
}

// Invalid UTF-8 (which protobuf's printer drops with an error log): each bad byte becomes
// U+FFFD, and the text stays valid JSON that reads back.
TEST(ReportJsonPrinter, InvalidUtf8BecomesReplacementCharacters) {
  report::PredictScenario scenario;
  scenario.set_model(std::string("a\xff" "b\xc3", 4));
  const std::string json = ReportJson(scenario);
  EXPECT_THAT(json, ::testing::HasSubstr("\"model\": \"a\xef\xbf\xbd" "b\xef\xbf\xbd\""));
  report::PredictScenario back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok()) << json;
  EXPECT_EQ(back.model(), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
}

// Structure: empty and nested repeated messages, an unset sub-message (absent), `optional`
// fields set to zero (present, after the others), Values of every kind.
TEST(ReportJsonPrinter, StructureIsWhatProtobufPrints) {
  report::FitReport fit;
  fit.add_tiling(1);
  fit.add_tiling(2.5);
  fit.add_buffers();
  fit.add_buffers()->add_shape(3);
  fit.set_estimated_seconds(0);
  fit.set_tiling_source("");
  EXPECT_EQ(ReportJson(fit), ProtobufJson(fit));

  report::CostReport cost;
  google::protobuf::Value* topology = cost.mutable_topology();
  google::protobuf::ListValue* list = topology->mutable_list_value();
  list->add_values()->set_string_value("x");
  list->add_values()->set_bool_value(false);
  list->add_values()->set_null_value(google::protobuf::NULL_VALUE);
  list->add_values()->mutable_list_value();
  list->add_values()->mutable_struct_value();
  (*list->add_values()->mutable_struct_value()->mutable_fields())["only"].set_number_value(2);
  cost.add_instructions()->mutable_seconds()->set_null_value(google::protobuf::NULL_VALUE);
  cost.add_instructions();
  EXPECT_EQ(ReportJson(cost), ProtobufJson(cost));
  EXPECT_EQ(ReportJson(report::CostReport()), ProtobufJson(report::CostReport()));
}

}  // namespace
}  // namespace perfsim
