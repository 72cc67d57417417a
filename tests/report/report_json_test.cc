// Every --format=json output read back into its proto/report.proto message with protobuf's JSON
// parser (unknown keys refused; hw list and models list element by element), every key the
// message documents present, and the figures equal to what the library computes.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "proto/report.pb.h"
#include "sim/hw/chip_registry.h"
#include "sim/moe/model_registry.h"
#include "sim/predict/predict.h"
#include "sim/report/predict_report.h"
#include "sim/util/proto_format.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::perfsim::testing::CliResult;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

const std::string kTestdata = PERFSIM_TESTDATA_DIR;

// `json` parsed into M by protobuf's parser, which refuses keys M does not define.
template <typename M>
M ParseReport(const std::string& json) {
  M report;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &report, options);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json.substr(0, 400);
  return report;
}

// Expects every key `descriptor` documents in the JSON object `object` (at `path`): scalars and
// repeated fields always, google.protobuf.Value fields always (null when missing, the
// convention of report.proto); sub-messages and `optional` fields when present, recursing into
// each sub-message present.
void ExpectEveryDocumentedKey(const google::protobuf::Value& object, const Descriptor* descriptor,
                              const std::string& path) {
  ASSERT_EQ(object.kind_case(), google::protobuf::Value::kStructValue) << path;
  const auto& fields = object.struct_value().fields();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const std::string key_path = absl::StrCat(path, ".", field->name());
    const Descriptor* type = field->message_type();
    const bool is_value = type != nullptr && type->full_name() == "google.protobuf.Value";
    auto it = fields.find(field->name());
    if (it == fields.end()) {
      EXPECT_TRUE(field->has_presence() && !is_value) << key_path << " is missing";
      continue;
    }
    if (type == nullptr || is_value) continue;
    if (field->is_repeated()) {
      for (const google::protobuf::Value& element : it->second.list_value().values()) {
        ExpectEveryDocumentedKey(element, type, key_path + "[]");
      }
    } else {
      ExpectEveryDocumentedKey(it->second, type, key_path);
    }
  }
}

template <typename M>
void ExpectEveryDocumentedKey(const std::string& json) {
  google::protobuf::Value object;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &object).ok());
  ExpectEveryDocumentedKey(object, M::descriptor(), M::descriptor()->name());
}

// A top-level JSON array (hw list, models list): each element parsed into M, with its keys
// checked.
template <typename M>
std::vector<M> ParseReportArray(const std::string& json) {
  google::protobuf::ListValue list;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &list).ok()) << json;
  std::vector<M> reports;
  for (const google::protobuf::Value& element : list.values()) {
    std::string text;
    EXPECT_TRUE(google::protobuf::util::MessageToJsonString(element, &text).ok());
    ExpectEveryDocumentedKey<M>(text);
    reports.push_back(ParseReport<M>(text));
  }
  return reports;
}

TEST(ReportJson, TheKeyCheckCatchesAMissingKeyAndAMissingNull) {
  const std::string rest = R"("module": "m", "hw": "tpu_v5p", "mode": "true",
      "instructions": [], "totals": {"flops": 0, "transcendentals": 0, "bytes_accessed": 0,
      "seconds": 0, "untimed_instructions": 0}, "unknown_rates": [])";
  ExpectEveryDocumentedKey<report::CostReport>(
      absl::StrCat(R"({"devices": 1, "topology": null, )", rest, "}"));
  // "devices" (a double) absent.
  EXPECT_NONFATAL_FAILURE(
      ExpectEveryDocumentedKey<report::CostReport>(absl::StrCat(R"({"topology": null, )", rest, "}")),
      "CostReport.devices is missing");
  // "topology" (a Value: null when there is none, never absent) absent.
  EXPECT_NONFATAL_FAILURE(
      ExpectEveryDocumentedKey<report::CostReport>(absl::StrCat(R"({"devices": 1, )", rest, "}")),
      "CostReport.topology is missing");
}

