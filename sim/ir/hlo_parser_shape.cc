// Shapes and layouts of HLO text (hlo_parser_internal.h): array, tuple, token and buffer
// shapes with dynamic and unbounded dimensions, and layouts with tiles, element sizes, memory
// spaces and attributes kept verbatim. Split from hlo_parser.cc, which parses the module,
// computation and instruction structure around them.
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {

bool HloParser::AtShapeStart() {
  if (At(TokenKind::kLparen)) return true;
  if (AtBufferShapeStart()) return true;
  // Element types are tokens of their own, as in XLA's lexer: `s32 [4]` is `s32[4]`.
  return At(TokenKind::kIdentifier) && ParsePrimitiveType(tok_.text).has_value() &&
         PeekToken().kind == TokenKind::kLsquare;
}

absl::Status HloParser::ValidateShapeAt(const Shape& shape, SourceLocation location) const {
  const absl::Status status = ValidateShape(shape);
  if (status.ok()) return status;
  return ErrorAt(location, status.message());
}

// `b(f32[16])`: `b` is a buffer only right before `(` (an instruction may be named `b`).
bool HloParser::AtBufferShapeStart() {
  return At(TokenKind::kIdentifier) && tok_.text == "b" && PeekToken().kind == TokenKind::kLparen;
}

absl::StatusOr<Shape> HloParser::ParseShape() {
  PERFSIM_RETURN_IF_ERROR(EnterNesting());
  if (AtBufferShapeStart()) {
    Advance();
    Advance();
    const SourceLocation location = LocationOf(tok_);
    PERFSIM_ASSIGN_OR_RETURN(Shape array, ParseShape());
    if (!array.IsArray()) {
      return ErrorAt(location,
                     absl::StrCat("expected an array shape in b(...); got ", array.ToString()));
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "')' after a buffer's array shape"));
    LeaveNesting();
    return Shape::Buffer(std::move(array));
  }
  if (At(TokenKind::kLparen)) {
    Advance();
    std::vector<Shape> elements;
    if (!At(TokenKind::kRparen)) {
      while (true) {
        PERFSIM_ASSIGN_OR_RETURN(Shape element, ParseShape());
        elements.push_back(std::move(element));
        if (!At(TokenKind::kComma)) break;
        Advance();
      }
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "',' or ')' in a tuple shape"));
    LeaveNesting();
    return Shape::Tuple(std::move(elements));
  }
  if (!At(TokenKind::kIdentifier)) return Expected("a shape");
  const std::optional<PrimitiveType> type = ParsePrimitiveType(tok_.text);
  if (!type.has_value()) return Expected("a shape");
  Advance();
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLsquare, "'[' after the element type"));
  std::vector<int64_t> dimensions;
  std::vector<bool> dynamic;
  if (!At(TokenKind::kRsquare)) {
    while (true) {
      bool is_dynamic = false;
      int64_t size = 0;
      if (At(TokenKind::kQuestion)) {
        Advance();
        is_dynamic = true;
        size = Shape::kUnboundedSize;
      } else {
        if (At(TokenKind::kLeq)) {
          Advance();
          is_dynamic = true;
        }
        const Token size_token = tok_;
        PERFSIM_ASSIGN_OR_RETURN(size, ParseInt64("a dimension size"));
        if (size < 0) {
          return ErrorAt(LocationOf(size_token),
                         absl::StrCat("expected a non-negative dimension size; got ", size));
        }
      }
      dimensions.push_back(size);
      dynamic.push_back(is_dynamic);
      if (!At(TokenKind::kComma)) break;
      Advance();
    }
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRsquare, "',' or ']' in the dimensions"));
  Shape shape;
  if (*type == PrimitiveType::kToken) {
    shape = Shape::Token();
  } else {
    shape = Shape::Array(*type, dimensions);
    for (size_t i = 0; i < dynamic.size(); ++i) {
      if (dynamic[i]) shape.set_dynamic_dimension(static_cast<int64_t>(i), true);
    }
  }
  if (LayoutFollows()) PERFSIM_RETURN_IF_ERROR(ParseLayout(&shape));
  LeaveNesting();
  return shape;
}

