// Sizes of shapes as the cost model counts them.
//
//   ShapeSizeBytes(f32[8,128]{1,0})          == 4096
//   ShapeSizeBytes((f32[8], s32[]))          == 16     (the tuple's pointer table: 8 B/element)
//   ShapeSizeBytes(s4[3]{0:E(4)})            == 2      (packed: ceil(3·4/8))
//   LeafBytes((f32[8], s32[]))               == 36     (the arrays themselves)
//
// ShapeSizeBytes is XLA's ShapeUtil::ByteSizeOf with the pointer size of XLA:CPU (8), which is
// what JAX's cost_analysis() uses: tiled-layout padding and memory spaces are ignored, a
// sub-byte type packs only when the layout says E(n) (otherwise one byte per element), a token
// is 0, and a dynamic array adds one s32 per dimension for its runtime sizes.
#ifndef PERFSIM_SIM_COST_SHAPE_BYTES_H_
#define PERFSIM_SIM_COST_SHAPE_BYTES_H_

#include <cstdint>
#include <vector>

#include "sim/ir/shape.h"

namespace perfsim {

// Bytes of a tuple's top-level pointer table, per element.
inline constexpr int64_t kTuplePointerBytes = 8;

int64_t ShapeSizeBytes(const Shape& shape);

// Sum of ShapeSizeBytes over the array (and token) leaves of a possibly nested tuple.
int64_t LeafBytes(const Shape& shape);

// Elements of an array shape; 0 for tuples and tokens.
int64_t ElementsIn(const Shape& shape);

// Elements over every array leaf of a possibly nested tuple.
int64_t ElementsInRecursive(const Shape& shape);

// Whether a block of sizes `block` at any offset of the array `buffer` is one contiguous range
// of the buffer's memory: in the buffer's layout, from the most minor dimension out, the block
// spans whole dimensions, then one dimension partly, then size 1 in every dimension more major.
// A layer [1, D, F] of a row-major stack [N, D, F] is; a column [N, D, 1] is not. False for a
// tiled layout, a rank mismatch or a block larger than the buffer.
//   IsContiguousBlock(f32[8,256,1024]{2,1,0}, {1, 256, 1024})   // true
//   IsContiguousBlock(f32[8,256,1024]{2,1,0}, {2, 128, 1024})   // false
bool IsContiguousBlock(const Shape& buffer, const std::vector<int64_t>& block);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_SHAPE_BYTES_H_
