// Literals of `constant(...)`: scalars, nested-brace arrays, one scalar for an array, tuples,
// complex pairs and the elided `{...}`; and custom-call's `literal=`. Element text is converted
// by ParseLiteralElement (literal.h), the inverse of what the printer writes.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<Literal> HloParser::ParseLiteral(const Shape& shape) {
  PERFSIM_RETURN_IF_ERROR(EnterNesting());
  // Older dumps write the shape again inside the parentheses, `constant(f32[2] {1, 2})`.
  if (At(TokenKind::kIdentifier) && AtShapeStart()) {
    PERFSIM_ASSIGN_OR_RETURN(Shape ignored, ParseShape());
    (void)ignored;
  }
  if (At(TokenKind::kLbrace) && PeekToken().kind == TokenKind::kEllipsis) {
    Advance();
    Advance();
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "'}' after '...'"));
    LeaveNesting();
    return Literal::CreateElided(shape);
  }
  if (shape.IsTuple()) {
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLparen, "'(' to start a tuple literal"));
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) {
        PERFSIM_RETURN_IF_ERROR(
            Expect(TokenKind::kComma, absl::StrCat(shape.tuple_size(), " tuple literal elements")));
      }
      PERFSIM_ASSIGN_OR_RETURN(Literal element, ParseLiteral(shape.tuple_shapes(i)));
      elements.push_back(std::move(element));
    }
    PERFSIM_RETURN_IF_ERROR(
        Expect(TokenKind::kRparen,
               absl::StrCat("')' after ", shape.tuple_size(), " tuple literal elements")));
    LeaveNesting();
    return Literal::CreateTuple(std::move(elements));
  }
  if (!shape.IsArray()) {
    return ErrorAt(LocationOf(tok_), absl::StrCat("expected an array or tuple shape for a "
                                                  "constant; got ",
                                                  shape.ToString()));
  }
  const int64_t count = shape.ElementCount();
  if (count > kMaxLiteralElements) {
    return ErrorAt(LocationOf(tok_),
                   absl::StrCat("expected a constant of at most ", kMaxLiteralElements,
                                " elements, or one elided as {...}; got ", count, " elements"));
  }
  // Storage grows with the text actually read, never ahead of it from the shape alone.
  std::vector<uint8_t> data;
  data.reserve(
      static_cast<size_t>(std::min<int64_t>(count, 4096) * ByteWidth(shape.element_type())));
  if (shape.rank() == 0) {
    PERFSIM_RETURN_IF_ERROR(ParseLiteralScalar(shape.element_type(), &data));
  } else if (!At(TokenKind::kLbrace) && !IsComplex(shape.element_type())) {
    // One scalar for an array, `f32[2,3] constant(1)`: XLA's parser sets element 0 and leaves
    // the rest zero ({ {1, 0, 0}, {0, 0, 0} }); it does not broadcast. Here the storage is not
    // bounded by the text read, so it gets a bound of its own.
    const SourceLocation location = LocationOf(tok_);
    if (count == 0 || count > kMaxScalarFilledElements) {
      return ErrorAt(location, absl::StrCat("expected '{' to start a ", shape.ToString(false),
                                            " literal (one scalar fills 1 to ",
                                            kMaxScalarFilledElements, " elements); got ",
                                            DescribeToken(tok_)));
    }
    PERFSIM_RETURN_IF_ERROR(ParseLiteralScalar(shape.element_type(), &data));
    data.resize(static_cast<size_t>(count * ByteWidth(shape.element_type())), 0);
  } else {
    PERFSIM_RETURN_IF_ERROR(ParseArrayLiteralLevel(shape, 0, &data));
  }
  LeaveNesting();
  return Literal::CreateFromBytes(shape, std::move(data));
}

