// Helpers for the sim/accuracy tests: the shared calibration file, rows by id, one-row files.
#ifndef PERFSIM_TESTS_ACCURACY_ACCURACY_TEST_UTIL_H_
#define PERFSIM_TESTS_ACCURACY_ACCURACY_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/accuracy/measurement.h"

namespace perfsim {
namespace testing {

inline std::string CalibrationCsvPath() {
  return absl::StrCat(PERFSIM_SHARED_DIR, "/reference/calibration.csv");
}

inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// The rows of shared/reference/calibration.csv.
inline const MeasurementFile& CalibrationFile() {
  static const MeasurementFile* const kFile = [] {
    absl::StatusOr<MeasurementFile> f =
        ReadMeasurements(ReadFileOrDie(CalibrationCsvPath()), "calibration.csv");
    EXPECT_TRUE(f.ok()) << f.status();
    return new MeasurementFile(f.ok() ? *std::move(f) : MeasurementFile());
  }();
  return *kFile;
}

inline const Measurement& CalibrationRow(const std::string& id) {
  for (const Measurement& m : CalibrationFile().rows) {
    if (m.id == id) return m;
  }
  ADD_FAILURE() << "no row " << id;
  static const Measurement* const kEmpty = new Measurement();
  return *kEmpty;
}

// A file of one data row under the reference format's relevant columns.
constexpr char kSyntheticHeader[] =
    "id,category,hardware,num_chips,interconnect_topology,E,K,D,tokens,dtype,backend_kernel,"
    "op_shape,metric,value,unit,derived,notes\n";

inline Measurement OneRow(const std::string& data_line) {
  absl::StatusOr<MeasurementFile> f =
      ReadMeasurements(absl::StrCat(kSyntheticHeader, data_line, "\n"), "x.csv");
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() && !f->rows.empty() ? f->rows[0] : Measurement();
}

}  // namespace testing
}  // namespace perfsim

#endif  // PERFSIM_TESTS_ACCURACY_ACCURACY_TEST_UTIL_H_
