// Measurement rows in the format of shared/reference/calibration.csv.
//
//   PERFSIM_ASSIGN_OR_RETURN(MeasurementFile f, ReadMeasurements(text, "calibration.csv"));
//   const Measurement& m = f.rows[0];
//   m.id;                          // "M001"
//   m.category;                    // "kernel_grouped_gemm"
//   m.value.value;                 // 1297
//   m.unit;                        // MeasurementUnit::kTeraflopsPerSecond
//   m.Field("op_shape").text;      // "groups=4; M_per_group=8192; N=4096; K=7168"
//
// Columns. Required: id, category, hardware, metric, value, unit. Every other column of the
// reference format (group, num_chips, interconnect_topology, model, E, K, D, F, shared_experts,
// tokens, seq_len, global_batch, dtype, parallelism, backend_kernel, op_shape, derived,
// completeness, date, source, notes) is optional and read as text when present; columns
// perfsim does not know are kept too.
//
// Strict (an error "file:line:col: expected X; got Y", exit 2): the CSV structure (csv.h), a
// missing required column, an empty or repeated id, an empty category, and a value that is
// not a positive number. Forgiving where published data is: a value may be approximate
// ("~370", "≈370": the number, flagged) or a range ("46-49", "46–49": the midpoint, flagged),
// with spaces around; units are matched after trimming and without case ("TFLOP/s",
// "tflops", "GB/s", "us", "µs", "ms", "s", "s/step", "tokens/s"). A unit perfsim does not
// know is not an error here: the row is reported as skipped (scenario.h).
#ifndef PERFSIM_SIM_ACCURACY_MEASUREMENT_H_
#define PERFSIM_SIM_ACCURACY_MEASUREMENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/accuracy/csv.h"

namespace perfsim {

enum class MeasurementUnit {
  kTeraflopsPerSecond,  // TFLOP/s (useful flops over time)
  kGigabytesPerSecond,  // GB/s = 1e9 bytes/s
  kMicroseconds,
  kMilliseconds,
  kSeconds,
  kSecondsPerStep,
  kTokensPerSecond,
};

// "TFLOP/s", "GB/s", "us", "ms", "s", "s/step", "tokens/s".
absl::string_view MeasurementUnitName(MeasurementUnit unit);
// The unit written as `text` (see the file comment), or nullopt.
std::optional<MeasurementUnit> ParseMeasurementUnit(absl::string_view text);
// Whether the quantity grows as the time shrinks (throughput, bandwidth, tokens/s).
bool IsRateUnit(MeasurementUnit unit);
// A time expressed in `unit`: the time itself for us, ms, s and s/step; for a rate, `work` per
// time (flops for TFLOP/s, bytes for GB/s, tokens for tokens/s).
double ValueInUnit(double seconds, double work, MeasurementUnit unit);

struct MeasuredValue {
  enum class Kind { kExact, kApproximate, kRange };
  Kind kind = Kind::kExact;
  double value = 0;  // the number, or the range's midpoint
  double low = 0;    // range ends (both = value otherwise)
  double high = 0;
  std::string text;  // as written
};

// Parses a value cell (see the file comment). InvalidArgument "expected ...; got ..." without
// a location; ReadMeasurements adds it.
absl::StatusOr<MeasuredValue> ParseMeasuredValue(absl::string_view text);

struct Measurement {
  std::string id;
  std::string category;
  MeasuredValue value;
  std::optional<MeasurementUnit> unit;  // nullopt: not a unit perfsim predicts
  int64_t line = 0;                     // the row's line in the file
  std::string filename;
  // Every cell of the row by column name.
  std::map<std::string, CsvCell, std::less<>> fields;

  // The cell of column `name`; an empty cell at the row's line when the file has no such column.
  const CsvCell& Field(absl::string_view name) const;
  // "file:line:col" of column `name`'s cell (the row's start when the column is absent).
  std::string Where(absl::string_view name) const;
};

struct MeasurementFile {
  std::string filename;
  std::vector<Measurement> rows;  // in file order
};

absl::StatusOr<MeasurementFile> ReadMeasurements(absl::string_view text,
                                                 absl::string_view filename);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_MEASUREMENT_H_
