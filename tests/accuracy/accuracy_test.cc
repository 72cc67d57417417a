// RunAccuracy (sim/accuracy/accuracy.h): error summaries against hand-computed ones, the
// physics column at datasheet values whatever the shipped hardware files say, and the rows
// validation/gpu/measure_moe.py writes read back.
#include "sim/accuracy/accuracy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/accuracy/csv.h"
#include "sim/accuracy/scenario.h"
#include "sim/util/status_matchers.h"
#include "tests/accuracy/accuracy_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CalibrationFile;
using ::perfsim::testing::ReadFileOrDie;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

TEST(SummarizeErrors, MedianP90AndWorstRow) {
  // |errors| sorted: 1 2 3 4 5 6 7 8 9 10 -> median (5 + 6) / 2 = 5.5; p90 is the
  // ceil(0.9 * 10) = 9th smallest, 9; the worst is the -10 of "j".
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
  const std::vector<double> errors = {3, -1, 2, 8, -5, 4, 6, 7, 9, -10};
  const ErrorSummary s = SummarizeErrors("kernel", ids, errors);
  EXPECT_EQ(s.scope, "kernel");
  EXPECT_EQ(s.count, 10);
  EXPECT_EQ(s.median_abs_pct, 5.5);
  EXPECT_EQ(s.p90_abs_pct, 9);
  EXPECT_EQ(s.worst_id, "j");
  EXPECT_EQ(s.worst_pct, -10);
  // Odd count: the middle one; p90 of 3 is the ceil(2.7) = 3rd; the first of equal worst rows.
  const ErrorSummary odd = SummarizeErrors("x", {"p", "q", "r"}, {-4, 1, 4});
  EXPECT_EQ(odd.median_abs_pct, 4);
  EXPECT_EQ(odd.p90_abs_pct, 4);
  EXPECT_EQ(odd.worst_id, "p");
  EXPECT_EQ(SummarizeErrors("none", {}, {}).count, 0);
}

const AccuracyReport& Report() {
  static const AccuracyReport* const kReport = [] {
    absl::StatusOr<AccuracyReport> r = RunAccuracy(CalibrationFile());
    EXPECT_TRUE(r.ok()) << r.status();
    return new AccuracyReport(r.ok() ? *std::move(r) : AccuracyReport());
  }();
  return *kReport;
}

const AccuracyRow& RowById(const std::string& id) {
  for (const AccuracyRow& row : Report().rows) {
    if (row.id == id) return row;
  }
  ADD_FAILURE() << "no row " << id;
  static const AccuracyRow* const kEmpty = new AccuracyRow();
  return *kEmpty;
}

TEST(RunAccuracy, SummariesCoverEachCategoryTheKernelRowsAndAll) {
  const AccuracyReport& report = Report();
  for (int c = 0; c < kNumAccuracyColumns; ++c) {
    // Scopes: the categories in file order, then "kernel", then "overall".
    std::vector<std::string> scopes;
    for (const ErrorSummary& s : report.summaries[c]) scopes.push_back(s.scope);
    EXPECT_THAT(scopes, ElementsAre("kernel_grouped_gemm", "kernel_ep_comm", "moe_block",
                                    "e2e_train", "moe_layer_fused", "collective", "kernel",
                                    "overall"));
    for (const ErrorSummary& s : report.summaries[c]) {
      // Recomputed here from the rows: sort the |errors| of the scope's rows.
      std::vector<double> abs_errors;
      double worst = -1;
      std::string worst_id;
      for (const AccuracyRow& row : report.rows) {
        if (!row.simulated()) continue;
        const bool in = s.scope == "overall" ||
                        (s.scope == "kernel" && absl::StartsWith(row.category, "kernel_")) ||
                        row.category == s.scope;
        if (!in) continue;
        abs_errors.push_back(std::fabs(row.error_pct[c]));
        if (std::fabs(row.error_pct[c]) > worst) {
          worst = std::fabs(row.error_pct[c]);
          worst_id = row.id;
        }
      }
      std::sort(abs_errors.begin(), abs_errors.end());
      const size_t n = abs_errors.size();
      ASSERT_GT(n, 0u) << s.scope;
      EXPECT_EQ(s.count, static_cast<int64_t>(n)) << s.scope;
      EXPECT_EQ(s.median_abs_pct,
                n % 2 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2)
          << s.scope;
      EXPECT_EQ(s.p90_abs_pct, abs_errors[(9 * n + 9) / 10 - 1]) << s.scope;  // ceil(0.9 n)
      EXPECT_EQ(s.worst_id, worst_id) << s.scope;
      EXPECT_EQ(std::fabs(s.worst_pct), worst) << s.scope;
    }
  }
  // The kernel scope is the 12 grouped-GEMM and 20 dispatch/combine rows; with the block row,
  // the 7 whole steps, the 2 fused layers and the 4 collectives, 46 overall.
  EXPECT_EQ(report.summaries[kPhysics][3].count, 7);
  EXPECT_EQ(report.summaries[kPhysics][6].count, 32);
  EXPECT_EQ(report.summaries[kPhysics][7].count, 46);
  // Block rows are in no fit: their leave-one-out prediction is the calibrated one.
  EXPECT_EQ(RowById("M173").model_index, -1);
  EXPECT_EQ(RowById("M173").predicted[kLeaveOneOut], RowById("M173").predicted[kCalibrated]);
}