bool HloParser::LayoutFollows() {
  if (!At(TokenKind::kLbrace)) return false;
  // `{1,0}`, `{:T(128)}` or `{}`; a computation body after a signature's result shape starts
  // with an instruction name instead.
  const TokenKind next = PeekToken().kind;
  return next == TokenKind::kNumber || next == TokenKind::kColon || next == TokenKind::kRbrace;
}

absl::Status HloParser::ParseLayout(Shape* shape) {
  Advance();  // {
  Layout layout;
  while (At(TokenKind::kNumber)) {
    PERFSIM_ASSIGN_OR_RETURN(int64_t dimension, ParseInt64("a layout dimension"));
    layout.minor_to_major.push_back(dimension);
    if (!At(TokenKind::kComma)) break;
    Advance();
  }
  if (At(TokenKind::kColon)) {
    Advance();
    while (!At(TokenKind::kRbrace)) {
      if (AtKeyword("T")) {
        Advance();
        if (!At(TokenKind::kLparen)) return Expected("'(' to start a tile");
        while (At(TokenKind::kLparen)) {
          Advance();
          Tile tile;
          while (!At(TokenKind::kRparen)) {
            if (At(TokenKind::kStar)) {
              Advance();
              tile.dimensions.push_back(Tile::kCombineDimension);
            } else {
              PERFSIM_ASSIGN_OR_RETURN(int64_t size, ParseInt64("a tile dimension or '*'"));
              tile.dimensions.push_back(size);
            }
            if (!At(TokenKind::kComma)) break;
            Advance();
          }
          PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "',' or ')' in a tile"));
          layout.tiles.push_back(std::move(tile));
        }
      } else if (AtKeyword("E") || AtKeyword("S")) {
        int64_t* field = AtKeyword("E") ? &layout.element_size_bits : &layout.memory_space;
        Advance();
        PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLparen, "'('"));
        PERFSIM_ASSIGN_OR_RETURN(*field, ParseInt64("an integer"));
        PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "')'"));
      } else if (At(TokenKind::kIdentifier) || At(TokenKind::kStar) || At(TokenKind::kHash)) {
        // Another layout attribute (`L(4)`, `#(s32)`, `SC(0:1)`, ...): kept verbatim.
        const size_t start = lexer_.OffsetOf(tok_.text);
        Advance();
        if (!At(TokenKind::kLparen)) return Expected("'(' after a layout attribute");
        int parens = 0;
        size_t end = start;
        do {
          if (At(TokenKind::kEof) || At(TokenKind::kError)) return Expected("')'");
          if (At(TokenKind::kLparen) && ++parens > kMaxDepth) return Expected("shallower nesting");
          if (At(TokenKind::kRparen)) --parens;
          end = lexer_.OffsetOf(tok_.text) + tok_.text.size();
          Advance();
        } while (parens > 0);
        absl::StrAppend(&layout.other_attributes, lexer_.text().substr(start, end - start));
      } else {
        return Expected("a layout attribute (T, E, S, ...) or '}'");
      }
    }
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "',', ':' or '}' in a layout"));
  shape->set_layout(std::move(layout));
  return absl::OkStatus();
}

absl::StatusOr<Shape> HloParser::ParseStandaloneShape() {
  Advance();
  const SourceLocation location = LocationOf(tok_);
  PERFSIM_ASSIGN_OR_RETURN(Shape shape, ParseShape());
  PERFSIM_RETURN_IF_ERROR(ValidateShapeAt(shape, location));
  if (!At(TokenKind::kEof)) return Expected("the end of the shape");
  return shape;
}

// --- public entry point ---

absl::StatusOr<Shape> ParseShape(absl::string_view text) {
  HloParser parser(text, "");
  return parser.ParseStandaloneShape();
}

}  // namespace perfsim
