// Measurement rows (sim/accuracy/measurement.h): required columns, forgiving values and units,
// strict errors with their location.
#include "sim/accuracy/measurement.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kHeader[] = "id,category,hardware,metric,value,unit,op_shape\n";

TEST(Measurement, ReadsRowsAndKeepsEveryColumn) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      MeasurementFile f,
      ReadMeasurements(
          absl::StrCat(kHeader,
                       "M001,kernel_grouped_gemm,H800,throughput,1297,TFLOP/s,\"groups=4; N=1\"\n"),
          "cal.csv"));
  ASSERT_EQ(f.rows.size(), 1u);
  const Measurement& m = f.rows[0];
  EXPECT_EQ(m.id, "M001");
  EXPECT_EQ(m.category, "kernel_grouped_gemm");
  EXPECT_EQ(m.value.value, 1297);
  EXPECT_EQ(m.value.kind, MeasuredValue::Kind::kExact);
  EXPECT_EQ(m.unit, MeasurementUnit::kTeraflopsPerSecond);
  EXPECT_EQ(m.Field("op_shape").text, "groups=4; N=1");
  EXPECT_EQ(m.line, 2);
  EXPECT_EQ(m.Where("op_shape"), "cal.csv:2:55");
  // A column the file does not have reads as empty, located at the row's start.
  EXPECT_EQ(m.Field("notes").text, "");
  EXPECT_EQ(m.Where("notes"), "cal.csv:2:1");
}

TEST(Measurement, ApproximateValuesAndRangesAreFlagged) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(MeasuredValue approx, ParseMeasuredValue(" ~370 "));
  EXPECT_EQ(approx.kind, MeasuredValue::Kind::kApproximate);
  EXPECT_EQ(approx.value, 370);
  PERFSIM_ASSERT_OK_AND_ASSIGN(MeasuredValue approx2, ParseMeasuredValue("\xE2\x89\x88"
                                                                         "8"));
  EXPECT_EQ(approx2.value, 8);
  // 46-49: the midpoint (46 + 49) / 2 = 47.5.
  PERFSIM_ASSERT_OK_AND_ASSIGN(MeasuredValue range, ParseMeasuredValue("46-49"));
  EXPECT_EQ(range.kind, MeasuredValue::Kind::kRange);
  EXPECT_EQ(range.value, 47.5);
  EXPECT_EQ(range.low, 46);
  EXPECT_EQ(range.high, 49);
  PERFSIM_ASSERT_OK_AND_ASSIGN(MeasuredValue en_dash, ParseMeasuredValue("46 \xE2\x80\x93 50"));
  EXPECT_EQ(en_dash.value, 48);
  // An exponent's sign is not a range.
  PERFSIM_ASSERT_OK_AND_ASSIGN(MeasuredValue exp, ParseMeasuredValue("1.5e-3"));
  EXPECT_EQ(exp.kind, MeasuredValue::Kind::kExact);
  EXPECT_EQ(exp.value, 1.5e-3);
}

TEST(Measurement, RejectsValuesThatAreNotPositiveNumbers) {
  for (const char* bad : {"", "abc", "0", "-3", "~", "~4-5", "49-46", "nan"}) {
    EXPECT_THAT(ParseMeasuredValue(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected")))
        << bad;
  }
}

TEST(Measurement, UnitsMatchWithoutCaseAndMicroSigns) {
  EXPECT_EQ(ParseMeasurementUnit(" tflops "), MeasurementUnit::kTeraflopsPerSecond);
  EXPECT_EQ(ParseMeasurementUnit("GB/s"), MeasurementUnit::kGigabytesPerSecond);
  EXPECT_EQ(ParseMeasurementUnit("\xC2\xB5s"), MeasurementUnit::kMicroseconds);
  EXPECT_EQ(ParseMeasurementUnit("\xCE\xBCs"), MeasurementUnit::kMicroseconds);
  EXPECT_EQ(ParseMeasurementUnit("us"), MeasurementUnit::kMicroseconds);
  EXPECT_EQ(ParseMeasurementUnit("ms"), MeasurementUnit::kMilliseconds);
  EXPECT_EQ(ParseMeasurementUnit("s/step"), MeasurementUnit::kSecondsPerStep);
  EXPECT_EQ(ParseMeasurementUnit("tokens/s"), MeasurementUnit::kTokensPerSecond);
  EXPECT_EQ(ParseMeasurementUnit("furlongs"), std::nullopt);
  EXPECT_TRUE(IsRateUnit(MeasurementUnit::kGigabytesPerSecond));
  EXPECT_FALSE(IsRateUnit(MeasurementUnit::kMicroseconds));
}

TEST(Measurement, UnknownUnitIsNotAnError) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      MeasurementFile f,
      ReadMeasurements(absl::StrCat(kHeader, "M1,x,H100,m,3,furlongs,\n"), "u.csv"));
  EXPECT_EQ(f.rows[0].unit, std::nullopt);
}

TEST(Measurement, RejectsMissingRequiredColumns) {
  EXPECT_THAT(ReadMeasurements("id,category,value\nM1,x,3\n", "m.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.csv:1:1: expected the columns id, category, hardware, metric, "
                                 "value, unit in the header; got no hardware, metric, unit")));
}

TEST(Measurement, RejectsBadValueWithItsLocation) {
  EXPECT_THAT(ReadMeasurements(absl::StrCat(kHeader, "M1,x,H100,m,fast,us,\n"), "v.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("v.csv:2:13: value: expected a positive number")));
}

TEST(Measurement, RejectsEmptyAndRepeatedIdsAndEmptyCategory) {
  EXPECT_THAT(
      ReadMeasurements(absl::StrCat(kHeader, " ,x,H100,m,1,us,\n"), "i.csv"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("i.csv:2:1: expected a row id")));
  EXPECT_THAT(
      ReadMeasurements(absl::StrCat(kHeader, "A,x,H,m,1,us,\nA,x,H,m,1,us,\n"), "r.csv"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("r.csv:3:1: expected a unique row id; got 'A' again (first on line 2)")));
  EXPECT_THAT(
      ReadMeasurements(absl::StrCat(kHeader, "A,,H,m,1,us,\n"), "c.csv"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c.csv:2:3: expected a category")));
}

}  // namespace
}  // namespace perfsim
