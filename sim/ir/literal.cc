#include "sim/ir/literal.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sim/ir/float_types.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

uint64_t LowMask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

int64_t SignExtend(uint64_t bits, int width) {
  if (width >= 64) return static_cast<int64_t>(bits);
  const uint64_t sign = uint64_t{1} << (width - 1);
  bits &= LowMask(width);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

// double -> int64 without the undefined behaviour of an out-of-range cast: NaN gives 0,
// out-of-range values saturate.
int64_t SaturatingToInt64(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (value < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

uint64_t SaturatingToUint64(double value) {
  if (std::isnan(value) || value <= 0) return 0;
  if (value >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(value);
}

// Parses a decimal or exponent-form number (or inf/nan) as a double; false if `text` is not
// one. Out-of-range magnitudes become +-inf or +-0 as strtod gives them.
bool ParseDouble(absl::string_view text, double* out) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin == end || *begin == '+') return false;
  auto [ptr, ec] = std::from_chars(begin, end, *out, std::chars_format::general);
  if (ptr != end) {
    // from_chars does not take "inf"/"nan" with a leading sign in every library version.
    if (text == "inf")
      *out = std::numeric_limits<double>::infinity();
    else if (text == "-inf")
      *out = -std::numeric_limits<double>::infinity();
    else if (text == "nan")
      *out = std::numeric_limits<double>::quiet_NaN();
    else if (text == "-nan")
      *out = -std::numeric_limits<double>::quiet_NaN();
    else
      return false;
    return true;
  }
  if (ec == std::errc::result_out_of_range) {
    const std::string copy(text);
    *out = std::strtod(copy.c_str(), nullptr);
    return true;
  }
  return ec == std::errc();
}

// f32 parses with one correct rounding straight from the decimal text.
bool ParseF32Bits(absl::string_view text, uint64_t* bits) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  float value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ptr == end && ec == std::errc()) {
    *bits = std::bit_cast<uint32_t>(value);
    return true;
  }
  double wide = 0;
  if (!ParseDouble(text, &wide)) return false;
  *bits = EncodeFloat(PrimitiveType::kF32, wide);
  return true;
}

std::string FormatF64(double value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ptr);
}

std::string FormatF32(float value) {
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ptr);
}

// Narrow floats: the fewest significant digits whose parse (decimal -> double -> format) gives
// the same bits. 17 digits always do, since every narrow value is exactly a double.
std::string FormatNarrowFloat(PrimitiveType type, uint64_t bits) {
  const double value = DecodeFloat(type, bits);
  char buffer[64];
  for (int precision = 1; precision < 17; ++precision) {
    auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value,
                                   std::chars_format::general, precision);
    const std::string text(buffer, ptr);
    double parsed = 0;
    if (ParseDouble(text, &parsed) && EncodeFloat(type, parsed) == bits) return text;
  }
  auto [ptr, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general, 17);
  return std::string(buffer, ptr);
}

// IEEE-style types whose NaNs carry a payload in the mantissa field: (exponent bits, mantissa
// bits). XLA prints a NaN other than the quiet one without payload as nan(0x<mantissa>).
std::optional<std::pair<int, int>> NanPayloadLayout(PrimitiveType type) {
  if (type == PrimitiveType::kF64) return std::make_pair(11, 52);
  if (type == PrimitiveType::kF32) return std::make_pair(8, 23);
  const std::optional<FloatFormat> format = GetNarrowFloatFormat(type);
  if (format.has_value() && format->specials == FloatSpecials::kIeee) {
    return std::make_pair(format->exponent_bits, format->mantissa_bits);
  }
  return std::nullopt;
}

std::string FormatNan(PrimitiveType type, uint64_t bits, bool negative) {
  const absl::string_view sign = negative ? "-" : "";
  if (const auto layout = NanPayloadLayout(type)) {
    const uint64_t payload = bits & LowMask(layout->second);
    if (payload != uint64_t{1} << (layout->second - 1)) {
      return absl::StrCat(sign, "nan(0x", absl::Hex(payload), ")");
    }
  }
  return absl::StrCat(sign, "nan");
}

