#include "sim/ir/shape.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/status.h"

namespace perfsim {

bool Layout::operator==(const Layout& other) const {
  return minor_to_major == other.minor_to_major && tiles == other.tiles &&
         element_size_bits == other.element_size_bits && memory_space == other.memory_space &&
         other_attributes == other.other_attributes;
}

std::string Layout::ToString() const {
  std::string out = absl::StrCat("{", absl::StrJoin(minor_to_major, ","));
  const bool has_attributes =
      !tiles.empty() || element_size_bits != 0 || memory_space != 0 || !other_attributes.empty();
  if (has_attributes) {
    absl::StrAppend(&out, ":");
    // XLA writes one 'T' before all tiles: T(8,128)(2,1).
    if (!tiles.empty()) absl::StrAppend(&out, "T");
    for (const Tile& tile : tiles) {
      absl::StrAppend(&out, "(");
      for (size_t i = 0; i < tile.dimensions.size(); ++i) {
        if (i > 0) absl::StrAppend(&out, ",");
        if (tile.dimensions[i] == Tile::kCombineDimension) {
          absl::StrAppend(&out, "*");
        } else {
          absl::StrAppend(&out, tile.dimensions[i]);
        }
      }
      absl::StrAppend(&out, ")");
    }
    if (element_size_bits != 0) absl::StrAppend(&out, "E(", element_size_bits, ")");
    if (memory_space != 0) absl::StrAppend(&out, "S(", memory_space, ")");
    absl::StrAppend(&out, other_attributes);
  }
  absl::StrAppend(&out, "}");
  return out;
}

Layout Layout::Default(int64_t rank) {
  Layout layout;
  for (int64_t i = rank - 1; i >= 0; --i) layout.minor_to_major.push_back(i);
  return layout;
}

Shape Shape::Array(PrimitiveType type, absl::Span<const int64_t> dimensions) {
  Shape shape;
  shape.element_type_ = type;
  shape.dimensions_.assign(dimensions.begin(), dimensions.end());
  shape.dynamic_.assign(dimensions.size(), false);
  return shape;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::kTuple;
  shape.tuple_shapes_ = std::move(elements);
  return shape;
}

Shape Shape::Buffer(Shape array) {
  Shape shape;
  shape.element_type_ = PrimitiveType::kBuffer;
  shape.tuple_shapes_.push_back(std::move(array));
  return shape;
}

Shape Shape::Token() {
  Shape shape;
  shape.element_type_ = PrimitiveType::kToken;
  return shape;
}

bool Shape::is_static() const {
  if (IsTuple() || IsBuffer()) {
    return std::all_of(tuple_shapes_.begin(), tuple_shapes_.end(),
                       [](const Shape& s) { return s.is_static(); });
  }
  return std::none_of(dynamic_.begin(), dynamic_.end(), [](bool d) { return d; });
}

Layout Shape::EffectiveLayout() const { return layout_.has_value() ? *layout_ : Layout::Default(rank()); }

int64_t Shape::ElementCount() const {
  int64_t count = 1;
  for (int64_t d : dimensions_) count *= std::max<int64_t>(d, 0);
  return count;
}

int64_t Shape::ByteSize() const {
  if (IsTuple() || IsBuffer()) {
    int64_t total = 0;
    for (const Shape& s : tuple_shapes_) total += s.ByteSize();
    return total;
  }
  if (!IsArray()) return 0;
  return ElementCount() * ByteWidth(element_type_);
}

bool Shape::operator==(const Shape& other) const {
  return element_type_ == other.element_type_ && dimensions_ == other.dimensions_ &&
         dynamic_ == other.dynamic_ && layout_ == other.layout_ &&
         tuple_shapes_ == other.tuple_shapes_;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (i > 0) absl::StrAppend(&out, ", ");
      absl::StrAppend(&out, tuple_shapes_[i].ToString(print_layout));
    }
    absl::StrAppend(&out, ")");
    return out;
  }
  if (IsToken()) return "token[]";
  if (IsBuffer()) return absl::StrCat("b(", buffer_shape().ToString(print_layout), ")");
  std::string out = absl::StrCat(PrimitiveTypeName(element_type_), "[");
  for (size_t i = 0; i < dimensions_.size(); ++i) {
    if (i > 0) absl::StrAppend(&out, ",");
    if (dimensions_[i] == kUnboundedSize) {
      absl::StrAppend(&out, "?");
    } else {
      absl::StrAppend(&out, dynamic_[i] ? "<=" : "", dimensions_[i]);
    }
  }
  absl::StrAppend(&out, "]");
  if (print_layout && layout_.has_value()) absl::StrAppend(&out, layout_->ToString());
  return out;
}