// The seven published whole steps are mapped and simulated (sim/accuracy/scenario_step.cc),
// in no fit (leave-one-out is the calibrated prediction), each with its breakdown.
TEST(RunAccuracy, WholeStepRowsAreComposedFromTheirBlocks) {
  for (const char* id : {"M108", "M111", "M119", "M132", "M137", "M148", "M153"}) {
    const AccuracyRow& row = RowById(id);
    ASSERT_TRUE(row.simulated()) << id << ": " << row.skipped_reason;
    EXPECT_EQ(row.category, "e2e_train") << id;
    EXPECT_EQ(row.model_index, -1) << id;
    EXPECT_GT(row.predicted[kPhysics], 0) << id;
    EXPECT_EQ(row.predicted[kLeaveOneOut], row.predicted[kCalibrated]) << id;
    EXPECT_THAT(row.detail, HasSubstr("bubble")) << id;
  }
  // M119: "TP1 PP4 CP1 VP4 EP64 MBS1 FSDP=0; DP=rest" on 256 GB200s in 4 NVLink domains of 64.
  EXPECT_THAT(RowById("M119").description,
              HasSubstr("deepseek_v3 step on 256 x gpu_gb200 (mesh 4x64), GBS 4096 x 4096, dp 64 "
                        "fsdp 1 tp 1 ep 64 pp 4 vp 4 cp 1, MBS 1, 64 micro-batches"));
  // M153 states its NVLink domain: every 32 GPUs.
  EXPECT_THAT(RowById("M153").description, HasSubstr("(mesh 8x32)"));
  // M108 (MaxText): FSDP 32 x TP 4 on a 4x4x8 v5p slice, no accumulation: 512 / 32 = 16
  // sequences per micro-batch; custom remat as full recompute.
  EXPECT_THAT(RowById("M108").description, HasSubstr("(mesh 4x4x8)"));
  EXPECT_THAT(RowById("M108").description, HasSubstr("MBS 16, 1 micro-batches"));
  EXPECT_THAT(RowById("M108").description, HasSubstr("full recompute"));
}

TEST(RunAccuracy, PhysicsColumnIsTheDatasheetWhateverTheShippedFilesSay) {
  // M001 (DeepGEMM on H800) at datasheet physics, derived by hand in row_model_test.cc:
  // compute 2 * 32768 * 7168 * 4096 flops at the 1.979e15 FLOP/s fp8 peak in 32 waves of
  // 4096 CTAs over 132 SMs, bound by compute, then the epilogue's 32768 * 4096 * 2 B output
  // write at 3.35e12 B/s, plus the 1 us launch. The hardware files ship calibrated factors;
  // this column ignores them.
  const double flops = 2.0 * 32768 * 7168 * 4096;
  const double seconds =
      flops * (32.0 * 132 / 4096) / 1.979e15 + 32768.0 * 4096 * 2 / 3.35e12 + 1e-6;
  const AccuracyRow& m001 = RowById("M001");
  EXPECT_NEAR(m001.predicted[kPhysics], flops / seconds / 1e12, 1e-9 * flops / seconds / 1e12);
  // M180 (v5e all-gather over an open line of 4): 3/4 * 33554432 B / 45e9 B/s + 3 hops of 1 us.
  EXPECT_NEAR(RowById("M180").predicted[kPhysics], (0.75 * 33554432.0 / 45e9 + 3e-6) * 1e6, 1e-6);
}

