// `perfsim accuracy FILE.csv`: every measurement row predicted (datasheet physics, calibrated,
// leave-one-out) against its measured value; see sim/accuracy/accuracy.h.
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "sim/accuracy/accuracy.h"
#include "sim/accuracy/accuracy_report.h"
#include "sim/accuracy/measurement.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr char kAccuracyUsage[] =
    R"(usage: perfsim accuracy FILE.csv [--format=table|json]

Predicts every row of a measurement file in the format of shared/reference/calibration.csv
(grouped-GEMM kernels, expert-parallel dispatch/combine, collectives) in the row's own unit
and prints measured, predicted and the signed error (predicted - measured) / measured, three
ways: datasheet physics (every efficiency fraction 1, every overhead 0, whatever the shipped
hardware files say), calibrated (factors fitted on all rows, as 'perfsim calibrate' fits
them) and leave-one-out (factors fitted without the row). Then the median and p90 |error|
per category, for the kernel rows and overall, with the worst row.
A row perfsim cannot simulate is listed with the reason.

  --format=json   rows[] (id, category, measured, predicted, unit, error_pct,
                  skipped_reason, ...), summary and the fitted factors (AccuracyReport in
                  proto/report.proto)

FILE may be '-' for standard input.
)";

absl::StatusOr<AccuracyReport> Run(const std::string& path, std::istream& in) {
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadInput(path, in));
  PERFSIM_ASSIGN_OR_RETURN(MeasurementFile file, ReadMeasurements(text, InputName(path)));
  return RunAccuracy(file);
}

}  // namespace

int RunAccuracyCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"format", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kAccuracyUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  if (flags->positional().size() != 1) {
    io.err << kAccuracyUsage;
    return kExitBadInput;
  }
  absl::StatusOr<AccuracyReport> report = Run(flags->positional()[0], io.in);
  if (!report.ok()) return ReportStatus(report.status(), io);
  if (*format == "json") {
    PrintAccuracyJson(*report, io.out);
  } else {
    PrintAccuracyTable(*report, io.out);
  }
  return kExitOk;
}

}  // namespace perfsim