TEST(ReportJson, NonFiniteDoublesAreJsonStringsThatReadBack) {
  report::CostTotals totals;
  totals.set_seconds(std::nan(""));
  totals.set_flops(std::numeric_limits<double>::infinity());
  totals.set_bytes_accessed(-std::numeric_limits<double>::infinity());
  const std::string json = ReportJson(totals);
  // Valid JSON: a generic parse accepts it.
  google::protobuf::Value any;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &any).ok()) << json;
  EXPECT_THAT(json, HasSubstr("\"seconds\": \"NaN\""));
  const report::CostTotals back = ParseReport<report::CostTotals>(json);
  EXPECT_TRUE(std::isnan(back.seconds()));
  EXPECT_EQ(back.flops(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.bytes_accessed(), -std::numeric_limits<double>::infinity());
}

TEST(ReportJson, PredictMatchesThePredictionAndItsPhasesSumToTheBusyTime) {
  const CliResult run = RunCli({"predict", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::PredictReport>(run.out);
  const report::PredictReport r = ParseReport<report::PredictReport>(run.out);

  // No flags: the embedded default scenario.
  absl::StatusOr<PredictOptions> options = DefaultPredictOptions();
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<Prediction> p = Predict(*options);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(r.scenario().model(), p->options.spec.model.name());
  EXPECT_EQ(r.scenario().hw(), p->chip);
  EXPECT_EQ(r.scenario().devices(), p->num_devices);
  EXPECT_EQ(r.step_seconds(), p->step_seconds);
  EXPECT_EQ(r.slowest_device(), p->slowest_device);
  EXPECT_EQ(r.mfu(), p->mfu);
  EXPECT_EQ(r.memory().total(), p->memory.total);
  ASSERT_EQ(r.ops_size(), static_cast<int>(p->ops.size()));
  ASSERT_EQ(r.phases_size(), static_cast<int>(p->phases.size()));
  ASSERT_GT(r.phases_size(), 1);

  // Each phase is the sum of its ops; the phases together are both streams' busy time.
  std::map<std::string, double> op_seconds;
  for (const report::PredictOp& op : r.ops()) op_seconds[op.phase()] += op.seconds();
  double phase_sum = 0;
  for (const report::PredictPhase& phase : r.phases()) {
    EXPECT_NEAR(phase.seconds(), op_seconds[phase.phase()], 1e-9 * r.step_seconds())
        << phase.phase();
    phase_sum += phase.seconds();
  }
  EXPECT_NEAR(phase_sum, r.compute_busy_seconds() + r.communication_busy_seconds(),
              1e-9 * r.step_seconds());
  const report::PredictMemory& m = r.memory();
  EXPECT_DOUBLE_EQ(m.total(), m.parameters() + m.gradients() + m.optimizer() + m.activations());
}

TEST(ReportJson, PredictionJsonIsPredictionReportPrinted) {
  absl::StatusOr<PredictOptions> options = DefaultPredictOptions();
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<Prediction> p = Predict(*options);
  ASSERT_TRUE(p.ok()) << p.status();
  const report::PredictReport parsed = ParseReport<report::PredictReport>(PredictionJson(*p));
  EXPECT_EQ(parsed.SerializeAsString(), PredictionReport(*p).SerializeAsString());
}

TEST(ReportJson, CostTotalsAreTheSumsOfTheInstructions) {
  const CliResult run = RunCli({"cost", kTestdata + "/hlo/jax/moe_ragged_dot_grad.compiled.hlo",
                                "--hw", "tpu_v5p", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::CostReport>(run.out);
  const report::CostReport r = ParseReport<report::CostReport>(run.out);
  EXPECT_EQ(r.hw(), "tpu_v5p");
  EXPECT_EQ(r.mode(), "true");
  ASSERT_GT(r.instructions_size(), 1);
  double flops = 0, bytes = 0, seconds = 0;
  int untimed = 0;
  for (const report::CostInstruction& i : r.instructions()) {
    flops += i.flops();
    bytes += i.bytes_accessed();
    if (i.seconds().has_null_value()) {
      ++untimed;
    } else {
      seconds += i.seconds().number_value();
    }
    // Bytes accessed are the operands' plus the output's.
    const double operands = std::accumulate(i.operand_bytes_accessed().begin(),
                                            i.operand_bytes_accessed().end(), 0.0);
    EXPECT_LE(operands + i.output_bytes_accessed(), i.bytes_accessed() + 1e-6) << i.name();
  }
  EXPECT_DOUBLE_EQ(r.totals().flops(), flops);
  EXPECT_DOUBLE_EQ(r.totals().bytes_accessed(), bytes);
  EXPECT_DOUBLE_EQ(r.totals().seconds(), seconds);
  EXPECT_EQ(r.totals().untimed_instructions(), untimed);
}

TEST(ReportJson, CostTopologyIsNullOnOneDeviceAndNamedOnMany) {
  const std::string module = kTestdata + "/hlo/jax/moe_ragged_dot_grad.compiled.hlo";
  const CliResult one = RunCli({"cost", module, "--hw", "tpu_v5p", "--format=json"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_TRUE(ParseReport<report::CostReport>(one.out).topology().has_null_value());
  EXPECT_THAT(one.out, HasSubstr("\"topology\": null"));
  const CliResult many = RunCli({"cost", kTestdata + "/hlo/jax/collective_all_gather.compiled.hlo",
                                 "--hw", "tpu_v5p", "--format=json"});
  ASSERT_EQ(many.code, 0) << many.err;
  const report::CostReport r = ParseReport<report::CostReport>(many.out);
  EXPECT_EQ(r.devices(), 8);
  EXPECT_THAT(r.topology().string_value(), HasSubstr("2x2x2"));
}

TEST(ReportJson, FitReportsTheBuffersItSums) {
  const CliResult run = RunCli({"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape",
                                "16384,1024,1024,8", "--dtype", "bf16", "--tiling",
                                "512,1024,1024", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::FitReport>(run.out);
  const report::FitReport r = ParseReport<report::FitReport>(run.out);
  EXPECT_EQ(r.tiling_source(), "given");
  EXPECT_FALSE(r.has_search());
  EXPECT_FALSE(r.has_estimated_seconds());
  EXPECT_EQ(r.runners_up_size(), 0);
  EXPECT_THAT(r.tiling(), ::testing::ElementsAre(512, 1024, 1024));
  EXPECT_EQ(r.shape().m(), 16384);
  double in_space = 0;
  for (const report::FitBuffer& b : r.buffers()) {
    if (b.memory() == r.memory()) in_space += b.bytes();
  }
  EXPECT_EQ(r.required_bytes(), in_space);
  EXPECT_EQ(r.margin_bytes(), r.limit_bytes() - r.required_bytes());
  EXPECT_TRUE(r.fits());
}

TEST(ReportJson, FitSearchAddsTheSearchTheEstimateAndTheRunnersUp) {
  const CliResult run = RunCli({"fit", "--kernel", "gmm", "--hw", "tpu_v5p", "--shape",
                                "16384,1024,1024,8", "--dtype", "bf16", "--search", "--top",
                                "3", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::FitReport>(run.out);
  const report::FitReport r = ParseReport<report::FitReport>(run.out);
  EXPECT_FALSE(r.has_tiling_source());
  ASSERT_TRUE(r.has_search());
  EXPECT_GT(r.search().fitting(), 0);
  EXPECT_LE(r.search().fitting(), r.search().candidates());
  ASSERT_TRUE(r.has_estimated_seconds());
  EXPECT_GT(r.estimated_seconds(), 0);
  ASSERT_EQ(r.runners_up_size(), 3);
  // The chosen tiling is the fastest that fits: no runner-up beats it.
  for (const report::FitRunnerUp& runner : r.runners_up()) {
    EXPECT_GE(runner.estimated_seconds(), r.estimated_seconds());
  }
}

TEST(ReportJson, AccuracyErrorsAreTheRelativeDifferences) {
  const CliResult run =
      RunCli({"accuracy", kTestdata + "/accuracy/measure_moe_format.csv", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::AccuracyReport>(run.out);
  const report::AccuracyReport r = ParseReport<report::AccuracyReport>(run.out);
  ASSERT_GT(r.rows_size(), 0);
  int skipped = 0;
  for (const report::AccuracyRow& row : r.rows()) {
    if (!row.skipped_reason().has_null_value()) {
      ++skipped;
      EXPECT_TRUE(row.predicted().has_null_value()) << row.id();
      continue;
    }
    const double predicted = row.predicted().number_value();
    EXPECT_NEAR(row.error_pct().number_value(),
                (predicted - row.measured()) / row.measured() * 100, 1e-9)
        << row.id();
  }
  EXPECT_EQ(r.skipped(), skipped);
  ASSERT_GT(r.summary().calibrated_size(), 0);
  const report::AccuracySummary& overall =
      r.summary().calibrated(r.summary().calibrated_size() - 1);
  EXPECT_EQ(overall.scope(), "overall");
  EXPECT_EQ(overall.count(), r.rows_size() - skipped);
}

// 0/0 = NaN, 1/0 = inf, -1/0 = -inf, 1/1 = 1; then f32 0.1 and an s64 beyond 2^53.
constexpr char kValuesModule[] = R"(HloModule values

ENTRY main {
  n = f32[4] constant({0, 1, -1, 1})
  d = f32[4] constant({0, 0, 0, 1})
  q = f32[4] divide(n, d)
  h = f32[2] constant({0.1, 2.5})
  big = s64[2] constant({9007199254740993, -3})
  ROOT t = (f32[4], f32[2], s64[2]) tuple(q, h, big)
}
)";

TEST(ReportJson, RunPrintsValuesExactlyAndTheSeedAsAString) {
  const CliResult run = RunCli({"run", "-", "--seed", "18446744073709551615", "--format=json"},
                               kValuesModule);
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::RunReport>(run.out);
  const report::RunReport r = ParseReport<report::RunReport>(run.out);
  EXPECT_EQ(r.seed(), UINT64_MAX);
  EXPECT_THAT(run.out, HasSubstr("\"seed\": \"18446744073709551615\""));
  EXPECT_EQ(r.inputs().string_value(), "random");
  ASSERT_EQ(r.outputs_size(), 3);
  const report::RunOutput& special = r.outputs(0);
  EXPECT_EQ(special.nan_count(), 1);
  EXPECT_EQ(special.inf_count(), 2);
  ASSERT_EQ(special.first_values_size(), 4);
  EXPECT_EQ(special.first_values(0).string_value(), "nan");
  EXPECT_EQ(special.first_values(1).string_value(), "inf");
  EXPECT_EQ(special.first_values(2).string_value(), "-inf");
  EXPECT_EQ(special.first_values(3).number_value(), 1);
  // f32 0.1 as the double it widens to, exactly.
  EXPECT_EQ(r.outputs(1).first_values(0).number_value(), static_cast<double>(0.1f));
  EXPECT_THAT(r.outputs(1).dimensions(), ::testing::ElementsAre(2));
  EXPECT_EQ(r.outputs(2).first_values(0).string_value(), "9007199254740993");
  EXPECT_EQ(r.outputs(2).first_values(1).number_value(), -3);
  EXPECT_GE(r.memory_need_bytes(), r.memory_input_bytes());
}

TEST(ReportJson, SweepCountsAddUpAndTheParetoHasTheRankMetric) {
  const CliResult run = RunCli({"sweep", "--model", "nano", "--hw", "gpu_h100", "--mesh", "8",
                                "--phase", "fwd", "--seq", "4", "--quiet", "--backends",
                                "dense_einsum,ep_ragged_a2a", "--top", "3", "--rank-by", "mfu",
                                "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  ExpectEveryDocumentedKey<report::SweepReport>(run.out);
  const report::SweepReport r = ParseReport<report::SweepReport>(run.out);
  EXPECT_EQ(r.rank_by(), "mfu");
  const report::SweepInfeasibleByReason& in = r.infeasible();
  const double infeasible = in.divisibility().count() + in.backend_refusal().count() +
                            in.tiling_misfit().count() + in.lowering_failed().count() +
                            in.hbm_over_capacity().count() + in.error().count();
  EXPECT_EQ(r.feasible() + infeasible, r.evaluated());
  EXPECT_EQ(r.evaluated(), r.points());
  ASSERT_EQ(r.top_size(), 3);
  for (int k = 0; k < r.top_size(); ++k) {
    const report::SweepRanked& t = r.top(k);
    EXPECT_EQ(t.rank(), k + 1);
    if (k > 0) {
      EXPECT_LE(t.mfu(), r.top(k - 1).mfu());
    }
    EXPECT_FALSE(t.why().has_null_value());
    EXPECT_GT(t.phases().experts(), 0);
  }
  ASSERT_GT(r.pareto_size(), 0);
  for (const report::SweepParetoPoint& point : r.pareto()) {
    EXPECT_TRUE(point.has_mfu());
    EXPECT_FALSE(point.has_step());
    EXPECT_FALSE(point.has_tokens());
  }
}

TEST(ReportJson, HwListHasEveryBuiltinChipWithItsFigures) {
  const CliResult run = RunCli({"hw", "list", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<report::HwListEntry> entries = ParseReportArray<report::HwListEntry>(run.out);
  const std::vector<std::string> names = BuiltinChipNames();
  ASSERT_EQ(entries.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<Chip> chip = LoadBuiltinChip(names[i]);
    ASSERT_TRUE(chip.ok()) << chip.status();
    const report::HwListEntry& e = entries[i];
    EXPECT_EQ(e.name(), names[i]);
    EXPECT_EQ(e.kind(), chip->is_tpu() ? "TPU" : "GPU");
    EXPECT_EQ(e.peak_bf16_flops_per_second(), chip->PeakMatmulFlopsPerSecond(MatmulDtype::kBf16));
    EXPECT_EQ(e.hbm_capacity_bytes(), chip->hbm_capacity_bytes()) << e.name();
    EXPECT_EQ(e.scratch_limit_bytes(), chip->ScratchLimitBytes()) << e.name();
    EXPECT_EQ(e.default_slice_shape(), chip->DefaultSliceShape()) << e.name();
  }
}

TEST(ReportJson, ModelsListHasEveryBuiltinModelWithItsShape) {
  const CliResult run = RunCli({"models", "list", "--format=json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<report::ModelListEntry> entries =
      ParseReportArray<report::ModelListEntry>(run.out);
  const std::vector<std::string> names = BuiltinModelNames();
  ASSERT_EQ(entries.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<ModelConfig> model = LoadBuiltinModel(names[i]);
    ASSERT_TRUE(model.ok()) << model.status();
    const report::ModelListEntry& e = entries[i];
    EXPECT_EQ(e.name(), names[i]);
    EXPECT_EQ(e.d_model(), model->d_model()) << e.name();
    EXPECT_EQ(e.num_experts(), model->num_experts()) << e.name();
    EXPECT_EQ(e.experts_per_token(), model->experts_per_token()) << e.name();
    EXPECT_EQ(e.num_layers(), model->proto().num_layers()) << e.name();
  }
}

}  // namespace
}  // namespace perfsim