bool SameShapeIgnoringLayout(const Shape& a, const Shape& b) {
  if (a.element_type() != b.element_type()) return false;
  if (a.IsTuple() || a.IsBuffer()) {
    if (a.tuple_size() != b.tuple_size()) return false;
    for (int64_t i = 0; i < a.tuple_size(); ++i) {
      if (!SameShapeIgnoringLayout(a.tuple_shapes(i), b.tuple_shapes(i))) return false;
    }
    return true;
  }
  return a.dimensions() == b.dimensions();
}

const Shape& StripBuffer(const Shape& shape) {
  return shape.IsBuffer() ? shape.buffer_shape() : shape;
}

bool ContainsBuffer(const Shape& shape) {
  if (shape.IsBuffer()) return true;
  if (!shape.IsTuple()) return false;
  return std::any_of(shape.tuple_shapes().begin(), shape.tuple_shapes().end(),
                     [](const Shape& element) { return ContainsBuffer(element); });
}

bool SameDimensions(const Shape& a, const Shape& b) { return a.dimensions() == b.dimensions(); }

absl::Status ValidateShape(const Shape& shape) {
  if (shape.IsTuple()) {
    // Each element fits on its own; their sum (Shape::ByteSize of the tuple) must too.
    int64_t total_bytes = 0;
    for (const Shape& element : shape.tuple_shapes()) {
      PERFSIM_RETURN_IF_ERROR(ValidateShape(element));
      const int64_t bytes = element.ByteSize();
      if (total_bytes > std::numeric_limits<int64_t>::max() - bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            shape.ToString(), ": expected a byte size that fits in int64; got an overflow"));
      }
      total_bytes += bytes;
    }
    return absl::OkStatus();
  }
  if (shape.IsToken() || shape.element_type() == PrimitiveType::kOpaque) return absl::OkStatus();
  if (shape.IsBuffer()) {
    if (shape.tuple_size() != 1 || !shape.buffer_shape().IsArray()) {
      return absl::InvalidArgumentError(
          absl::StrCat(shape.ToString(), ": expected a buffer of an array"));
    }
    return ValidateShape(shape.buffer_shape());
  }
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape: expected an array, tuple or token; got element type ",
                     PrimitiveTypeName(shape.element_type())));
  }
  int64_t count = 1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    const int64_t d = shape.dimensions(i);
    if (d == Shape::kUnboundedSize && shape.is_dynamic_dimension(i)) continue;
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(shape.ToString(), ": expected dimension ", i,
                                                     " to be non-negative; got ", d));
    }
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          shape.ToString(), ": expected an element count that fits in int64; got an overflow"));
    }
    count *= d;
  }
  const int64_t bytes_per_element = std::max<int64_t>(1, ByteWidth(shape.element_type()));
  if (count > std::numeric_limits<int64_t>::max() / bytes_per_element) {
    return absl::InvalidArgumentError(absl::StrCat(
        shape.ToString(), ": expected a byte size that fits in int64; got an overflow"));
  }
  if (shape.has_layout()) {
    const std::vector<int64_t>& m2m = shape.layout()->minor_to_major;
    // `s32[]{:T(128)}` and layouts that list no dimensions are accepted as written.
    if (!m2m.empty()) {
      std::vector<int64_t> sorted = m2m;
      std::sort(sorted.begin(), sorted.end());
      bool is_permutation = static_cast<int64_t>(sorted.size()) == shape.rank();
      for (size_t i = 0; is_permutation && i < sorted.size(); ++i) {
        is_permutation = sorted[i] == static_cast<int64_t>(i);
      }
      if (!is_permutation) {
        return absl::InvalidArgumentError(
            absl::StrCat(shape.ToString(), ": expected a layout that is a permutation of 0..",
                         shape.rank() - 1, "; got {", absl::StrJoin(m2m, ","), "}"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