TEST(RunAccuracy, AnApiTimedRowAloneOnItsChipInformsNoFactor) {
  // M072 (HybridEP on GB200, "Torch API timing") is the only row on its chip: one row cannot
  // split its per-call host cost from a link rate, so it informs nothing and its calibrated
  // prediction is datasheet physics (calibration.h). The nine HybridEP rows on H100 differ in
  // length enough to fit the API cost, so they still inform the H100's link classes.
  const AccuracyReport& report = Report();
  ASSERT_EQ(report.calibration.chips.count("gpu_gb200"), 1u);
  EXPECT_TRUE(report.calibration.chips.at("gpu_gb200").fitted_on.empty());
  EXPECT_EQ(RowById("M072").predicted[kCalibrated], RowById("M072").predicted[kPhysics]);
  EXPECT_EQ(report.calibration.chips.at("gpu_h100").fitted_on.count(FactorKind::kApiOverhead), 1u);
}

TEST(RunAccuracy, LeaveOneOutIsFittedWithoutTheRow) {
  // M099's leave-one-out prediction uses the factors fitted on the other four v7x rows (other
  // chips share no factor), so it equals an explicit refit on those four.
  const AccuracyReport& report = Report();
  std::vector<CalibrationRow> others;
  size_t m099 = 0;
  for (const AccuracyRow& row : report.rows) {
    if (row.model_index < 0) continue;  // skipped, or a block row (in no fit)
    const RowModel& model = report.models[row.model_index];
    if (row.id == "M099") {
      m099 = static_cast<size_t>(row.model_index);
      continue;
    }
    if (model.chip == "tpu_v7x") others.push_back({row.id, &model, row.measured});
  }
  // M098, M100, M101, M102 and M092 (Tokamax gmm_v2).
  ASSERT_EQ(others.size(), 5u);
  const Calibration without = FitCalibration(others);
  EXPECT_EQ(RowById("M099").predicted[kLeaveOneOut],
            ModelValue(report.models[m099], without.For("tpu_v7x")));
  EXPECT_NE(RowById("M099").predicted[kLeaveOneOut], RowById("M099").predicted[kCalibrated]);
}

// The header of a CSV file, as cells.
std::vector<std::string> Header(const std::string& text, const std::string& name) {
  absl::StatusOr<CsvTable> table = ParseCsv(text, name);
  EXPECT_TRUE(table.ok()) << table.status();
  std::vector<std::string> cells;
  if (table.ok()) {
    for (const CsvCell& cell : table->header) cells.push_back(cell.text);
  }
  return cells;
}

// The COLUMNS list of validation/gpu/measure_moe.py: the quoted names between "COLUMNS = ["
// and the closing "]".
std::vector<std::string> ScriptColumns() {
  const std::string script =
      ReadFileOrDie(absl::StrCat(PERFSIM_SOURCE_DIR, "/validation/gpu/measure_moe.py"));
  const size_t begin = script.find("COLUMNS = [");
  EXPECT_NE(begin, std::string::npos);
  const size_t end = script.find(']', begin);
  std::vector<std::string> names;
  for (absl::string_view piece :
       absl::StrSplit(script.substr(begin + 11, end - begin - 11), ',', absl::SkipEmpty())) {
    absl::string_view name = absl::StripAsciiWhitespace(piece);
    if (absl::ConsumePrefix(&name, "\"") && absl::ConsumeSuffix(&name, "\"")) {
      names.push_back(std::string(name));
    }
  }
  return names;
}

TEST(GpuMeasurementRows, ScriptWritesTheReferenceColumns) {
  const std::vector<std::string> reference =
      Header(ReadFileOrDie(testing::CalibrationCsvPath()), "calibration.csv");
  ASSERT_EQ(reference.size(), 27u);
  EXPECT_THAT(ScriptColumns(), ElementsAreArray(reference));
  EXPECT_THAT(Header(ReadFileOrDie(PERFSIM_TESTDATA_DIR "/accuracy/measure_moe_format.csv"),
                     "measure_moe_format.csv"),
              ElementsAreArray(reference));
}

