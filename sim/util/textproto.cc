#include "sim/util/textproto.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "sim/util/file_io.h"

namespace perfsim {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::TextFormat;

// A syntax problem as protobuf reports it: 0-based line and column.
struct SyntaxError {
  int line;
  int column;
  std::string message;
};

class CollectingErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back({line, column, message});
  }
  // Warnings (deprecated fields and the like) are not problems of the config.
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {}

  const std::vector<SyntaxError>& errors() const { return errors_; }

 private:
  std::vector<SyntaxError> errors_;
};

std::string FormatLocation(absl::string_view filename, int line0, int column0) {
  return absl::StrCat(filename, ":", line0 + 1, ":", column0 + 1);
}

// Byte offset where 0-based `line` starts, or text.size() when the text has fewer lines.
size_t LineStart(const std::string& text, int line) {
  size_t offset = 0;
  for (int i = 0; i < line; ++i) {
    size_t newline = text.find('\n', offset);
    if (newline == std::string::npos) return text.size();
    offset = newline + 1;
  }
  return offset;
}

// Overwrites the field statement that starts on 0-based `line` with spaces so that parsing can
// resume after a syntax error there. The statement runs to the end of the line, or, when the
// line opens a message (`name {`), to the matching close. Newlines are kept so later line
// numbers stay right. A close brace that is unmatched within the statement belongs to the
// enclosing message and is kept, unless `blank_unmatched_closers` (used when blanking nothing
// else made progress, i.e. the stray brace is itself the error). Returns whether anything
// changed.
bool BlankStatement(std::string& text, int line, bool blank_unmatched_closers) {
  size_t i = LineStart(text, line);
  bool changed = false;
  int depth = 0;
  char quote = 0;
  auto blank = [&](size_t at) {
    if (text[at] != ' ') {
      text[at] = ' ';
      changed = true;
    }
  };
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      quote = 0;  // Text-format strings never span lines.
      if (depth == 0) break;
      continue;
    }
    if (quote != 0) {
      if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
        blank(i++);  // The escaped character cannot end the string.
      } else if (c == quote) {
        quote = 0;
      }
      blank(i);
      continue;
    }
    if (c == '#') {  // A comment runs to the end of the line.
      while (i < text.size() && text[i] != '\n') blank(i++);
      --i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{' || c == '<') {
      ++depth;
    } else if (c == '}' || c == '>') {
      if (depth > 0) {
        --depth;
      } else if (!blank_unmatched_closers) {
        continue;
      }
    }
    blank(i);
  }
  return changed;
}

// True when byte `at` of `text` lies inside a '#' comment (outside string literals).
bool InComment(const std::string& text, size_t at) {
  const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
  char quote = 0;
  for (size_t i = line_start == std::string::npos ? 0 : line_start + 1; i < at; ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return true;
    }
  }
  return false;
}

bool IsIdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.'; }

// protobuf reports some errors after it has consumed the offending name, i.e. at the position of
// the NEXT token, which may be on a later line ("Unknown enumeration value of "X"", "has no field
// named "X""). Moves such an error to the last occurrence of X, as a whole token outside
// comments, before the reported position, so that the location and the recovery point at X.
void RelocateToNamedToken(const std::string& text, SyntaxError& error) {
  static constexpr absl::string_view kPatterns[] = {
      "Unknown enumeration value of \"", "has no field named \"", "Non-repeated field \""};
  absl::string_view name;
  for (absl::string_view pattern : kPatterns) {
    const size_t at = absl::string_view(error.message).find(pattern);
    if (at == std::string::npos) continue;
    absl::string_view rest = absl::string_view(error.message).substr(at + pattern.size());
    name = rest.substr(0, rest.find('"'));
    break;
  }
  if (name.empty() || error.line < 0) return;
  const size_t end = std::min(text.size(), LineStart(text, error.line) + error.column);
  if (end == 0) return;
  // Bounded, so that a line full of commented-out copies of X cannot make this quadratic.
  int candidates = 0;
  for (size_t at = text.rfind(name.data(), end - 1, name.size());
       at != std::string::npos && ++candidates <= 64;
       at = at == 0 ? std::string::npos : text.rfind(name.data(), at - 1, name.size())) {
    const bool starts_token = at == 0 || !IsIdentifierChar(text[at - 1]);
    const size_t after = at + name.size();
    const bool ends_token = after >= text.size() || !IsIdentifierChar(text[after]);
    if (!starts_token || !ends_token || InComment(text, at)) continue;
    const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    error.line = static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
    error.column = static_cast<int>(at - (line_start == std::string::npos ? 0 : line_start + 1));
    return;
  }
}

}  // namespace

