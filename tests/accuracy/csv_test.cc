// The strict CSV reader (sim/accuracy/csv.h): RFC 4180 quoting, positions, and every error
// with its file:line:col.
#include "sim/accuracy/csv.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/util/status_matchers.h"

namespace perfsim {
namespace {

using ::perfsim::testing::StatusIs;
using ::testing::HasSubstr;

TEST(Csv, ReadsHeaderRecordsAndPositions) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(CsvTable t, ParseCsv("id,value\nM1,12\nM2,7\n", "f.csv"));
  ASSERT_EQ(t.header.size(), 2u);
  EXPECT_EQ(t.header[1].text, "value");
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.records[1].cells[0].text, "M2");
  EXPECT_EQ(t.records[1].line, 3);
  // "M2,7": the second cell starts at byte 4 of line 3.
  EXPECT_EQ(t.records[1].cells[1].line, 3);
  EXPECT_EQ(t.records[1].cells[1].column, 4);
  EXPECT_EQ(t.ColumnIndex("value"), 1);
  EXPECT_EQ(t.ColumnIndex("missing"), -1);
  EXPECT_EQ(CsvLocation("f.csv", t.records[1].cells[1]), "f.csv:3:4");
}

TEST(Csv, QuotedCellsHoldCommasLineBreaksAndDoubledQuotes) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(
      CsvTable t, ParseCsv("a,b\n\"x, y\",\"say \"\"hi\"\"\nthere\"\nlast,1\n", "q.csv"));
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.records[0].cells[0].text, "x, y");
  EXPECT_EQ(t.records[0].cells[1].text, "say \"hi\"\nthere");
  // The record after a cell with a line break starts on line 4.
  EXPECT_EQ(t.records[1].line, 4);
}

TEST(Csv, AcceptsCrLfByteOrderMarkAndEmptyLinesAndNoFinalBreak) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(CsvTable t, ParseCsv("\xEF\xBB\xBFid,v\r\n\r\nA,1\r\nB,2", "w.csv"));
  EXPECT_EQ(t.header[0].text, "id");
  ASSERT_EQ(t.records.size(), 2u);
  EXPECT_EQ(t.records[0].cells[1].text, "1");
  EXPECT_EQ(t.records[1].cells[1].text, "2");
}

TEST(Csv, CellsAreNotTrimmed) {
  PERFSIM_ASSERT_OK_AND_ASSIGN(CsvTable t, ParseCsv("a,b\n x , y\n", "t.csv"));
  EXPECT_EQ(t.records[0].cells[0].text, " x ");
}

TEST(Csv, RejectsEmptyFile) {
  EXPECT_THAT(ParseCsv("\n\n", "e.csv"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("e.csv:1:1: expected a header")));
}

TEST(Csv, RejectsUnterminatedQuoteAtItsStart) {
  EXPECT_THAT(ParseCsv("a,b\n1,\"open\n", "u.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("u.csv:2:3: expected a closing '\"'")));
}

TEST(Csv, RejectsQuoteInsideUnquotedCell) {
  EXPECT_THAT(
      ParseCsv("a,b\n1,ab\"c\n", "q.csv"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("q.csv:2:5: expected a quote only")));
}

TEST(Csv, RejectsTextAfterClosingQuote) {
  EXPECT_THAT(ParseCsv("a,b\n\"x\"y,1\n", "c.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("c.csv:2:4: expected ',' or the end of the line")));
}

TEST(Csv, RejectsWrongCellCount) {
  EXPECT_THAT(ParseCsv("a,b,c\n1,2\n", "n.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("n.csv:2:1: expected 3 cells as in the header; got 2")));
}

TEST(Csv, RejectsRepeatedColumnName) {
  EXPECT_THAT(ParseCsv("id,v,id\n1,2,3\n", "h.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("h.csv:1:6: expected distinct column names; got 'id' again")));
}

TEST(Csv, AMillionColumnHeaderIsCheckedForRepeatsInOnePass) {
  // Pairwise comparison took about a quarter of an hour on a million columns; a hash set
  // takes a moment. The repeat is the last column, so every name is looked at.
  constexpr int kColumns = 1'000'000;
  std::string header;
  header.reserve(kColumns * 8);
  for (int i = 0; i < kColumns - 1; ++i) absl::StrAppend(&header, "c", i, ",");
  const int64_t last_column = static_cast<int64_t>(header.size()) + 1;
  absl::StrAppend(&header, "c7\n");
  EXPECT_THAT(ParseCsv(header, "wide.csv"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("wide.csv:1:", last_column,
                                              ": expected distinct column names; got 'c7' "
                                              "again (first at column 22)"))));
  // Without the repeat the header reads in full.
  header.replace(header.size() - 3, 3, "end\n");
  PERFSIM_ASSERT_OK_AND_ASSIGN(CsvTable table, ParseCsv(header, "wide.csv"));
  EXPECT_EQ(table.header.size(), static_cast<size_t>(kColumns));
}

}  // namespace
}  // namespace perfsim
