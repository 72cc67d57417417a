#include "sim/ir/hlo_lexer.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsNameChar(char c) { return IsLetter(c) || IsDigit(c) || c == '_' || c == '.' || c == '-'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && !IsSpace(c)) || u == 0x7f;
}

constexpr absl::string_view kUnexpectedCharacter = "an unexpected character";

}  // namespace

bool HloLexer::SkipTrivia(absl::string_view* error, size_t* error_start) {
  const size_t n = text_.size();
  while (position_ < n) {
    const char c = text_[position_];
    if (c == '\n') {
      AdvanceLine(position_);
      ++position_;
    } else if (IsSpace(c)) {
      ++position_;
    } else if (c == '/' && position_ + 1 < n && text_[position_ + 1] == '/') {
      while (position_ < n && text_[position_] != '\n') ++position_;
    } else if (c == '/' && position_ + 1 < n && text_[position_ + 1] == '*') {
      const size_t start = position_;
      position_ += 2;
      bool closed = false;
      while (position_ < n) {
        if (text_[position_] == '*' && position_ + 1 < n && text_[position_ + 1] == '/') {
          position_ += 2;
          closed = true;
          break;
        }
        if (text_[position_] == '\n') AdvanceLine(position_);
        ++position_;
      }
      if (!closed) {
        *error = "an unterminated /* comment";
        *error_start = start;
        return false;
      }
    } else {
      return true;
    }
  }
  return true;
}

Token HloLexer::Make(TokenKind kind, size_t start, size_t end) const {
  Token token;
  token.kind = kind;
  token.text = text_.substr(start, end - start);
  token.line = line_;
  token.column = static_cast<int>(start - line_start_) + 1;
  return token;
}

Token HloLexer::Next() {
  absl::string_view error;
  size_t error_start = 0;
  if (!SkipTrivia(&error, &error_start)) {
    Token token;
    token.kind = TokenKind::kError;
    token.text = text_.substr(error_start, 2);
    token.error = error;
    LocationOf(error_start, &token.line, &token.column);
    position_ = text_.size();
    return token;
  }
  const size_t n = text_.size();
  const size_t start = position_;
  if (start >= n) return Make(TokenKind::kEof, n, n);
  const char c = text_[start];
  auto single = [&](TokenKind kind) {
    ++position_;
    return Make(kind, start, start + 1);
  };
  auto fail = [&](absl::string_view what, size_t length) {
    Token token = Make(TokenKind::kError, start, start + length);
    token.error = what;
    position_ = n;
    return token;
  };
  switch (c) {
    case '{':
      return single(TokenKind::kLbrace);
    case '}':
      return single(TokenKind::kRbrace);
    case '(':
      return single(TokenKind::kLparen);
    case ')':
      return single(TokenKind::kRparen);
    case '[':
      return single(TokenKind::kLsquare);
    case ']':
      return single(TokenKind::kRsquare);
    case ',':
      return single(TokenKind::kComma);
    case '=':
      return single(TokenKind::kEqual);
    case ':':
      return single(TokenKind::kColon);
    case '*':
      return single(TokenKind::kStar);
    case '?':
      return single(TokenKind::kQuestion);
    case '#':
      return single(TokenKind::kHash);
    case '"':
      return LexString(start);
    case '<':
      if (start + 1 < n && text_[start + 1] == '=') {
        position_ += 2;
        return Make(TokenKind::kLeq, start, start + 2);
      }
      return fail(kUnexpectedCharacter, 1);
    case '.':
      if (text_.substr(start, 3) == "...") {
        position_ += 3;
        return Make(TokenKind::kEllipsis, start, start + 3);
      }
      return fail(kUnexpectedCharacter, 1);
    case '-': {
      if (start + 1 < n && text_[start + 1] == '>') {
        position_ += 2;
        return Make(TokenKind::kArrow, start, start + 2);
      }
      if (start + 1 < n && IsDigit(text_[start + 1])) return LexNumber(start);
      const absl::string_view word = text_.substr(start, 4);
      if ((word == "-inf" || word == "-nan") && (start + 4 >= n || !IsNameChar(text_[start + 4]))) {
        position_ += 4;
        return Make(TokenKind::kNumber, start, start + 4);
      }
      return fail(kUnexpectedCharacter, 1);
    }
    case '%': {
      size_t end = start + 1;
      while (end < n && IsNameChar(text_[end]) &&
             !(text_[end] == '-' && end + 1 < n && text_[end + 1] == '>')) {
        ++end;
      }
      if (end == start + 1) return fail("a '%' without a name", 1);
      position_ = end;
      Token token = Make(TokenKind::kName, start, end);
      token.text = text_.substr(start + 1, end - start - 1);
      return token;
    }
    default:
      break;
  }
  if (IsDigit(c)) return LexNumber(start);
  if (IsLetter(c) || c == '_') {
    size_t end = start + 1;
    while (end < n && IsNameChar(text_[end]) &&
           !(text_[end] == '-' && end + 1 < n && text_[end + 1] == '>')) {
      ++end;
    }
    position_ = end;
    return Make(TokenKind::kIdentifier, start, end);
  }
  return fail(kUnexpectedCharacter, 1);
}

