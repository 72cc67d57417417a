// `perfsim accuracy` and `perfsim calibrate` through the CLI library, on
// shared/reference/calibration.csv (found through PERFSIM_SHARED_DIR): the JSON (read back into
// report.AccuracyReport) has one entry per row, each predicted with consistent errors or
// skipped with a reason; bad input exits 2.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/report.pb.h"
#include "sim/hw/chip.h"
#include "sim/util/status_matchers.h"
#include "tests/accuracy/accuracy_test_util.h"
#include "tests/cli/cli_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CalibrationCsvPath;
using ::perfsim::testing::CalibrationFile;
using ::perfsim::testing::CliResult;
using ::perfsim::testing::ReadFileOrDie;
using ::perfsim::testing::RunCli;
using ::testing::HasSubstr;

// The JSON read back into its message (proto/report.proto), unknown keys refused.
report::AccuracyReport ParseReport(const std::string& json) {
  report::AccuracyReport report;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &report);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return report;
}

TEST(AccuracyCli, EveryRowIsPredictedOrSkippedWithAReason) {
  const CliResult r = RunCli({"accuracy", CalibrationCsvPath(), "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const report::AccuracyReport report = ParseReport(r.out);
  // One entry per row of the file, in file order.
  ASSERT_EQ(report.rows_size(), static_cast<int>(CalibrationFile().rows.size()));
  int64_t simulated = 0;
  for (int i = 0; i < report.rows_size(); ++i) {
    const report::AccuracyRow& row = report.rows(i);
    EXPECT_EQ(row.id(), CalibrationFile().rows[i].id);
    EXPECT_FALSE(row.category().empty()) << row.id();
    const double measured = row.measured();
    EXPECT_EQ(measured, CalibrationFile().rows[i].value.value);
    if (!row.skipped_reason().has_null_value()) {
      // Skipped: a non-empty reason and no prediction.
      EXPECT_FALSE(row.skipped_reason().string_value().empty()) << row.id();
      EXPECT_TRUE(row.predicted().has_null_value()) << row.id();
      continue;
    }
    ++simulated;
    // error_pct = (predicted - measured) / measured * 100, for each of the three columns.
    for (const auto& [predicted, error] :
         {std::pair{row.predicted(), row.error_pct()},
          {row.physics_predicted(), row.physics_error_pct()},
          {row.loo_predicted(), row.loo_error_pct()}}) {
      const double p = predicted.number_value();
      EXPECT_GT(p, 0) << row.id();
      EXPECT_NEAR(error.number_value(), (p - measured) / measured * 100, 1e-9 * std::fabs(p))
          << row.id();
    }
  }
  // The summary has the three columns, each with an overall scope counting the simulated rows
  // (the last) and a kernel scope (the one before).
  for (const auto* column : {&report.summary().physics(), &report.summary().calibrated(),
                             &report.summary().leave_one_out()}) {
    ASSERT_GE(column->size(), 2);
    EXPECT_EQ(column->Get(column->size() - 1).scope(), "overall");
    EXPECT_EQ(column->Get(column->size() - 1).count(), simulated);
    EXPECT_EQ(column->Get(column->size() - 2).scope(), "kernel");
  }
  EXPECT_EQ(report.skipped(), CalibrationFile().rows.size() - simulated);
}

TEST(AccuracyCli, JsonRowsAndSummariesHaveTheIssuesFields) {
  // The rows validation/gpu/measure_moe.py writes (synthetic values): 5 grouped matmuls
  // simulated, 3 rows of other categories skipped.
  const CliResult r = RunCli(
      {"accuracy", PERFSIM_TESTDATA_DIR "/accuracy/measure_moe_format.csv", "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const report::AccuracyReport report = ParseReport(r.out);
  ASSERT_EQ(report.rows_size(), 8);
  std::map<std::string, std::vector<std::pair<std::string, double>>> errors;  // by scope
  for (const report::AccuracyRow& row : report.rows()) {
    EXPECT_EQ(row.unit(), "us") << row.id();
    if (!row.skipped_reason().has_null_value()) continue;
    // Signed: (predicted - measured) / measured * 100.
    const double error = row.error_pct().number_value();
    EXPECT_NEAR(error, (row.predicted().number_value() - row.measured()) / row.measured() * 100,
                1e-9)
        << row.id();
    for (const std::string& scope : {row.category(), std::string("kernel"), std::string("overall")}) {
      errors[scope].push_back({row.id(), error});
    }
  }
  ASSERT_EQ(errors["overall"].size(), 5u);
  // Each scope's summary, recomputed from the rows' error_pct: count, median |error|, p90
  // |error| (nearest rank: the 5th smallest of 5), worst row with its signed error.
  std::map<std::string, report::AccuracySummary> summary;
  for (const report::AccuracySummary& s : report.summary().calibrated()) summary[s.scope()] = s;
  ASSERT_EQ(summary.size(), 3u);  // kernel_grouped_gemm, kernel, overall
  for (const auto& [scope, list] : errors) {
    ASSERT_TRUE(summary.count(scope)) << scope;
    const report::AccuracySummary& s = summary.at(scope);
    std::vector<double> abs_errors;
    std::pair<std::string, double> worst = {"", 0};
    for (const auto& [id, e] : list) {
      abs_errors.push_back(std::fabs(e));
      if (std::fabs(e) > std::fabs(worst.second)) worst = {id, e};
    }
    std::sort(abs_errors.begin(), abs_errors.end());
    EXPECT_EQ(s.count(), 5) << scope;
    EXPECT_NEAR(s.median_abs_error_pct(), abs_errors[2], 1e-9) << scope;
    EXPECT_NEAR(s.p90_abs_error_pct(), abs_errors[4], 1e-9) << scope;
    EXPECT_EQ(s.worst_id().string_value(), worst.first) << scope;
    EXPECT_NEAR(s.worst_error_pct(), worst.second, 1e-9) << scope;
  }
}

TEST(AccuracyCli, TableAndJsonAreDeterministic) {
  const CliResult a = RunCli({"accuracy", CalibrationCsvPath()});
  const CliResult b = RunCli({"accuracy", CalibrationCsvPath()});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.out, HasSubstr("leave-one-out"));
  EXPECT_THAT(a.out, HasSubstr("M001"));
}

TEST(AccuracyCli, BadInputExitsTwoWithTheLocation) {
  CliResult r = RunCli({"accuracy", "/no/such/file.csv"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("/no/such/file.csv: cannot open"));
  r = RunCli({"accuracy", "-"}, "id,category,hardware,metric,value,unit\nM1,x,H100,m,\"1,us\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:2:"));
  r = RunCli({"accuracy", "-"},
             "id,category,hardware,metric,value,unit,op_shape\n"
             "M1,kernel_grouped_gemm,H100,t,5,us,\"groups=4; M_per_group=8; N=4O96; K=8\"\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("<stdin>:2:36: op_shape: expected a positive integer for N"));
  EXPECT_EQ(RunCli({"accuracy", CalibrationCsvPath(), "--format=xml"}).code, 2);
  EXPECT_EQ(RunCli({"accuracy"}).code, 2);
  EXPECT_EQ(RunCli({"calibrate"}).code, 2);
}

TEST(AccuracyCli, SkippedRowsAreListedNotDropped) {
  const CliResult r = RunCli({"accuracy", "-", "--format=json"},
                             "id,category,hardware,metric,value,unit\nM1,moe_layer,H100,t,5,us\n"
                             "M2,collective,MI300X,t,5,us\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const report::AccuracyReport report = ParseReport(r.out);
  ASSERT_EQ(report.rows_size(), 2);
  EXPECT_THAT(report.rows(0).skipped_reason().string_value(),
              HasSubstr("category 'moe_layer' is not simulated"));
  EXPECT_THAT(report.rows(1).skipped_reason().string_value(), HasSubstr("not a built-in chip"));
  const CliResult table = RunCli(
      {"accuracy", "-"}, "id,category,hardware,metric,value,unit\nM1,moe_layer,H100,t,5,us\n");
  EXPECT_THAT(table.out, HasSubstr("skipped (not simulated):\n  M1"));
}

TEST(CalibrateCli, PrintsEfficiencyBlocksAndWritesThemIntoCopies) {
  const CliResult printed = RunCli({"calibrate", CalibrationCsvPath()});
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_THAT(printed.out, HasSubstr("# hardware/gpu_h800.textproto\nefficiency {"));
  EXPECT_THAT(printed.out, HasSubstr("matmul_fraction_of_peak"));

  // --write into a copy of the hardware files, never the source tree.
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "perfsim_calibrate_hw";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* chip : {"gpu_b200", "gpu_gb200", "gpu_h100", "gpu_h800", "tpu_v5e", "tpu_v7x"}) {
    std::filesystem::copy_file(
        std::filesystem::path(PERFSIM_SOURCE_DIR) / "hardware" / absl::StrCat(chip, ".textproto"),
        dir / absl::StrCat(chip, ".textproto"));
  }
  const CliResult wrote =
      RunCli({"calibrate", CalibrationCsvPath(), "--write", "--hardware-dir", dir.string()});
  ASSERT_EQ(wrote.code, 0) << wrote.err;
  EXPECT_THAT(wrote.out, HasSubstr("wrote " + (dir / "gpu_h800.textproto").string()));
  const std::string path = (dir / "gpu_h800.textproto").string();
  PERFSIM_ASSERT_OK_AND_ASSIGN(Chip h800, Chip::Load(path));
  // DeepGEMM reaches well under the fp8 datasheet peak.
  EXPECT_LT(h800.proto().efficiency().matmul_fraction_of_peak(), 0.9);
  EXPECT_THAT(h800.proto().efficiency().fitted_on(), HasSubstr("calibration.csv"));
  EXPECT_THAT(ReadFileOrDie(path), HasSubstr("# fitted on M001 M002 M003 M004"));
  // Every field of the block is written; those no row informs keep the file's value.
  EXPECT_THAT(ReadFileOrDie(path), HasSubstr("ici_fraction_of_peak: 1  # no row informs it: "
                                             "unchanged"));
  // The per-algorithm fractions are held at 1: communication is fitted per link class.
  EXPECT_THAT(ReadFileOrDie(path), HasSubstr("collective_ring_fraction_of_peak: 1  # held at 1"));
  // An overhead its rows predict better without out of sample is written as 0, saying why
  // (sim/accuracy/calibration.h): the DeepGEMM rows' per-group cost.
  EXPECT_EQ(h800.proto().efficiency().grouped_matmul_overhead_seconds_per_group(), 0);
  EXPECT_THAT(ReadFileOrDie(path), HasSubstr("grouped_matmul_overhead_seconds_per_group: 0  # 0 "
                                             "us; not kept: M001 M002 M003 M004"));
  // The HybridEP rows are Torch-API timings: their fixed cost per call is reported, not written
  // into the chip as a collective overhead.
  const std::string h100 = ReadFileOrDie((dir / "gpu_h100.textproto").string());
  const size_t field = h100.find("\n  collective_overhead_seconds: ");
  ASSERT_NE(field, std::string::npos);
  EXPECT_THAT(h100.substr(field + 1, h100.find('\n', field + 1) - field - 1),
              ::testing::EndsWith("# 0 us; no row informs it: unchanged"));
  EXPECT_THAT(h100, HasSubstr("# Not written: "));
  EXPECT_THAT(h100, HasSubstr("us per call of host-API timing"));
  EXPECT_THAT(wrote.out, HasSubstr("api_overhead_seconds (not written)"));
  // A chip no row is on (gpu_a100) is not touched, not even read.
  EXPECT_THAT(wrote.out, ::testing::Not(HasSubstr("gpu_a100")));

  // A directory without the chip's file is an error, exit 2.
  const std::filesystem::path empty = std::filesystem::path(::testing::TempDir()) / "perfsim_no_hw";
  std::filesystem::create_directories(empty);
  const CliResult missing =
      RunCli({"calibrate", CalibrationCsvPath(), "--write", "--hardware-dir", empty.string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot open"));
}

TEST(CalibrateCli, WriteIsAllOrNothingWhenALaterFileIsInvalid) {
  // The calibration rows are on six chips, written in name order. The last one's file is
  // broken: once the first ones were rewritten before the last failed; now none is.
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "perfsim_calibrate_all_or_nothing";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::map<std::string, std::string> before;
  for (const char* chip : {"gpu_b200", "gpu_gb200", "gpu_h100", "gpu_h800", "tpu_v5e"}) {
    const std::filesystem::path to = dir / absl::StrCat(chip, ".textproto");
    std::filesystem::copy_file(
        std::filesystem::path(PERFSIM_SOURCE_DIR) / "hardware" / absl::StrCat(chip, ".textproto"),
        to);
    before[to.string()] = ReadFileOrDie(to.string());
  }
  const std::string broken = (dir / "tpu_v7x.textproto").string();
  std::ofstream(broken) << "name: \"tpu_v7x\"\nkind: CHIP_KIND_TPU\n";  // no rates at all
  before[broken] = ReadFileOrDie(broken);
  const CliResult r =
      RunCli({"calibrate", CalibrationCsvPath(), "--write", "--hardware-dir", dir.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(broken));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("wrote ")));
  for (const auto& [path, text] : before) EXPECT_EQ(ReadFileOrDie(path), text) << path;
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 6);  // no temporaries left behind
}

}  // namespace
}  // namespace perfsim
