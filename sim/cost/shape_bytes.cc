// Shape sizes (shape_bytes.h), following openxla/xla ShapeUtil::ByteSizeOf and
// CpuExecutable::ShapeSizeBytes.
#include "sim/cost/shape_bytes.h"

namespace perfsim {

int64_t ElementsIn(const Shape& shape) { return shape.IsArray() ? shape.ElementCount() : 0; }

int64_t ElementsInRecursive(const Shape& shape) {
  if (!shape.IsTuple()) return ElementsIn(shape);
  int64_t total = 0;
  for (const Shape& element : shape.tuple_shapes()) total += ElementsInRecursive(element);
  return total;
}

int64_t ShapeSizeBytes(const Shape& shape) {
  if (shape.IsTuple()) return kTuplePointerBytes * shape.tuple_size();
  if (!shape.IsArray()) return 0;  // token, opaque
  const int64_t elements = shape.ElementCount();
  int64_t bytes = 0;
  const int64_t element_bits = shape.has_layout() ? shape.layout()->element_size_bits : 0;
  if (element_bits != 0) {
    bytes = (elements * element_bits + 7) / 8;
  } else {
    bytes = elements * ByteWidth(shape.element_type());
  }
  // XLA:CPU keeps the runtime size of every dimension of a dynamic array beside it, as s32.
  if (!shape.is_static()) bytes += 4 * shape.rank();
  return bytes;
}

int64_t LeafBytes(const Shape& shape) {
  if (!shape.IsTuple()) return ShapeSizeBytes(shape);
  int64_t total = 0;
  for (const Shape& element : shape.tuple_shapes()) total += LeafBytes(element);
  return total;
}

bool IsContiguousBlock(const Shape& buffer, const std::vector<int64_t>& block) {
  if (!buffer.IsArray() || buffer.rank() != static_cast<int64_t>(block.size())) return false;
  const Layout layout = buffer.EffectiveLayout();
  if (!layout.tiles.empty() || layout.minor_to_major.size() != block.size()) return false;
  for (int64_t d = 0; d < buffer.rank(); ++d) {
    if (block[d] < 0 || block[d] > buffer.dimensions(d)) return false;
  }
  const std::vector<int64_t>& order = layout.minor_to_major;
  size_t i = 0;
  while (i < order.size() && block[order[i]] == buffer.dimensions(order[i])) ++i;
  if (i < order.size()) ++i;  // the one dimension the block spans partly
  for (; i < order.size(); ++i) {
    if (block[order[i]] != 1) return false;
  }
  return true;
}

}  // namespace perfsim