Token HloLexer::LexNumber(size_t start) {
  const size_t n = text_.size();
  size_t p = start;
  if (text_[p] == '-') ++p;
  while (p < n && IsDigit(text_[p])) ++p;
  bool plain_integer = true;
  if (p < n && text_[p] == '.' && !(p + 1 < n && text_[p + 1] == '.')) {
    plain_integer = false;
    ++p;
    while (p < n && IsDigit(text_[p])) ++p;
  }
  if (p < n && (text_[p] == 'e' || text_[p] == 'E')) {
    size_t q = p + 1;
    if (q < n && (text_[q] == '+' || text_[q] == '-')) ++q;
    if (q < n && IsDigit(text_[q])) {
      plain_integer = false;
      p = q;
      while (p < n && IsDigit(text_[p])) ++p;
    }
  }
  TokenKind kind = TokenKind::kNumber;
  // `1x2x3` and `0_0x1_1_0`: integers joined by 'x' and '_' (each may be negative).
  auto starts_integer = [&](size_t q) {
    return q < n && (IsDigit(text_[q]) || (text_[q] == '-' && q + 1 < n && IsDigit(text_[q + 1])));
  };
  if (plain_integer && p < n && (text_[p] == 'x' || text_[p] == '_') && starts_integer(p + 1)) {
    kind = TokenKind::kDimList;
    while (p < n && (text_[p] == 'x' || text_[p] == '_') && starts_integer(p + 1)) {
      ++p;
      if (text_[p] == '-') ++p;
      while (p < n && IsDigit(text_[p])) ++p;
    }
  }
  if (p < n && (IsLetter(text_[p]) || text_[p] == '_')) {
    // A number running into a word ("12abc") is no token we know.
    size_t end = p;
    while (end < n && IsNameChar(text_[end])) ++end;
    Token token = Make(TokenKind::kError, start, end);
    token.error = "a malformed number";
    position_ = n;
    return token;
  }
  position_ = p;
  return Make(kind, start, p);
}

Token HloLexer::LexString(size_t start) {
  const size_t n = text_.size();
  const int line = line_;
  const size_t line_start = line_start_;
  size_t p = start + 1;
  while (p < n && text_[p] != '"') {
    if (text_[p] == '\\' && p + 1 < n) ++p;
    if (text_[p] == '\n') AdvanceLine(p);
    ++p;
  }
  Token token;
  token.line = line;
  token.column = static_cast<int>(start - line_start) + 1;
  if (p >= n) {
    token.kind = TokenKind::kError;
    token.text = text_.substr(start, 1);
    token.error = "an unterminated string";
    position_ = n;
    return token;
  }
  token.kind = TokenKind::kString;
  token.text = text_.substr(start, p + 1 - start);
  position_ = p + 1;
  return token;
}