// "nan(0x7f)" / "-nan(0x7f)": the NaN with that mantissa payload. Types without payloads take
// their NaN.
std::optional<uint64_t> ParseNanWithPayload(PrimitiveType type, absl::string_view text) {
  const bool negative = absl::ConsumePrefix(&text, "-");
  uint64_t payload = 0;
  if (!absl::ConsumePrefix(&text, "nan(0x") || !absl::ConsumeSuffix(&text, ")") ||
      !absl::SimpleHexAtoi(text, &payload)) {
    return std::nullopt;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto layout = NanPayloadLayout(type);
  if (!layout.has_value()) return EncodeFloat(type, negative ? -nan : nan);
  const auto [exponent_bits, mantissa_bits] = *layout;
  if (payload == 0 || payload > LowMask(mantissa_bits)) return std::nullopt;
  const uint64_t sign = negative ? uint64_t{1} << (exponent_bits + mantissa_bits) : 0;
  return sign | (LowMask(exponent_bits) << mantissa_bits) | payload;
}

std::string FormatFloatElement(PrimitiveType type, uint64_t bits) {
  const double value = DecodeFloat(type, bits);
  if (std::isnan(value)) return FormatNan(type, bits, std::signbit(value));
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  if (type == PrimitiveType::kF64) return FormatF64(value);
  if (type == PrimitiveType::kF32) return FormatF32(static_cast<float>(value));
  return FormatNarrowFloat(type, bits);
}

// Bytes of one complex element's halves.
PrimitiveType ComplexComponentType(PrimitiveType type) {
  return type == PrimitiveType::kC128 ? PrimitiveType::kF64 : PrimitiveType::kF32;
}

void AppendArrayText(const Literal& literal, int64_t dimension, int64_t* next, std::string* out);

std::string ElementText(const Literal& literal, int64_t index) {
  const PrimitiveType type = literal.shape().element_type();
  if (IsComplex(type)) {
    const PrimitiveType part = ComplexComponentType(type);
    const int64_t half = ByteWidth(part);
    const uint8_t* p = literal.data().data() + index * ByteWidth(type);
    uint64_t re = 0;
    uint64_t im = 0;
    std::memcpy(&re, p, half);
    std::memcpy(&im, p + half, half);
    return absl::StrCat("(", FormatFloatElement(part, re), ", ", FormatFloatElement(part, im), ")");
  }
  return FormatLiteralElement(type, literal.GetBits(index));
}

// Rank-1 lists print "{1, 2}"; higher ranks put spaces inside the outer braces,
// "{ {1, 2}, {3, 4} }", as XLA does.
void AppendArrayText(const Literal& literal, int64_t dimension, int64_t* next, std::string* out) {
  const Shape& shape = literal.shape();
  const int64_t size = std::max<int64_t>(shape.dimensions(dimension), 0);
  const bool innermost = dimension + 1 == shape.rank();
  if (size == 0) {
    out->append("{}");
    return;
  }
  out->append(innermost ? "{" : "{ ");
  for (int64_t i = 0; i < size; ++i) {
    if (i > 0) out->append(", ");
    if (innermost) {
      out->append(ElementText(literal, (*next)++));
    } else {
      AppendArrayText(literal, dimension + 1, next, out);
    }
  }
  out->append(innermost ? "}" : " }");
}

}  // namespace

Literal::Literal(Shape shape) : shape_(std::move(shape)) {
  if (shape_.IsTuple()) {
    tuple_elements_.reserve(shape_.tuple_size());
    for (const Shape& element : shape_.tuple_shapes()) tuple_elements_.emplace_back(element);
    return;
  }
  if (shape_.IsArray()) {
    data_.assign(static_cast<size_t>(shape_.ElementCount() * ByteWidth(shape_.element_type())), 0);
  }
}

Literal Literal::CreateElided(Shape shape) {
  Literal literal;
  literal.shape_ = std::move(shape);
  literal.elided_ = true;
  return literal;
}

