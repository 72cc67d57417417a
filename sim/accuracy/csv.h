// A strict CSV reader (RFC 4180) that remembers where every cell was.
//
//   PERFSIM_ASSIGN_OR_RETURN(CsvTable t, ParseCsv(text, "calibration.csv"));
//   t.header[2].text;              // "category"
//   t.records[0].cells[2].text;    // "kernel_grouped_gemm"
//   t.records[0].cells[2].line;    // 2 (1-based), .column: 1-based byte of the cell's first char
//
// Rules: cells are separated by ',' and records by '\n' or "\r\n". A cell that starts with '"'
// is quoted: it ends at the next lone '"', may hold commas and line breaks, and "" stands for
// one quote. Anything but ',' or a line break after the closing quote, a quote inside an
// unquoted cell, an unterminated quote, or a record whose cell count differs from the header's
// is an error "file:line:col: expected X; got Y". Empty lines are skipped; a UTF-8 byte-order
// mark before the header is ignored. Cells are returned as written (no trimming).
#ifndef PERFSIM_SIM_ACCURACY_CSV_H_
#define PERFSIM_SIM_ACCURACY_CSV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfsim {

struct CsvCell {
  std::string text;
  int64_t line = 0;    // 1-based line where the cell starts
  int64_t column = 0;  // 1-based byte column where the cell starts (its quote, if quoted)
};

struct CsvRecord {
  int64_t line = 0;  // line of the record's first cell
  std::vector<CsvCell> cells;
};

struct CsvTable {
  std::string filename;
  std::vector<CsvCell> header;
  std::vector<CsvRecord> records;

  // Index of the header cell equal to `name`, or -1.
  int64_t ColumnIndex(absl::string_view name) const;
};

// InvalidArgument "file:line:col: ..." for malformed text; an empty file (no header) is an
// error too.
absl::StatusOr<CsvTable> ParseCsv(absl::string_view text, absl::string_view filename);

// "file:line:col" of a cell, for messages.
std::string CsvLocation(absl::string_view filename, const CsvCell& cell);

}  // namespace perfsim

#endif  // PERFSIM_SIM_ACCURACY_CSV_H_
