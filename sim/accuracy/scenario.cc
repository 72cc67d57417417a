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

absl::string_view TimingMethodName(TimingMethod timing) {
  switch (timing) {
    case TimingMethod::kDevice:
      return "device";
    case TimingMethod::kHostApi:
      return "host API";
  }
  return "?";
}

TimingMethod RowTimingMethod(const Measurement& row) {
  // The cells that say how a number was measured: the kernel/library cell ("HybridEP, 8 SMs,
  // Torch API timing") and the metric ("device time (xprof, avg over 50)"). Not the notes: a
  // note may quote other figures of the same source ("kernel-only: 62.00/76.80/68.00").
  static constexpr absl::string_view kHostTiming[] = {"api timing", "api time", "host timing",
                                                      "wall-clock", "wall clock"};
  for (absl::string_view column : {"backend_kernel", "metric"}) {
    const std::string& text = row.Field(column).text;
    for (absl::string_view phrase : kHostTiming) {
      if (ContainsNoCase(text, phrase)) return TimingMethod::kHostApi;
    }
  }
  return TimingMethod::kDevice;
}

absl::StatusOr<MappedRow> MapMeasurement(const Measurement& row) {
  if (!row.unit.has_value()) {
    return SkippedRow(absl::StrCat("unit '", CellText(row, "unit"),
                                   "' is not one perfsim predicts (TFLOP/s, GB/s, us, ms, s)"));
  }
  const std::string hardware = CellText(row, "hardware");
  const std::optional<HardwareMatch> match = ResolveHardware(hardware);
  if (!match.has_value()) {
    return SkippedRow(
        absl::StrCat("hardware '", hardware, "' is not a built-in chip (see 'perfsim hw list')"));
  }
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, LoadBuiltinChip(match->chip));

  Scenario scenario;
  scenario.chip = match->chip;
  scenario.timing = RowTimingMethod(row);
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
      if (row.category == "e2e_train") break;
      return SkippedRow(absl::StrCat(
          "a whole step (", MeasurementUnitName(*row.unit),
          ") is not mapped yet: perfsim accuracy simulates single kernels and collectives"));
  }

  if (row.category == "e2e_train") {
    absl::StatusOr<MappedRow> mapped = MapStepRow(row, chip, match->chip);
    if (mapped.ok() && mapped->train_step.has_value() && !match->assumption.empty()) {
      absl::StrAppend(&mapped->train_step->description, "; ", match->assumption);
    }
    return mapped;
  }
  absl::StatusOr<MappedRow> mapped;
  if (row.category == "kernel_grouped_gemm") {
    mapped = MapGroupedGemmRow(row, chip, scenario);
  } else if (row.category == "kernel_ep_comm") {
    mapped = MapEpCommRow(row, chip, scenario);
  } else if (row.category == "collective") {
    mapped = MapCollectiveRow(row, chip, scenario);
  } else if (row.category == "moe_block" || row.category == "moe_layer_fused") {
    mapped = MapBlockRow(row, chip, scenario);
    if (mapped.ok() && mapped->block.has_value() && !match->assumption.empty()) {
      absl::StrAppend(&mapped->block->description, "; ", match->assumption);
    }
    return mapped;
  } else {
    return SkippedRow(absl::StrCat("category '", row.category,
                                   "' is not simulated (kernel_grouped_gemm, kernel_ep_comm, "
                                   "collective, moe_block, moe_layer_fused and e2e_train are)"));
  }
  if (mapped.ok() && mapped->scenario.has_value() && !match->assumption.empty()) {
    absl::StrAppend(&mapped->scenario->description, "; ", match->assumption);
  }
  if (mapped.ok() && mapped->scenario.has_value() &&
      mapped->scenario->timing == TimingMethod::kHostApi) {
    absl::StrAppend(&mapped->scenario->description,
                    "; timed around the host API (a per-call API cost on top)");
  }
  return mapped;
}

}  // namespace perfsim
