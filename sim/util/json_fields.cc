// Top-level JSON field reader (json_fields.h): walks the members of the outer object and skips
// each value by its syntax, so keys inside nested objects or inside strings never match.
#include "sim/util/json_fields.h"

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace perfsim {
namespace {

// Undoes the quoting of the string form backend_config="{\"a\":1}". Escapes other than \" and
// \\ keep the escaped character; none of them can change which member a key belongs to.
std::string UnquoteIfString(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::string(text);
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '\\' && i + 2 < text.size()) ++i;
    out.push_back(text[i]);
  }
  return out;
}

class Scanner {
 public:
  explicit Scanner(absl::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  // Reads a JSON string at the cursor into `out` (escapes resolved to the escaped character).
  bool ReadString(std::string* out) {
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out->push_back(text_[pos_++]);
    }
    if (pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  // Skips one JSON value and returns its text; false on malformed or truncated input.
  bool SkipValue(absl::string_view* value) {
    SkipSpace();
    const size_t start = pos_;
    int depth = 0;
    bool in_string = false;
    for (; pos_ < text_.size(); ++pos_) {
      const char c = text_[pos_];
      if (in_string) {
        if (c == '\\') {
          ++pos_;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) {
            ++pos_;
            break;
          }
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;  // The end of the enclosing object.
        if (--depth == 0) {
          ++pos_;
          break;
        }
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    if (in_string || depth != 0 || pos_ > text_.size()) return false;
    *value = absl::StripAsciiWhitespace(text_.substr(start, pos_ - start));
    return !value->empty();
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
};

std::optional<int64_t> ParseIntValue(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  int64_t out = 0;
  if (!absl::SimpleAtoi(value, &out)) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> JsonTopLevelValue(absl::string_view json, absl::string_view key) {
  const std::string text = UnquoteIfString(json);
  Scanner scanner(text);
  if (!scanner.Consume('{')) return std::nullopt;
  if (scanner.Consume('}')) return std::nullopt;
  while (true) {
    std::string name;
    absl::string_view value;
    if (!scanner.ReadString(&name) || !scanner.Consume(':') || !scanner.SkipValue(&value)) {
      return std::nullopt;
    }
    if (name == key) return std::string(value);
    if (!scanner.Consume(',')) return std::nullopt;
  }
}

std::optional<int64_t> JsonTopLevelInt(absl::string_view json, absl::string_view key) {
  const std::optional<std::string> value = JsonTopLevelValue(json, key);
  if (!value.has_value()) return std::nullopt;
  return ParseIntValue(*value);
}

std::optional<bool> JsonTopLevelBool(absl::string_view json, absl::string_view key) {
  const std::optional<std::string> value = JsonTopLevelValue(json, key);
  if (!value.has_value()) return std::nullopt;
  if (*value == "true") return true;
  if (*value == "false") return false;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> JsonTopLevelIntArray(absl::string_view json,
                                                         absl::string_view key) {
  const std::optional<std::string> value = JsonTopLevelValue(json, key);
  if (!value.has_value() || value->size() < 2 || value->front() != '[' || value->back() != ']') {
    return std::nullopt;
  }
  std::vector<int64_t> out;
  const absl::string_view inner = absl::string_view(*value).substr(1, value->size() - 2);
  if (absl::StripAsciiWhitespace(inner).empty()) return out;
  for (absl::string_view part : absl::StrSplit(inner, ',')) {
    const std::optional<int64_t> element = ParseIntValue(part);
    if (!element.has_value()) return std::nullopt;
    out.push_back(*element);
  }
  return out;
}

}  // namespace perfsim
