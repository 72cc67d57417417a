// From a measurement row to its scenario (scenario.h): the checks every category shares, then
// the category's own mapping (scenario_gemm.cc, scenario_comm.cc).
#include "sim/accuracy/scenario.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sim/accuracy/scenario_internal.h"
#include "sim/accuracy/text_fields.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {

MappedRow SkippedRow(std::string reason) {
  MappedRow out;
  out.skipped_reason = std::move(reason);
  return out;
}

absl::Status CellError(const Measurement& row, absl::string_view column,
                       absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(row.Where(column), ": ", column, ": expected ",
                                                 expected, "; got '", row.Field(column).text, "'"));
}

std::string CellText(const Measurement& row, absl::string_view column) {
  return std::string(absl::StripAsciiWhitespace(row.Field(column).text));
}

absl::StatusOr<std::optional<int64_t>> OptionalIntegerColumn(const Measurement& row,
                                                             absl::string_view column) {
  const std::string text = CellText(row, column);
  if (text.empty()) return std::optional<int64_t>();
  const std::optional<int64_t> value = ParseInteger(text);
  if (!value.has_value()) return CellError(row, column, "a non-negative integer or nothing");
  return value;
}

absl::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
  }
  return "?";
}

absl::StatusOr<MappedRow> MapMeasurement(const Measurement& row) {
  if (!row.unit.has_value()) {
    return SkippedRow(absl::StrCat("unit '", CellText(row, "unit"),
                                   "' is not one perfsim predicts (TFLOP/s, GB/s, us, ms, s)"));
  }
  const std::string hardware = CellText(row, "hardware");
  const std::optional<std::string> chip_name = ResolveHardwareName(hardware);
  if (!chip_name.has_value()) {
    return SkippedRow(
        absl::StrCat("hardware '", hardware, "' is not a built-in chip (see 'perfsim hw list')"));
  }
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, LoadBuiltinChip(*chip_name));

  Scenario scenario;
  scenario.chip = *chip_name;
  scenario.unit = *row.unit;
  switch (*row.unit) {
    case MeasurementUnit::kMicroseconds:
    case MeasurementUnit::kMilliseconds:
    case MeasurementUnit::kSeconds:
      scenario.metric = ScenarioMetric::kTime;
      break;
    case MeasurementUnit::kTeraflopsPerSecond:
      scenario.metric = ScenarioMetric::kThroughput;
      break;
    case MeasurementUnit::kGigabytesPerSecond:
      // Which bandwidth: the category's mapping decides (link or bus bandwidth).
      scenario.metric = ScenarioMetric::kLinkBandwidth;
      break;
    case MeasurementUnit::kSecondsPerStep:
    case MeasurementUnit::kTokensPerSecond:
      return SkippedRow(absl::StrCat(
          "a whole step (", MeasurementUnitName(*row.unit),
          ") is not mapped yet: perfsim accuracy simulates single kernels and collectives"));
  }

  if (row.category == "kernel_grouped_gemm") return MapGroupedGemmRow(row, chip, scenario);
  if (row.category == "kernel_ep_comm") return MapEpCommRow(row, chip, scenario);
  if (row.category == "collective") return MapCollectiveRow(row, chip, scenario);
  return SkippedRow(absl::StrCat("category '", row.category,
                                 "' is not simulated (kernel_grouped_gemm, kernel_ep_comm and "
                                 "collective are)"));
}

}  // namespace perfsim