TextProtoSource::TextProtoSource(std::string filename) : filename_(std::move(filename)) {}

std::string TextProtoSource::Where(absl::string_view field_path) const {
  std::string best = filename_;
  if (tree_ == nullptr || descriptor_ == nullptr) return best;
  const TextFormat::ParseInfoTree* tree = tree_.get();
  const Descriptor* descriptor = descriptor_;
  std::vector<absl::string_view> segments = absl::StrSplit(field_path, '.');
  for (size_t s = 0; s < segments.size(); ++s) {
    absl::string_view segment = segments[s];
    int index = 0;
    if (size_t bracket = segment.find('['); bracket != absl::string_view::npos) {
      absl::string_view digits = segment.substr(bracket + 1);
      if (!absl::ConsumeSuffix(&digits, "]") || !absl::SimpleAtoi(digits, &index) || index < 0) {
        break;
      }
      segment = segment.substr(0, bracket);
    }
    const FieldDescriptor* field = descriptor->FindFieldByName(std::string(segment));
    if (field == nullptr) break;
    if (!field->is_repeated()) index = -1;  // ParseInfoTree's convention for singular fields.
    TextFormat::ParseLocation location = tree->GetLocation(field, index);
    if (location.line < 0) break;
    best = FormatLocation(filename_, location.line, location.column);
    if (field->message_type() == nullptr) break;
    tree = tree->GetTreeForNested(field, index);
    if (tree == nullptr) break;
    descriptor = field->message_type();
  }
  return best;
}

absl::StatusOr<TextProtoSource> ParseTextProto(absl::string_view text, absl::string_view filename,
                                               google::protobuf::Message* out) {
  // protobuf's parser stops at the first error. To report every problem, blank out the
  // statement that failed and parse again, until the text parses or no progress is possible.
  std::string work(text);
  std::vector<SyntaxError> errors;
  bool truncated = false;
  for (int attempt = 0;; ++attempt) {
    out->Clear();
    auto tree = std::make_shared<TextFormat::ParseInfoTree>();
    CollectingErrorCollector collector;
    TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    parser.WriteLocationsTo(tree.get());
    const bool parsed = parser.ParseFromString(work, out);
    if (parsed && collector.errors().empty()) {
      if (!errors.empty()) break;
      TextProtoSource source{std::string(filename)};
      source.descriptor_ = out->GetDescriptor();
      source.tree_ = std::move(tree);
      return source;
    }
    if (collector.errors().empty()) {
      errors.push_back({-1, -1, "could not parse the text format"});
      break;
    }
    SyntaxError first = collector.errors().front();
    RelocateToNamedToken(work, first);
    errors.push_back(first);
    if (static_cast<int>(errors.size()) >= kMaxTextProtoErrors) {
      truncated = true;
      break;
    }
    if (first.line < 0) break;
    if (!BlankStatement(work, first.line, /*blank_unmatched_closers=*/false) &&
        !BlankStatement(work, first.line, /*blank_unmatched_closers=*/true)) {
      break;
    }
  }
  std::vector<std::string> lines;
  for (const SyntaxError& error : errors) {
    lines.push_back(error.line < 0
                        ? absl::StrCat(filename, ": ", error.message)
                        : absl::StrCat(FormatLocation(filename, error.line, error.column), ": ",
                                       error.message));
  }
  if (truncated) {
    lines.push_back(
        absl::StrCat(filename, ": too many errors; stopped after ", kMaxTextProtoErrors));
  }
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

void ConfigProblems::Add(absl::string_view field_path, absl::string_view message) {
  AddAt(field_path, field_path, message);
}

void ConfigProblems::AddAt(absl::string_view location_path, absl::string_view field_path,
                           absl::string_view message) {
  const std::string where = source_ == nullptr ? "" : source_->Where(location_path);
  if (where.empty()) {
    problems_.push_back(absl::StrCat(field_path, ": ", message));
  } else {
    problems_.push_back(absl::StrCat(where, ": ", field_path, ": ", message));
  }
}

absl::Status ConfigProblems::ToStatus() const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
}

const EmbeddedTextProto* FindEmbeddedTextProto(absl::Span<const EmbeddedTextProto> files,
                                               absl::string_view name) {
  for (const EmbeddedTextProto& file : files) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

bool LooksLikeTextProtoPath(absl::string_view name_or_path) {
  return absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".textproto");
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  // Descriptions are a few kB; 16 MiB refuses a wrong path (a dump, /dev/zero) at once.
  return ReadRegularFile(path, int64_t{16} << 20);
}

}  // namespace perfsim
