// Strict CSV reading with positions (csv.h).
#include "sim/accuracy/csv.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

// What the scanner found after a cell.
enum class CellEnd { kComma, kLineBreak, kEndOfText };

class CsvScanner {
 public:
  CsvScanner(absl::string_view text, absl::string_view filename)
      : text_(text), filename_(filename) {
    // A UTF-8 byte-order mark is not part of the first header name.
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
  }

  bool AtEnd() const { return pos_ >= text_.size(); }

  // Skips empty lines between records.
  void SkipEmptyLines() {
    while (!AtEnd()) {
      if (Peek() == '\n') {
        Advance();
      } else if (Peek() == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        Advance();
        Advance();
      } else {
        return;
      }
    }
  }

  // Reads one record's cells up to and including its line break.
  absl::StatusOr<CsvRecord> ReadRecord() {
    CsvRecord record;
    record.line = line_;
    while (true) {
      CsvCell cell;
      cell.line = line_;
      cell.column = column_;
      absl::StatusOr<CellEnd> end = Peek() == '"' && !AtEnd() ? ReadQuoted(cell) : ReadPlain(cell);
      if (!end.ok()) return end.status();
      record.cells.push_back(std::move(cell));
      if (*end != CellEnd::kComma) return record;
    }
  }

 private:
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  absl::Status Error(int64_t line, int64_t column, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(filename_, ":", line, ":", column, ": ", message));
  }

  // After a cell: a comma, a line break ("\n" or "\r\n") or the end of the text.
  absl::StatusOr<CellEnd> ReadSeparator(absl::string_view after) {
    if (AtEnd()) return CellEnd::kEndOfText;
    const char c = Peek();
    if (c == ',') {
      Advance();
      return CellEnd::kComma;
    }
    if (c == '\n') {
      Advance();
      return CellEnd::kLineBreak;
    }
    if (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
      Advance();
      Advance();
      return CellEnd::kLineBreak;
    }
    return Error(line_, column_,
                 absl::StrCat("expected ',' or the end of the line after ", after, "; got '",
                              absl::string_view(&text_[pos_], 1), "'"));
  }

  absl::StatusOr<CellEnd> ReadPlain(CsvCell& cell) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ',' || c == '\n' ||
          (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n')) {
        break;
      }
      if (c == '"') {
        return Error(line_, column_,
                     "expected a quote only at the start of a cell (quote the whole cell and "
                     "double the quotes inside); got '\"' inside an unquoted cell");
      }
      cell.text.push_back(c);
      Advance();
    }
    return ReadSeparator("a cell");
  }

  absl::StatusOr<CellEnd> ReadQuoted(CsvCell& cell) {
    const int64_t open_line = line_;
    const int64_t open_column = column_;
    Advance();  // the opening quote
    while (true) {
      if (AtEnd()) {
        return Error(open_line, open_column,
                     "expected a closing '\"' for the quoted cell that starts here; got the end "
                     "of the file");
      }
      const char c = Peek();
      Advance();
      if (c != '"') {
        cell.text.push_back(c);
        continue;
      }
      if (Peek() == '"') {  // "" is one quote
        cell.text.push_back('"');
        Advance();
        continue;
      }
      return ReadSeparator("a quoted cell");
    }
  }

  absl::string_view text_;
  std::string filename_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t column_ = 1;
};

}  // namespace

int64_t CsvTable::ColumnIndex(absl::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].text == name) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string CsvLocation(absl::string_view filename, const CsvCell& cell) {
  return absl::StrCat(filename, ":", cell.line, ":", cell.column);
}

absl::StatusOr<CsvTable> ParseCsv(absl::string_view text, absl::string_view filename) {
  CsvTable table;
  table.filename = std::string(filename);
  CsvScanner scanner(text, filename);
  scanner.SkipEmptyLines();
  if (scanner.AtEnd()) {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":1:1: expected a header line of column names; got an empty file"));
  }
  absl::StatusOr<CsvRecord> header = scanner.ReadRecord();
  if (!header.ok()) return header.status();
  table.header = std::move(header->cells);
  // One pass with a hash set: a header of a million columns is checked in a moment, not in
  // the quarter of an hour a pairwise comparison takes.
  absl::flat_hash_map<absl::string_view, const CsvCell*> first_with_name;
  first_with_name.reserve(table.header.size());
  for (const CsvCell& cell : table.header) {
    if (cell.text.empty()) continue;
    auto [it, inserted] = first_with_name.emplace(cell.text, &cell);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          CsvLocation(filename, cell), ": expected distinct column names; got '", cell.text,
          "' again (first at column ", it->second->column, ")"));
    }
  }
  while (true) {
    scanner.SkipEmptyLines();
    if (scanner.AtEnd()) break;
    absl::StatusOr<CsvRecord> record = scanner.ReadRecord();
    if (!record.ok()) return record.status();
    if (record->cells.size() != table.header.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(filename, ":", record->line, ":1: expected ", table.header.size(),
                       " cells as in the header; got ", record->cells.size()));
    }
    table.records.push_back(*std::move(record));
  }
  return table;
}

}  // namespace perfsim
