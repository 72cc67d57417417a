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
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "sim/ir/shape.h"

namespace perfsim {

class Literal {
 public:
  Literal() = default;
  // A zero-filled literal of `shape` (tuples get zero-filled elements). `shape` must be valid.
  explicit Literal(Shape shape);

  const Shape& shape() const { return shape_; }

  // Raw element bytes of an array literal.
  absl::Span<const uint8_t> data() const { return data_; }
  absl::Span<uint8_t> mutable_data() { return absl::MakeSpan(data_); }

  // Elements of a tuple literal.
  const std::vector<Literal>& tuple_elements() const { return tuple_elements_; }
  std::vector<Literal>* mutable_tuple_elements() { return &tuple_elements_; }

  int64_t element_count() const { return shape_.IsArray() ? shape_.ElementCount() : 0; }

  // Element `linear_index` (row-major) converted to double / int64. Complex types return the
  // real part. Works for every array element type.
  double GetAsDouble(int64_t linear_index) const;
  int64_t GetAsInt64(int64_t linear_index) const;
  // Stores `value` converted to the element type: floats round to nearest even (and saturate or
  // become inf/NaN as the format defines), integers wrap as a C++ conversion to that width
  // would, pred stores value != 0.
  void SetFromDouble(int64_t linear_index, double value);
  void SetFromInt64(int64_t linear_index, int64_t value);

  // True when the text was `constant({...})`: the values were elided from the dump and this
  // literal holds zeros in their place.
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

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_LITERAL_H_
