// Measurement rows (measurement.h).
#include "sim/accuracy/measurement.h"

#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace perfsim {
namespace {

constexpr absl::string_view kRequiredColumns[] = {"id",     "category", "hardware",
                                                  "metric", "value",    "unit"};
constexpr absl::string_view kApproxSign = "\xE2\x89\x88";  // ≈
constexpr absl::string_view kEnDash = "\xE2\x80\x93";      // –
constexpr absl::string_view kMicroSign = "\xC2\xB5";       // µ
constexpr absl::string_view kGreekMu = "\xCE\xBC";         // μ

std::optional<double> PositiveNumber(absl::string_view text) {
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &value)) return std::nullopt;
  if (!std::isfinite(value) || value <= 0) return std::nullopt;
  return value;
}

// The position of a range dash: '-' or '–' after the first character, not an exponent's sign.
size_t RangeDash(absl::string_view text, size_t* dash_size) {
  for (size_t i = 1; i < text.size(); ++i) {
    if (text.substr(i, kEnDash.size()) == kEnDash) {
      *dash_size = kEnDash.size();
      return i;
    }
    if (text[i] == '-' && text[i - 1] != 'e' && text[i - 1] != 'E') {
      *dash_size = 1;
      return i;
    }
  }
  return absl::string_view::npos;
}

}  // namespace

absl::string_view MeasurementUnitName(MeasurementUnit unit) {
  switch (unit) {
    case MeasurementUnit::kTeraflopsPerSecond:
      return "TFLOP/s";
    case MeasurementUnit::kGigabytesPerSecond:
      return "GB/s";
    case MeasurementUnit::kMicroseconds:
      return "us";
    case MeasurementUnit::kMilliseconds:
      return "ms";
    case MeasurementUnit::kSeconds:
      return "s";
    case MeasurementUnit::kSecondsPerStep:
      return "s/step";
    case MeasurementUnit::kTokensPerSecond:
      return "tokens/s";
  }
  return "?";
}

std::optional<MeasurementUnit> ParseMeasurementUnit(absl::string_view text) {
  std::string unit(absl::StripAsciiWhitespace(text));
  // µs and μs (micro sign or Greek mu) are us.
  for (absl::string_view mu : {kMicroSign, kGreekMu}) {
    if (absl::StartsWith(unit, mu)) unit = absl::StrCat("u", unit.substr(mu.size()));
  }
  absl::AsciiStrToLower(&unit);
  if (unit == "tflop/s" || unit == "tflops" || unit == "tflops/s") {
    return MeasurementUnit::kTeraflopsPerSecond;
  }
  if (unit == "gb/s" || unit == "gbps" || unit == "gbytes/s")
    return MeasurementUnit::kGigabytesPerSecond;
  if (unit == "us" || unit == "usec") return MeasurementUnit::kMicroseconds;
  if (unit == "ms" || unit == "msec") return MeasurementUnit::kMilliseconds;
  if (unit == "s" || unit == "sec") return MeasurementUnit::kSeconds;
  if (unit == "s/step" || unit == "sec/step" || unit == "seconds/step") {
    return MeasurementUnit::kSecondsPerStep;
  }
  // Per-device rates of whole steps ("tokens/s/GPU", "TFLOP/s/chip"): the rate's unit; the
  // e2e_train mapping reads the per-device qualifier from the cell.
  for (absl::string_view per : {"/gpu", "/chip", "/device"}) {
    if (absl::EndsWith(unit, per)) unit.resize(unit.size() - per.size());
  }
  if (unit == "tflop/s" || unit == "tflops" || unit == "tflops/s") {
    return MeasurementUnit::kTeraflopsPerSecond;
  }
  if (unit == "tokens/s" || unit == "tok/s" || unit == "tokens/sec") {
    return MeasurementUnit::kTokensPerSecond;
  }
  return std::nullopt;
}

bool IsRateUnit(MeasurementUnit unit) {
  switch (unit) {
    case MeasurementUnit::kTeraflopsPerSecond:
    case MeasurementUnit::kGigabytesPerSecond:
    case MeasurementUnit::kTokensPerSecond:
      return true;
    case MeasurementUnit::kMicroseconds:
    case MeasurementUnit::kMilliseconds:
    case MeasurementUnit::kSeconds:
    case MeasurementUnit::kSecondsPerStep:
      return false;
  }
  return false;
}