absl::Status HloParser::ParseArrayLiteralLevel(const Shape& shape, int64_t dimension,
                                               std::vector<uint8_t>* data) {
  PERFSIM_RETURN_IF_ERROR(EnterNesting());
  const int64_t size = std::max<int64_t>(shape.dimensions(dimension), 0);
  const bool innermost = dimension + 1 == shape.rank();
  PERFSIM_RETURN_IF_ERROR(
      Expect(TokenKind::kLbrace, absl::StrCat("'{' to start dimension ", dimension, " of a ",
                                              shape.ToString(false), " literal")));
  for (int64_t i = 0; i < size; ++i) {
    if (i > 0) {
      if (At(TokenKind::kRbrace)) {
        return Expected(absl::StrCat(size, " elements in dimension ", dimension, " of a ",
                                     shape.ToString(false), " literal, not ", i));
      }
      PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' between literal elements"));
    }
    if (innermost) {
      PERFSIM_RETURN_IF_ERROR(ParseLiteralScalar(shape.element_type(), data));
    } else {
      PERFSIM_RETURN_IF_ERROR(ParseArrayLiteralLevel(shape, dimension + 1, data));
    }
  }
  if (!At(TokenKind::kRbrace)) {
    return Expected(absl::StrCat("'}' after ", size, " elements in dimension ", dimension, " of a ",
                                 shape.ToString(false), " literal"));
  }
  Advance();
  LeaveNesting();
  return absl::OkStatus();
}

absl::Status HloParser::ParseLiteralScalar(PrimitiveType type, std::vector<uint8_t>* data) {
  const int64_t width = ByteWidth(type);
  auto append = [&](uint64_t bits, int64_t bytes) {
    for (int64_t b = 0; b < bytes; ++b) data->push_back(static_cast<uint8_t>(bits >> (8 * b)));
  };
  auto parse_one = [&](PrimitiveType element_type, int64_t bytes) -> absl::Status {
    if (!At(TokenKind::kNumber) && !At(TokenKind::kIdentifier)) {
      return Expected(absl::StrCat("a ", PrimitiveTypeName(element_type), " value"));
    }
    std::string text(tok_.text);
    if ((text == "nan" || text == "-nan") && lexer_.PeekChar() == '(') {
      // A NaN with a payload, nan(0x40): the parenthesised part follows without a space.
      RawValue payload = lexer_.ScanRawValue();
      if (!payload.ok) return ErrorAt({payload.error_line, payload.error_column}, payload.error);
      text += payload.text;
    }
    const std::optional<uint64_t> bits = ::perfsim::ParseLiteralElement(element_type, text);
    if (!bits.has_value())
      return Expected(absl::StrCat("a ", PrimitiveTypeName(element_type), " value"));
    append(*bits, bytes);
    Advance();
    return absl::OkStatus();
  };
  if (IsComplex(type)) {
    // (real, imaginary)
    const PrimitiveType part =
        type == PrimitiveType::kC128 ? PrimitiveType::kF64 : PrimitiveType::kF32;
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLparen, "'(' to start a complex value"));
    PERFSIM_RETURN_IF_ERROR(parse_one(part, width / 2));
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' in a complex value"));
    PERFSIM_RETURN_IF_ERROR(parse_one(part, width / 2));
    return Expect(TokenKind::kRparen, "')' to close a complex value");
  }
  return parse_one(type, width);
}

absl::StatusOr<std::string> HloParser::ParseLiteralAttributeValue() {
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'=' after 'literal'"));
  return ParseShapedLiteral();
}

absl::StatusOr<std::string> HloParser::ParseShapedLiteral() {
  PERFSIM_RETURN_IF_ERROR(EnterNesting());
  std::string text;
  if (At(TokenKind::kLparen)) {
    // XLA prints a tuple literal on one line as `( a, b )`; a trailing ',' is allowed.
    Advance();
    std::vector<std::string> elements;
    while (!At(TokenKind::kRparen)) {
      PERFSIM_ASSIGN_OR_RETURN(std::string element, ParseShapedLiteral());
      elements.push_back(std::move(element));
      if (!At(TokenKind::kRparen)) {
        PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' or ')' in a tuple literal"));
      }
    }
    Advance();
    text = absl::StrCat("( ", absl::StrJoin(elements, ", "), " )");  // `(  )` when empty
  } else {
    const SourceLocation location = LocationOf(tok_);
    PERFSIM_ASSIGN_OR_RETURN(Shape shape, ParseShape());
    PERFSIM_RETURN_IF_ERROR(ValidateShapeAt(shape, location));
    PERFSIM_ASSIGN_OR_RETURN(Literal literal, ParseLiteral(shape));
    text = absl::StrCat(shape.ToString(), " ", literal.ToString());
  }
  LeaveNesting();
  return text;
}

}  // namespace perfsim
