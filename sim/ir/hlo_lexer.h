// Hand-written lexer for HLO text, over an absl::string_view (no copies, no regex).
//
//   HloLexer lexer("ROOT %add.1 = f32[4]{0} add(x, y), metadata={op_name=\"a\"}");
//   Token t = lexer.Next();   // kIdentifier "ROOT" at 1:1
//   t = lexer.Next();         // kName "add.1" (text without the '%') at 1:6
//
// Whitespace, `// ...` and `/* ... */` comments (e.g. `/*index=5*/`) are skipped. Tokens:
//   identifiers   [A-Za-z_][A-Za-z0-9_.-]*   (opcodes, keywords, bare names, element types);
//                 a '-' directly followed by '>' ends the identifier
//   names         %[A-Za-z0-9_.-]+            (text excludes the '%')
//   numbers       -?digits[.digits][e[+-]digits], and -inf / -nan
//   dim lists     1x2x3, 0_0x1_1_0, -1_-1     (window sizes and padding)
//   strings       "..." with backslash escapes (text includes the quotes)
//   punctuation   { } ( ) [ ] , = : * ? # ... <= ->
// A byte that starts no token gives kError with a description; so do an unterminated string or
// comment.
//
// Some attribute values are not worth tokenising (metadata, sharding, backend_config JSON, any
// attribute perfsim does not model): ScanRawValue returns one verbatim, bracket-balanced.
#ifndef PERFSIM_SIM_IR_HLO_LEXER_H_
#define PERFSIM_SIM_IR_HLO_LEXER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace perfsim {

enum class TokenKind {
  kEof,
  kError,
  kIdentifier,
  kName,
  kNumber,
  kDimList,
  kString,
  kLbrace,
  kRbrace,
  kLparen,
  kRparen,
  kLsquare,
  kRsquare,
  kComma,
  kEqual,
  kColon,
  kStar,
  kQuestion,
  kHash,
  kEllipsis,
  kLeq,
  kArrow,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  // Points into the lexed text; for kName it excludes the '%'; for kError it is the offending
  // byte(s).
  absl::string_view text;
  int line = 1;
  int column = 1;
  // For kError: what was wrong ("an unterminated string", ...).
  absl::string_view error;
};

// A raw attribute value (see ScanRawValue).
struct RawValue {
  bool ok = false;
  std::string text;
  int line = 1;
  int column = 1;
  // When !ok: "expected X; got Y" without location, and where the problem is.
  std::string error;
  int error_line = 1;
  int error_column = 1;
};

class HloLexer {
 public:
  // Bound on bracket nesting inside raw values.
  static constexpr int kMaxRawDepth = 256;

  explicit HloLexer(absl::string_view text) : text_(text) {}

  // The next token. After kEof it keeps returning kEof.
  Token Next();

  // Scans one attribute value starting after the last token returned (leading whitespace and
  // comments skipped): a run of characters up to whitespace, ',' or an unmatched closing bracket
  // at bracket depth 0, where (), {}, [], strings and /* comments */ nest. Inside brackets, a
  // whitespace run that holds a line break becomes one space and `//` comments are dropped, so
  // the value prints on one line; everything else is kept verbatim. Examples of values: `{op_name="a" source_line=3}`,
  // `"tm=512"`, `dot_bf16_bf16_f32`, `{devices=[4,1]<=[4]}`, `b01f_01io->b01f`. An empty value
  // is an error.
  RawValue ScanRawValue();

  // Cursor state, for a bounded lookahead.
  struct State {
    size_t position = 0;
    int line = 1;
    size_t line_start = 0;
  };
  State state() const { return {position_, line_, line_start_}; }
  void set_state(const State& state) {
    position_ = state.position;
    line_ = state.line;
    line_start_ = state.line_start;
  }

  // The byte right after the last token (no whitespace skipped), or '\0' at the end.
  char PeekChar() const { return position_ < text_.size() ? text_[position_] : '\0'; }

  // Offset of `token` in the text (the token's text must point into it).
  size_t OffsetOf(absl::string_view token_text) const {
    return static_cast<size_t>(token_text.data() - text_.data());
  }
  absl::string_view text() const { return text_; }
  // Offset just past the last token returned.
  size_t position() const { return position_; }
  // 1-based line and column of a byte offset.
  void LocationOf(size_t offset, int* line, int* column) const;

 private:
  // Skips whitespace and comments; false (with *error set) on an unterminated comment.
  bool SkipTrivia(absl::string_view* error, size_t* error_start);
  Token Make(TokenKind kind, size_t start, size_t end) const;
  Token LexNumber(size_t start);
  Token LexString(size_t start);
  void AdvanceLine(size_t newline_position) {
    ++line_;
    line_start_ = newline_position + 1;
  }

  absl::string_view text_;
  size_t position_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

// "'foo'" for most tokens, "end of file" for kEof, the error description for kError. Long texts
// are cut and non-printable bytes escaped, so messages stay readable on binary input.
std::string DescribeToken(const Token& token);

// The string a kString token denotes: quotes removed, \n \t \" \\ and \xNN decoded.
std::string UnescapeString(absl::string_view quoted);

// `value` quoted and escaped so that UnescapeString gives it back.
std::string EscapeString(absl::string_view value);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_HLO_LEXER_H_