double ValueInUnit(double seconds, double work, MeasurementUnit unit) {
  switch (unit) {
    case MeasurementUnit::kTeraflopsPerSecond:
      return work / seconds / 1e12;
    case MeasurementUnit::kGigabytesPerSecond:
      return work / seconds / 1e9;
    case MeasurementUnit::kMicroseconds:
      return seconds * 1e6;
    case MeasurementUnit::kMilliseconds:
      return seconds * 1e3;
    case MeasurementUnit::kSeconds:
    case MeasurementUnit::kSecondsPerStep:
      return seconds;
    case MeasurementUnit::kTokensPerSecond:
      return work / seconds;
  }
  return seconds;
}

absl::StatusOr<MeasuredValue> ParseMeasuredValue(absl::string_view text) {
  MeasuredValue out;
  out.text = std::string(text);
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (absl::ConsumePrefix(&body, "~") || absl::ConsumePrefix(&body, kApproxSign)) {
    out.kind = MeasuredValue::Kind::kApproximate;
    body = absl::StripAsciiWhitespace(body);
  }
  auto error = [&]() {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a positive number, '~N' (approximate) or a range 'A-B'; got '", text, "'"));
  };
  if (std::optional<double> number = PositiveNumber(body)) {
    out.value = out.low = out.high = *number;
    return out;
  }
  if (out.kind == MeasuredValue::Kind::kApproximate) return error();
  size_t dash_size = 0;
  const size_t dash = RangeDash(body, &dash_size);
  if (dash == absl::string_view::npos) return error();
  const std::optional<double> low = PositiveNumber(body.substr(0, dash));
  const std::optional<double> high = PositiveNumber(body.substr(dash + dash_size));
  if (!low.has_value() || !high.has_value()) return error();
  if (*low > *high) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a range 'A-B' with A <= B; got '", text, "'"));
  }
  out.kind = MeasuredValue::Kind::kRange;
  out.low = *low;
  out.high = *high;
  out.value = (*low + *high) / 2;
  return out;
}

const CsvCell& Measurement::Field(absl::string_view name) const {
  static const CsvCell* const kEmpty = new CsvCell();
  auto it = fields.find(name);
  return it == fields.end() ? *kEmpty : it->second;
}

std::string Measurement::Where(absl::string_view name) const {
  auto it = fields.find(name);
  if (it == fields.end()) return absl::StrCat(filename, ":", line, ":1");
  return CsvLocation(filename, it->second);
}

absl::StatusOr<MeasurementFile> ReadMeasurements(absl::string_view text,
                                                 absl::string_view filename) {
  absl::StatusOr<CsvTable> table = ParseCsv(text, filename);
  if (!table.ok()) return table.status();
  std::vector<std::string> missing;
  for (absl::string_view column : kRequiredColumns) {
    if (table->ColumnIndex(column) < 0) missing.push_back(std::string(column));
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":1:1: expected the columns ", absl::StrJoin(kRequiredColumns, ", "),
                     " in the header; got no ", absl::StrJoin(missing, ", ")));
  }
  MeasurementFile file;
  file.filename = std::string(filename);
  std::map<std::string, int64_t> seen_ids;
  for (const CsvRecord& record : table->records) {
    Measurement m;
    m.line = record.line;
    m.filename = file.filename;
    for (size_t i = 0; i < record.cells.size(); ++i) {
      m.fields.emplace(table->header[i].text, record.cells[i]);
    }
    m.id = std::string(absl::StripAsciiWhitespace(m.Field("id").text));
    if (m.id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(m.Where("id"), ": expected a row id; got an empty cell"));
    }
    auto [it, inserted] = seen_ids.emplace(m.id, m.line);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(m.Where("id"),
                                                     ": expected a unique row id; got '", m.id,
                                                     "' again (first on line ", it->second, ")"));
    }
    m.category = std::string(absl::StripAsciiWhitespace(m.Field("category").text));
    if (m.category.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(m.Where("category"), ": expected a category; got an empty cell"));
    }
    absl::StatusOr<MeasuredValue> value = ParseMeasuredValue(m.Field("value").text);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(m.Where("value"), ": value: ", value.status().message()));
    }
    m.value = *std::move(value);
    m.unit = ParseMeasurementUnit(m.Field("unit").text);
    file.rows.push_back(std::move(m));
  }
  return file;
}

}  // namespace perfsim
