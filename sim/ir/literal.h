// Literal values: the data of `constant` instructions, and (later) of interpreter buffers.
//
//   Literal lit(Shape::Array(PrimitiveType::kBF16, {2}));
//   lit.SetFromDouble(0, 1.0);        // stored as bf16 bits, rounded to nearest even
//   lit.GetAsDouble(0) == 1.0
//   lit.ToString() == "{1, 0}"
//
// Storage is dense and row-major (logical order, whatever the shape's layout says), one element
// per ByteWidth(type) bytes in little-endian order; sub-byte types (s4, u4, f4e2m1fn, ...) take
// one byte each. Narrow floats are stored as their bit patterns.
#ifndef PERFSIM_SIM_IR_LITERAL_H_
#define PERFSIM_SIM_IR_LITERAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/ir/shape.h"

namespace perfsim {

class Literal {
 public:
  Literal() = default;
  // A zero-filled literal of `shape` (tuples get zero-filled elements). `shape` must be valid.
  explicit Literal(Shape shape);

  // The literal of `constant({...})`: values elided from a dump. It owns no element storage
  // whatever the shape's size (a dump of a 10^12-element constant costs nothing); GetAs* read
  // 0 and SetFrom*/SetBits must not be called on it.
  static Literal CreateElided(Shape shape);
  // An array literal over `data`, the element bytes as described above; data.size() must be
  // element_count * ByteWidth(element type).
  static Literal CreateFromBytes(Shape shape, std::vector<uint8_t> data);
  // A tuple literal of `elements`; its shape is the tuple of their shapes.
  static Literal CreateTuple(std::vector<Literal> elements);

  const Shape& shape() const { return shape_; }

  // Raw element bytes of an array literal.
  absl::Span<const uint8_t> data() const { return data_; }
  absl::Span<uint8_t> mutable_data() { return absl::MakeSpan(data_); }

  // Elements of a tuple literal.
  const std::vector<Literal>& tuple_elements() const { return tuple_elements_; }
  std::vector<Literal>* mutable_tuple_elements() { return &tuple_elements_; }

  int64_t element_count() const { return shape_.IsArray() ? shape_.ElementCount() : 0; }

  // Element `linear_index` (row-major) converted to double / int64. Complex types return the
  // real part. Works for every array element type. GetAsInt64 of a float truncates toward zero
  // and saturates (NaN gives 0); of a u64 above 2^63-1 it wraps.
  double GetAsDouble(int64_t linear_index) const;
  int64_t GetAsInt64(int64_t linear_index) const;
  // Store `value` converted to the element type; pred stores value != 0.
  // SetFromDouble: floats round to nearest even (and saturate or become inf/NaN as the format
  //   defines, see float_types.h); integers truncate toward zero and saturate to the type's
  //   range, NaN giving 0 (never the undefined behaviour of an out-of-range C++ cast).
  // SetFromInt64: integers wrap to the type's width (s8 from 300 is 44); floats round.
  void SetFromDouble(int64_t linear_index, double value);
  void SetFromInt64(int64_t linear_index, int64_t value);
  // The raw bit pattern of an element in the low BitWidth bits (c64: real part in the low 32
  // bits, imaginary in the high 32). Not for c128, whose 128 bits do not fit (checked).
  uint64_t GetBits(int64_t linear_index) const;
  void SetBits(int64_t linear_index, uint64_t bits);

  // True when the text was `constant({...})`: the values were elided from the dump (see
  // CreateElided).
  bool elided() const { return elided_; }
  void set_elided(bool elided) { elided_ = elided; }

  // HLO literal text without the shape: "1.5" for a scalar, "{ {1, 2}, {3, 4} }" for a
  // matrix, "{...}" for an elided literal, "(1, {2, 3})" for a tuple. Floats print in the
  // shortest form that parses back to the same bits; special values print as inf, -inf, nan.
  std::string ToString() const;

  bool operator==(const Literal& other) const;

 private:
  Shape shape_;
  std::vector<uint8_t> data_;
  std::vector<Literal> tuple_elements_;
  bool elided_ = false;
};

// Text of one element of a non-complex array type, as Literal::ToString writes it: "true",
// "-3", "18446744073709551615", "1.5", "1e-05", "inf", "-nan". Floats use the shortest digits
// that ParseLiteralElement reads back to the same bits; a NaN other than the plain quiet one
// prints its mantissa payload as XLA does, "nan(0x1)" (IEEE-style types only).
std::string FormatLiteralElement(PrimitiveType type, uint64_t bits);

// Inverse of FormatLiteralElement: the bit pattern of `text` as an element of `type`. Integers
// must be in the type's range (pred takes true/false/0/1); floats accept decimal and exponent
// forms plus inf, -inf, nan, -nan and nan(0x<payload>), rounding once to nearest even. nullopt when
// `text` is not a value of `type`.
std::optional<uint64_t> ParseLiteralElement(PrimitiveType type, absl::string_view text);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_LITERAL_H_
