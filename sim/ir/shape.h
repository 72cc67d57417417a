// Shapes and layouts of the op IR, as HLO text writes them.
//
//   f32[8,128]{1,0}                       array, descending layout
//   bf16[16,5,32]                         array, no layout written (the default descending one)
//   f32[<=10]                             bounded dynamic dimension
//   f32[1024,512]{1,0:T(8,128)(2,1)S(3)}  TPU tiled layout in memory space 3
//   s4[16]{0:E(4)}                        sub-byte element size
//   (f32[2]{0}, (s32[], token[]))         tuples, nested
//   b(f32[16]{0})                         a buffer: XLA's mutable array between Pin and Unpin
//
// A Shape keeps the layout exactly as written (or none) so that printing reproduces the text.
// Dimension sizes are in elements; byte sizes assume dense packing at ByteWidth per element.
#ifndef PERFSIM_SIM_IR_SHAPE_H_
#define PERFSIM_SIM_IR_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

// One tile of a tiled layout: T(8,128) is {8, 128}. A dimension written `*` (combine) is
// stored as kCombineDimension.
struct Tile {
  static constexpr int64_t kCombineDimension = -1;
  std::vector<int64_t> dimensions;
  bool operator==(const Tile& other) const { return dimensions == other.dimensions; }
};

struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<Tile> tiles;
  int64_t element_size_bits = 0;  // E(n); 0 when not written.
  int64_t memory_space = 0;       // S(n); 0 when not written.
  // Any other layout attributes after the colon (e.g. `L(4)`, `SC(...)`, `#(s32)`), kept
  // verbatim so printing gives them back. perfsim does not model them.
  std::string other_attributes;

  bool operator==(const Layout& other) const;
  bool operator!=(const Layout& other) const { return !(*this == other); }
  // "{1,0:T(8,128)(2,1)S(3)}"
  std::string ToString() const;

  // {rank-1, ..., 1, 0}.
  static Layout Default(int64_t rank);
};

class Shape {
 public:
  // Size written for an unbounded dynamic dimension (`?`).
  static constexpr int64_t kUnboundedSize = -1;

  // An invalid shape (element type kInvalid); the state of a default-constructed Shape.
  Shape() = default;

  static Shape Array(PrimitiveType type, absl::Span<const int64_t> dimensions);
  static Shape Scalar(PrimitiveType type) { return Array(type, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  // `b(array)`: XLA's buffer type, the mutable array that custom-calls update in place between
  // a "Pin" and an "Unpin". It is not an array: elementwise and data ops refuse it; it passes
  // through tuples, parameters, while loops and custom-calls. `array` must be an array shape.
  static Shape Buffer(Shape array);

  PrimitiveType element_type() const { return element_type_; }
  bool IsTuple() const { return element_type_ == PrimitiveType::kTuple; }
  bool IsToken() const { return element_type_ == PrimitiveType::kToken; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsBuffer() const { return element_type_ == PrimitiveType::kBuffer; }
  // The array a buffer holds. Call only when IsBuffer().
  const Shape& buffer_shape() const { return tuple_shapes_[0]; }
  bool IsScalar() const { return IsArray() && dimensions_.empty(); }

  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_[i]; }
  // True for `<=N` and `?` dimensions.
  bool is_dynamic_dimension(int64_t i) const { return dynamic_[i]; }
  const std::vector<bool>& dynamic_dimensions() const { return dynamic_; }
  bool is_static() const;

  const std::vector<Shape>& tuple_shapes() const { return tuple_shapes_; }
  const Shape& tuple_shapes(int64_t i) const { return tuple_shapes_[i]; }
  int64_t tuple_size() const { return static_cast<int64_t>(tuple_shapes_.size()); }

  bool has_layout() const { return layout_.has_value(); }
  const std::optional<Layout>& layout() const { return layout_; }
  // The written layout, or the default descending one.
  Layout EffectiveLayout() const;

  // Mutators, used by the parser and by shape inference.
  void set_element_type(PrimitiveType type) { element_type_ = type; }
  void set_dimensions(int64_t i, int64_t size) { dimensions_[i] = size; }
  void set_dynamic_dimension(int64_t i, bool dynamic) { dynamic_[i] = dynamic; }
  void set_layout(Layout layout) { layout_ = std::move(layout); }
  void clear_layout() { layout_.reset(); }
  std::vector<Shape>* mutable_tuple_shapes() { return &tuple_shapes_; }

  // Number of elements of an array (1 for a scalar). Call only on shapes that passed
  // ValidateShape, whose element counts are known not to overflow.
  int64_t ElementCount() const;
  // Dense size in bytes: ElementCount * ByteWidth for arrays (sub-byte types rounded up per
  // element), the sum over elements for tuples, the array's for a buffer, 0 for tokens.
  int64_t ByteSize() const;

  // Structural equality including layouts.
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

  // "f32[8,128]{1,0}"; with print_layout=false, "f32[8,128]". A buffer: "b(f32[16]{0})".
  std::string ToString(bool print_layout = true) const;

 private:
  PrimitiveType element_type_ = PrimitiveType::kInvalid;
  std::vector<int64_t> dimensions_;
  std::vector<bool> dynamic_;
  std::optional<Layout> layout_;
  std::vector<Shape> tuple_shapes_;  // A tuple's elements, or a buffer's one array.
};

// Same element types and dimensions (recursively for tuples and buffers), layouts ignored.
// Dynamic dimensions compare by their bound.
bool SameShapeIgnoringLayout(const Shape& a, const Shape& b);

// `b(f32[16])` -> `f32[16]`; any other shape as it is.
const Shape& StripBuffer(const Shape& shape);

// True if `shape` is a buffer or a tuple with one somewhere inside.
bool ContainsBuffer(const Shape& shape);

// Same dimensions, element type and layouts ignored.
bool SameDimensions(const Shape& a, const Shape& b);

// Checks that a shape is well formed: non-negative sizes, an element count (and byte size) that
// fits in int64, a layout that is a permutation of the dimensions. Error example:
// "f32[4611686018427387904,4]: expected an element count that fits in int64; got an overflow".
absl::Status ValidateShape(const Shape& shape);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_SHAPE_H_