Literal Literal::CreateFromBytes(Shape shape, std::vector<uint8_t> data) {
  PERFSIM_CHECK(shape.IsArray()) << shape.ToString();
  PERFSIM_CHECK(static_cast<int64_t>(data.size()) ==
                shape.ElementCount() * ByteWidth(shape.element_type()))
      << shape.ToString() << " with " << data.size() << " bytes";
  Literal literal;
  literal.shape_ = std::move(shape);
  literal.data_ = std::move(data);
  return literal;
}

Literal Literal::CreateTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal literal;
  literal.shape_ = Shape::Tuple(std::move(shapes));
  literal.tuple_elements_ = std::move(elements);
  return literal;
}

uint64_t Literal::GetBits(int64_t linear_index) const {
  const PrimitiveType type = shape_.element_type();
  PERFSIM_CHECK(type != PrimitiveType::kC128) << "GetBits on c128";
  const int64_t width = ByteWidth(type);
  PERFSIM_CHECK(linear_index >= 0 &&
                (linear_index + 1) * width <= static_cast<int64_t>(data_.size()))
      << "element " << linear_index << " of " << shape_.ToString();
  uint64_t bits = 0;
  // Little-endian storage on a little-endian host; the interpreter relies on the same.
  std::memcpy(&bits, data_.data() + linear_index * width, width);
  return bits & LowMask(type == PrimitiveType::kPred ? 8 : BitWidth(type));
}

void Literal::SetBits(int64_t linear_index, uint64_t bits) {
  const PrimitiveType type = shape_.element_type();
  PERFSIM_CHECK(type != PrimitiveType::kC128) << "SetBits on c128";
  PERFSIM_CHECK(!elided_) << "SetBits on an elided literal";
  const int64_t width = ByteWidth(type);
  PERFSIM_CHECK(linear_index >= 0 &&
                (linear_index + 1) * width <= static_cast<int64_t>(data_.size()))
      << "element " << linear_index << " of " << shape_.ToString();
  bits &= LowMask(type == PrimitiveType::kPred ? 8 : BitWidth(type));
  std::memcpy(data_.data() + linear_index * width, &bits, width);
}

double Literal::GetAsDouble(int64_t linear_index) const {
  if (elided_) return 0.0;
  const PrimitiveType type = shape_.element_type();
  if (IsComplex(type)) {
    const PrimitiveType part = ComplexComponentType(type);
    uint64_t re = 0;
    std::memcpy(&re, data_.data() + linear_index * ByteWidth(type), ByteWidth(part));
    return DecodeFloat(part, re);
  }
  const uint64_t bits = GetBits(linear_index);
  if (IsFloatingPoint(type)) return DecodeFloat(type, bits);
  if (IsSignedInteger(type)) return static_cast<double>(SignExtend(bits, BitWidth(type)));
  return static_cast<double>(bits);  // unsigned and pred
}

int64_t Literal::GetAsInt64(int64_t linear_index) const {
  if (elided_) return 0;
  const PrimitiveType type = shape_.element_type();
  if (IsFloatingPoint(type) || IsComplex(type)) return SaturatingToInt64(GetAsDouble(linear_index));
  const uint64_t bits = GetBits(linear_index);
  if (IsSignedInteger(type)) return SignExtend(bits, BitWidth(type));
  return static_cast<int64_t>(bits);  // u64 above 2^63 wraps, as a C++ conversion would
}

