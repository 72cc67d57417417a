// Annotations in HLO text (annotation.h).
#include "sim/ir/annotation.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace perfsim {
namespace {

// Collects the first error protobuf's text parser reports.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int /*line*/, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (message_.empty()) message_ = absl::StrCat("column ", column + 1, ": ", message);
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
    AddError(line, column, message);
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// One `key="value"` entry of a frontend_attributes text: [begin, end) spans the entry, the value
// (escaped, without quotes) starts at value_begin.
struct Entry {
  size_t begin = 0, end = 0, value_begin = 0, value_end = 0;
  absl::string_view key;
};

size_t SkipSpace(absl::string_view s, size_t at) {
  while (at < s.size() && absl::ascii_isspace(static_cast<unsigned char>(s[at]))) ++at;
  return at;
}

// The entries of `{k="v",...}`; false when the text is not of that form.
bool SplitEntries(absl::string_view raw, std::vector<Entry>* entries) {
  size_t at = SkipSpace(raw, 0);
  if (at >= raw.size() || raw[at] != '{') return false;
  at = SkipSpace(raw, at + 1);
  while (at < raw.size() && raw[at] != '}') {
    Entry e{.begin = at};
    const size_t equal = raw.find('=', at);
    if (equal == absl::string_view::npos) return false;
    e.key = absl::StripAsciiWhitespace(raw.substr(at, equal - at));
    at = SkipSpace(raw, equal + 1);
    if (at >= raw.size() || raw[at] != '"') return false;
    e.value_begin = ++at;
    while (at < raw.size() && raw[at] != '"') at += raw[at] == '\\' ? 2 : 1;
    if (at >= raw.size()) return false;
    e.value_end = at;
    e.end = ++at;
    entries->push_back(e);
    at = SkipSpace(raw, at);
    if (at < raw.size() && raw[at] == ',') at = SkipSpace(raw, at + 1);
  }
  return at < raw.size();
}

}  // namespace

std::string EncodeAnnotation(const Annotation& annotation) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string out;
  printer.PrintToString(annotation, &out);
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

absl::StatusOr<Annotation> DecodeAnnotation(absl::string_view text) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  Annotation annotation;
  if (!parser.ParseFromString(std::string(text), &annotation)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a ", kAnnotationKey, " in text format (proto/annotation.proto); got \"", text,
        "\": ", errors.message().empty() ? "not parsable" : errors.message()));
  }
  return annotation;
}

absl::Status TakeAnnotation(std::string& raw, std::shared_ptr<const Annotation>* annotation,
                            size_t* error_offset) {
  *error_offset = 0;
  if (raw.find(kAnnotationKey) == std::string::npos) return absl::OkStatus();
  std::vector<Entry> entries;
  if (!SplitEntries(raw, &entries)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected frontend_attributes as {key=\"value\",...} around its ", kAnnotationKey,
        "; got ", raw));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.key != kAnnotationKey) continue;
    *error_offset = e.value_begin;
    std::string value;
    std::string error;
    if (!absl::CUnescape(raw.substr(e.value_begin, e.value_end - e.value_begin), &value,
                         &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected an escaped string as ", kAnnotationKey, "; got ", error));
    }
    absl::StatusOr<Annotation> decoded = DecodeAnnotation(value);
    if (!decoded.ok()) return decoded.status();
    *annotation = std::make_shared<const Annotation>(*std::move(decoded));
    // Remove the entry and the comma that joins it to a neighbour.
    size_t begin = e.begin, end = e.end;
    if (i + 1 < entries.size()) {
      end = entries[i + 1].begin;
    } else if (i > 0) {
      begin = entries[i - 1].end;
    }
    raw.erase(begin, end - begin);
    if (entries.size() == 1) raw.clear();
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

std::string FrontendAttributesText(const InstructionAttributes& attributes) {
  const std::string& kept = attributes.frontend_attributes;
  if (attributes.annotation == nullptr) return kept;
  const std::string entry =
      absl::StrCat(kAnnotationKey, "=\"", absl::CEscape(EncodeAnnotation(*attributes.annotation)),
                   "\"");
  const size_t close = kept.rfind('}');
  if (kept.size() < 2 || close == std::string::npos) return absl::StrCat("{", entry, "}");
  const bool empty = kept.find_first_not_of(" \t\n{", 0) == close;
  return absl::StrCat(kept.substr(0, close), empty ? "" : ",", entry, kept.substr(close));
}

}  // namespace perfsim
