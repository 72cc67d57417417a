// `perfsim calibrate FILE.csv [--write]`: fits the efficiency factors of the hardware files on
// measurements (sim/accuracy/calibration.h) and prints or writes them.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "sim/accuracy/accuracy.h"
#include "sim/accuracy/accuracy_report.h"
#include "sim/accuracy/calibration.h"
#include "sim/accuracy/measurement.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"
#include "sim/util/textproto.h"

namespace perfsim {
namespace {

constexpr char kCalibrateUsage[] =
    R"(usage: perfsim calibrate FILE.csv [--write] [--hardware-dir DIR]

Fits a few explainable factors per chip on the rows of a measurement file (the format of
shared/reference/calibration.csv): the fields of the hardware files' efficiency block, i.e.
fractions of peak (matmul, HBM, and per link class NVLink, InfiniBand, ICI, DCN, each fitted
only on the rows that class bounds; the SMs' copy rate of dispatch/combine kernels; the
per-algorithm collective fractions are held at 1) and two overheads (per group of a grouped
matmul, per collective), by least squares on the log error (sim/accuracy/calibration.h). A
factor no row informs keeps its value; a chip no row is on, or whose rows inform nothing, is
not touched. Rows timed around a library's host API ("Torch API timing") get their own fixed
cost per call, fitted and printed but not written: it belongs to that timing, not to the chip
(sim/accuracy/row_model.h); where a chip's such rows cannot fit it, they inform nothing.

Prints, per chip, the efficiency block to put in hardware/<chip>.textproto, each factor with
the rows it was fitted on.

  --write              replace the efficiency block of DIR/<chip>.textproto in place
  --hardware-dir DIR   where the hardware files are (default: hardware, from the
                       repository root)

'perfsim accuracy FILE.csv' shows the errors before and after, and leave-one-out.
FILE may be '-' for standard input.
)";

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status Calibrate(const ParsedFlags& flags, CliIo& io) {
  const std::string& path = flags.positional()[0];
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadInput(path, io.in));
  PERFSIM_ASSIGN_OR_RETURN(MeasurementFile file, ReadMeasurements(text, InputName(path)));
  PERFSIM_ASSIGN_OR_RETURN(AccuracyReport report,
                           RunAccuracy(file, AccuracyOptions{.leave_one_out = false}));
  const std::string source = path == "-" ? "<stdin>" : BaseName(path);
  const std::string dir = flags.Get("hardware-dir", "hardware");
  const bool write = flags.Has("write");
  io.out << "# perfsim calibrate " << source << ": " << report.rows.size() << " rows, "
         << report.rows.size() - report.skipped << " simulated, " << report.skipped << " skipped\n";
  // --write is all or nothing: every updated file is built and validated, then written to a
  // temporary beside it, and only then are they all renamed into place.
  AtomicFileSet files;
  std::vector<std::string> written;
  for (const auto& [chip_name, fitted] : report.calibration.chips) {
    const std::string file_path = absl::StrCat(dir, "/", chip_name, ".textproto");
    // A chip whose rows inform no factor (e.g. one host-API-timed row, calibration.h) keeps its
    // file as it is.
    if (fitted.fitted_on.empty()) {
      io.out << "# " << file_path << ": no row informs a factor; left as it is\n";
      continue;
    }
    if (!write) {
      PERFSIM_ASSIGN_OR_RETURN(Chip builtin, LoadBuiltinChip(chip_name));
      io.out << "\n# " << file_path << "\n"
             << EfficiencyBlock(fitted, builtin.proto().efficiency(), source);
      continue;
    }
    PERFSIM_ASSIGN_OR_RETURN(std::string current, ReadTextFile(file_path));
    PERFSIM_ASSIGN_OR_RETURN(Chip chip, Chip::FromText(current, file_path));
    const std::string block = EfficiencyBlock(fitted, chip.proto().efficiency(), source);
    absl::StatusOr<std::string> updated = ReplaceEfficiencyBlock(current, block);
    if (!updated.ok()) return Annotate(updated.status(), file_path);
    // The result must still be a valid hardware description before it replaces the file.
    PERFSIM_RETURN_IF_ERROR(Chip::FromText(*updated, file_path).status());
    PERFSIM_RETURN_IF_ERROR(files.Stage(file_path, *updated));
    written.push_back(file_path);
  }
  if (write) {
    PERFSIM_RETURN_IF_ERROR(files.Commit());
    for (const std::string& file_path : written) io.out << "wrote " << file_path << "\n";
  }
  io.out << "\nfitted factors:\n";
  PrintFittedFactors(report.calibration, io.out);
  return absl::OkStatus();
}

}  // namespace

int RunCalibrateCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"write", false}, {"hardware-dir", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kCalibrateUsage;
    return kExitOk;
  }
  if (flags->positional().size() != 1) {
    io.err << kCalibrateUsage;
    return kExitBadInput;
  }
  return ReportStatus(Calibrate(*flags, io), io);
}

}  // namespace perfsim