void Literal::SetFromDouble(int64_t linear_index, double value) {
  const PrimitiveType type = shape_.element_type();
  if (IsComplex(type)) {
    PERFSIM_CHECK(!elided_) << "SetFromDouble on an elided literal";
    const PrimitiveType part = ComplexComponentType(type);
    const int64_t half = ByteWidth(part);
    uint8_t* p = data_.data() + linear_index * ByteWidth(type);
    const uint64_t re = EncodeFloat(part, value);
    const uint64_t im = 0;
    std::memcpy(p, &re, half);
    std::memcpy(p + half, &im, half);
    return;
  }
  if (IsFloatingPoint(type)) return SetBits(linear_index, EncodeFloat(type, value));
  if (type == PrimitiveType::kPred) return SetBits(linear_index, value != 0 ? 1 : 0);
  const int width = BitWidth(type);
  if (IsUnsignedInteger(type)) {
    return SetBits(linear_index, std::min(SaturatingToUint64(value), LowMask(width)));
  }
  const int64_t max =
      width >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (width - 1)) - 1;
  const int64_t min = -max - 1;
  SetBits(linear_index, static_cast<uint64_t>(std::clamp(SaturatingToInt64(value), min, max)));
}

void Literal::SetFromInt64(int64_t linear_index, int64_t value) {
  const PrimitiveType type = shape_.element_type();
  if (IsFloatingPoint(type) || IsComplex(type)) {
    return SetFromDouble(linear_index, static_cast<double>(value));
  }
  if (type == PrimitiveType::kPred) return SetBits(linear_index, value != 0 ? 1 : 0);
  SetBits(linear_index, static_cast<uint64_t>(value));
}

std::string Literal::ToString() const {
  if (elided_) return "{...}";
  if (shape_.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_elements_.size(); ++i) {
      if (i > 0) out.append(", ");
      out.append(tuple_elements_[i].ToString());
    }
    out.append(")");
    return out;
  }
  if (!shape_.IsArray()) return "";
  if (shape_.rank() == 0) return ElementText(*this, 0);
  std::string out;
  int64_t next = 0;
  AppendArrayText(*this, 0, &next, &out);
  return out;
}

bool Literal::operator==(const Literal& other) const {
  return shape_ == other.shape_ && data_ == other.data_ &&
         tuple_elements_ == other.tuple_elements_ && elided_ == other.elided_;
}

std::string FormatLiteralElement(PrimitiveType type, uint64_t bits) {
  if (type == PrimitiveType::kPred) return bits != 0 ? "true" : "false";
  if (IsFloatingPoint(type)) return FormatFloatElement(type, bits);
  if (IsSignedInteger(type)) return absl::StrCat(SignExtend(bits, BitWidth(type)));
  return absl::StrCat(bits & LowMask(BitWidth(type)));
}

std::optional<uint64_t> ParseLiteralElement(PrimitiveType type, absl::string_view text) {
  if (type == PrimitiveType::kPred) {
    if (text == "true" || text == "1") return 1;
    if (text == "false" || text == "0") return 0;
    return std::nullopt;
  }
  if (IsSignedInteger(type)) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return std::nullopt;
    const int width = BitWidth(type);
    if (width < 64) {
      const int64_t limit = int64_t{1} << (width - 1);
      if (value < -limit || value >= limit) return std::nullopt;
    }
    return static_cast<uint64_t>(value) & LowMask(width);
  }
  if (IsUnsignedInteger(type)) {
    // XLA reads integers as int64 and lets a u64 take a negative one modulo 2^64, so
    // `u64[] constant(-1)` is 2^64-1; narrower unsigned types reject negatives.
    if (type == PrimitiveType::kU64 && !text.empty() && text[0] == '-') {
      int64_t negative = 0;
      if (!absl::SimpleAtoi(text, &negative)) return std::nullopt;
      return static_cast<uint64_t>(negative);
    }
    uint64_t value = 0;
    if (text.empty() || text[0] == '-' || !absl::SimpleAtoi(text, &value)) return std::nullopt;
    if (value > LowMask(BitWidth(type))) return std::nullopt;
    return value;
  }
  if (IsFloatingPoint(type)) {
    if (absl::EndsWith(text, ")")) return ParseNanWithPayload(type, text);
    if (type == PrimitiveType::kF32) {
      uint64_t bits = 0;
      if (!ParseF32Bits(text, &bits)) return std::nullopt;
      return bits;
    }
    double value = 0;
    if (!ParseDouble(text, &value)) return std::nullopt;
    return EncodeFloat(type, value);
  }
  return std::nullopt;
}

}  // namespace perfsim