TEST(GpuMeasurementRows, RaggedDotRowsBecomeGroupedGemmScenarios) {
  // tests/testdata/accuracy/measure_moe_format.csv: rows as measure_moe.py writes them (made-up
  // values, marked SYNTHETIC in their notes): four grouped matmuls of the tiny_a point
  // (x[64, 64] over 4 experts of W[4, 64, 96], uniform 16 rows each), one with Zipf routing,
  // and one row each of the dense einsum, the permutation and the router. Zipf 1.2 over 4
  // experts: 64 / 1.8925 * (1, 2^-1.2, 3^-1.2, 4^-1.2) = 33.82 14.72 9.05 6.41, floored to
  // 33 14 9 6 and the two leftover rows to the largest remainders: 34 15 9 6.
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      MeasurementFile file,
      ReadMeasurements(ReadFileOrDie(PERFSIM_TESTDATA_DIR "/accuracy/measure_moe_format.csv"),
                       "measure_moe_format.csv"));
  ASSERT_EQ(file.rows.size(), 8u);
  struct Expected {
    GroupedMatmulKind kind;
    int64_t k, n;
    std::vector<int64_t> sizes;
  };
  const std::vector<int64_t> uniform = {16, 16, 16, 16};
  const std::map<std::string, Expected> gemms = {
      {"G001", {GroupedMatmulKind::kGmm, 64, 96, uniform}},   // fwd up projection
      {"G002", {GroupedMatmulKind::kGmm, 96, 64, uniform}},   // dlhs: contracts N
      {"G003", {GroupedMatmulKind::kTgmm, 64, 96, uniform}},  // drhs: dW[g] = x_g^T dy_g
      {"G004", {GroupedMatmulKind::kGmm, 96, 64, uniform}},   // fwd down projection
      {"G005", {GroupedMatmulKind::kGmm, 64, 96, {34, 15, 9, 6}}},
  };
  for (const Measurement& row : file.rows) {
    // The unit the script writes round-trips.
    ASSERT_TRUE(row.unit.has_value()) << row.id;
    EXPECT_EQ(*row.unit, MeasurementUnit::kMicroseconds) << row.id;
    EXPECT_THAT(row.Field("notes").text, HasSubstr("SYNTHETIC")) << row.id;
    PERFSIM_ASSERT_OK_AND_ASSIGN(MappedRow mapped, MapMeasurement(row));
    auto it = gemms.find(row.id);
    if (it == gemms.end()) {
      EXPECT_FALSE(mapped.scenario.has_value()) << row.id;
      EXPECT_THAT(mapped.skipped_reason, HasSubstr("is not simulated")) << row.id;
      continue;
    }
    ASSERT_TRUE(mapped.scenario.has_value()) << row.id << ": " << mapped.skipped_reason;
    EXPECT_EQ(mapped.scenario->chip, "gpu_h100") << row.id;  // "NVIDIA H100 80GB HBM3"
    EXPECT_EQ(mapped.scenario->metric, ScenarioMetric::kTime) << row.id;
    const GroupedMatmulSpec& spec = std::get<GroupedGemmScenario>(mapped.scenario->what).spec;
    EXPECT_EQ(spec.kind, it->second.kind) << row.id;
    EXPECT_EQ(spec.m, 64) << row.id;
    EXPECT_EQ(spec.k, it->second.k) << row.id;
    EXPECT_EQ(spec.n, it->second.n) << row.id;
    EXPECT_EQ(spec.num_groups, 4) << row.id;
    EXPECT_EQ(spec.group_sizes, it->second.sizes) << row.id;
    EXPECT_EQ(spec.lhs_type, PrimitiveType::kBF16) << row.id;
    EXPECT_EQ(spec.out_type, PrimitiveType::kBF16) << row.id;
  }
  PERFSIM_ASSERT_OK_AND_ASSIGN(AccuracyReport report, RunAccuracy(file));
  EXPECT_EQ(report.skipped, 3);
}

}  // namespace
}  // namespace perfsim
