// libFuzzer target for the measurement loaders of `perfsim accuracy` and `perfsim calibrate`:
// arbitrary bytes go through the strict CSV reader (sim/accuracy/csv.h), the measurement-row
// reader (measurement.h: required columns, ids, forgiving value and unit cells), the
// row -> scenario mapping that reads the free-text cells (scenario.h: op_shape, tokens,
// hardware, backend_kernel, ...) and, for small files, the whole `perfsim accuracy` pipeline
// (simulate every row and fit the factors, RunAccuracy without leave-one-out).
//
// Checked: nothing crashes, hangs or trips a sanitizer; every rejection is an InvalidArgument
// whose message starts with the file name given ("fuzz.csv:"); every record the CSV reader
// returns has as many cells as the header, at 1-based positions; a value the reader accepts is
// a positive finite number (ranges: low <= value <= high).
//
//   ./csv_fuzzer -max_len=8192 tests/testdata/accuracy/ ../shared/reference/calibration.csv
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "sim/accuracy/accuracy.h"
#include "sim/accuracy/csv.h"
#include "sim/accuracy/measurement.h"
#include "sim/accuracy/scenario.h"

namespace {

constexpr absl::string_view kFile = "fuzz.csv";

// A broken promise of the loader contract: abort so that libFuzzer records the input.
void Require(bool condition) {
  if (!condition) std::abort();
}

void CheckRejection(const absl::Status& status) {
  Require(status.code() == absl::StatusCode::kInvalidArgument);
  Require(absl::StartsWith(status.message(), absl::StrCat(kFile, ":")));
}

void CheckTable(const perfsim::CsvTable& table) {
  Require(!table.header.empty());
  for (const perfsim::CsvRecord& record : table.records) {
    Require(record.cells.size() == table.header.size());
    Require(record.line >= 1);
    for (const perfsim::CsvCell& cell : record.cells) Require(cell.line >= 1 && cell.column >= 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<perfsim::CsvTable> table = perfsim::ParseCsv(text, kFile);
  if (!table.ok()) {
    CheckRejection(table.status());
  } else {
    CheckTable(*table);
  }
  absl::StatusOr<perfsim::MeasurementFile> file = perfsim::ReadMeasurements(text, kFile);
  if (!file.ok()) {
    CheckRejection(file.status());
    return 0;
  }
  for (const perfsim::Measurement& row : file->rows) {
    const perfsim::MeasuredValue& v = row.value;
    Require(std::isfinite(v.value) && v.value > 0);
    Require(v.low <= v.value && v.value <= v.high);
    absl::StatusOr<perfsim::MappedRow> mapped = perfsim::MapMeasurement(row);
    if (!mapped.ok()) {
      CheckRejection(mapped.status());
      continue;
    }
    // Exactly one of: a closed-form scenario, a whole-layer scenario, a whole step, a reason
    // to skip.
    Require(int{mapped->scenario.has_value()} + int{mapped->block.has_value()} +
                int{mapped->train_step.has_value()} + int{!mapped->skipped_reason.empty()} ==
            1);
  }
  // The whole pipeline, as `perfsim accuracy` runs it; a fit per row is too slow for every
  // input, so only small files (what the fuzzer mostly makes anyway).
  if (file->rows.size() <= 8) {
    absl::StatusOr<perfsim::AccuracyReport> report =
        perfsim::RunAccuracy(*file, perfsim::AccuracyOptions{.leave_one_out = false});
    if (!report.ok()) CheckRejection(report.status());
  }
  return 0;
}