RawValue HloLexer::ScanRawValue() {
  RawValue result;
  absl::string_view trivia_error;
  size_t trivia_error_start = 0;
  auto fail = [&](std::string message, size_t offset) {
    result.ok = false;
    result.error = std::move(message);
    LocationOf(offset, &result.error_line, &result.error_column);
    position_ = text_.size();
    return result;
  };
  if (!SkipTrivia(&trivia_error, &trivia_error_start)) {
    return fail(absl::StrCat("expected an attribute value; got ", trivia_error),
                trivia_error_start);
  }
  result.line = line_;
  result.column = static_cast<int>(position_ - line_start_) + 1;
  const size_t n = text_.size();
  std::string closers;  // expected closing brackets, innermost last
  std::string& out = result.text;
  size_t p = position_;
  while (true) {
    if (p >= n) {
      if (closers.empty()) break;
      return fail(absl::StrCat("expected '", std::string(1, closers.back()),
                               "' to close a bracket; got end of file"),
                  p);
    }
    const char c = text_[p];
    if (closers.empty()) {
      if (IsSpace(c) || c == ',' || c == ')' || c == '}' || c == ']') break;
      if (c == '/' && p + 1 < n && (text_[p + 1] == '/' || text_[p + 1] == '*')) break;
    }
    if (c == '"') {
      const size_t string_start = p;
      out.push_back(c);
      ++p;
      while (p < n && text_[p] != '"') {
        if (text_[p] == '\\' && p + 1 < n) out.push_back(text_[p++]);
        if (text_[p] == '\n') AdvanceLine(p);
        out.push_back(text_[p++]);
      }
      if (p >= n) {
        return fail("expected a closing '\"'; got end of file", string_start);
      }
      out.push_back('"');
      ++p;
      continue;
    }
    if (c == '/' && p + 1 < n && text_[p + 1] == '*') {
      // A block comment inside brackets (depth 0 ended the value above) is kept verbatim; the
      // brackets and quotes in it do not count.
      const size_t comment_start = p;
      const size_t end = text_.find("*/", p + 2);
      if (end == absl::string_view::npos) {
        return fail("expected '*/' to close a comment; got end of file", comment_start);
      }
      for (size_t i = p; i < end + 2; ++i) {
        if (text_[i] == '\n') AdvanceLine(i);
      }
      out.append(text_.data() + p, end + 2 - p);
      p = end + 2;
      continue;
    }
    if (c == '(' || c == '{' || c == '[') {
      if (static_cast<int>(closers.size()) >= kMaxRawDepth) {
        return fail(
            absl::StrCat("expected bracket nesting at most ", kMaxRawDepth, " deep; got deeper"),
            p);
      }
      closers.push_back(c == '(' ? ')' : c == '{' ? '}' : ']');
      out.push_back(c);
      ++p;
      continue;
    }
    if (c == ')' || c == '}' || c == ']') {
      if (c != closers.back()) {
        return fail(absl::StrCat("expected '", std::string(1, closers.back()), "'; got '",
                                 std::string(1, c), "'"),
                    p);
      }
      closers.pop_back();
      out.push_back(c);
      ++p;
      continue;
    }
    if (IsSpace(c) || (c == '/' && p + 1 < n && text_[p + 1] == '/')) {
      // Inside brackets: a whitespace run (with `//` comments) that breaks a line becomes one
      // space; one that does not is kept.
      const size_t run_start = p;
      bool line_break = false;
      while (p < n) {
        if (text_[p] == '\n') {
          line_break = true;
          AdvanceLine(p);
          ++p;
        } else if (IsSpace(text_[p])) {
          ++p;
        } else if (text_[p] == '/' && p + 1 < n && text_[p + 1] == '/') {
          while (p < n && text_[p] != '\n') ++p;
        } else {
          break;
        }
      }
      if (line_break) {
        out.push_back(' ');
      } else {
        out.append(text_.data() + run_start, p - run_start);
      }
      continue;
    }
    if (IsControl(c)) {
      return fail(absl::StrCat("expected a printable character; got '",
                               absl::CHexEscape(absl::string_view(&c, 1)), "'"),
                  p);
    }
    if (c == '\n') AdvanceLine(p);
    out.push_back(c);
    ++p;
  }
  position_ = p;
  if (out.empty()) {
    const absl::string_view got = p < n ? text_.substr(p, 1) : absl::string_view();
    return fail(absl::StrCat("expected an attribute value; got ",
                             got.empty() ? "end of file" : absl::StrCat("'", got, "'")),
                p);
  }
  result.ok = true;
  return result;
}

void HloLexer::LocationOf(size_t offset, int* line, int* column) const {
  // Only called for errors and raw values, so a scan from the start is fine.
  int l = 1;
  size_t line_start = 0;
  const size_t end = offset < text_.size() ? offset : text_.size();
  for (size_t i = 0; i < end; ++i) {
    if (text_[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  *line = l;
  *column = static_cast<int>(offset - line_start) + 1;
}

std::string DescribeToken(const Token& token) {
  constexpr size_t kMaxShown = 40;
  auto shown = [&](absl::string_view text) {
    const bool cut = text.size() > kMaxShown;
    return absl::StrCat("'", absl::CHexEscape(text.substr(0, kMaxShown)), cut ? "..." : "", "'");
  };
  switch (token.kind) {
    case TokenKind::kEof:
      return "end of file";
    case TokenKind::kError:
      return absl::StrCat(token.error, " ", shown(token.text));
    case TokenKind::kName:
      return shown(absl::StrCat("%", token.text));
    case TokenKind::kIdentifier:
    case TokenKind::kNumber:
    case TokenKind::kDimList:
    case TokenKind::kString:
    case TokenKind::kLbrace:
    case TokenKind::kRbrace:
    case TokenKind::kLparen:
    case TokenKind::kRparen:
    case TokenKind::kLsquare:
    case TokenKind::kRsquare:
    case TokenKind::kComma:
    case TokenKind::kEqual:
    case TokenKind::kColon:
    case TokenKind::kStar:
    case TokenKind::kQuestion:
    case TokenKind::kHash:
    case TokenKind::kEllipsis:
    case TokenKind::kLeq:
    case TokenKind::kArrow:
      return shown(token.text);
  }
  return shown(token.text);
}

std::string UnescapeString(absl::string_view quoted) {
  if (quoted.size() < 2) return std::string(quoted);
  const absl::string_view inner = quoted.substr(1, quoted.size() - 2);
  std::string out;
  if (!absl::CUnescape(inner, &out)) return std::string(inner);
  return out;
}

std::string EscapeString(absl::string_view value) {
  return absl::StrCat("\"", absl::CEscape(value), "\"");
}

}  // namespace perfsim
