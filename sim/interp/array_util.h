// Index arithmetic shared by the interpreter's data-movement ops: row-major strides and one
// strided copy that transpose, broadcast, slice, reverse, pad, concatenate, dynamic-slice and
// gather are all written in terms of.
//
//   // out[i][j] = in[j][i] for a 3x4 f32 `in`:
//   StridedCopy(in, /*src_offset=*/0, /*src_strides=*/{1, 4}, out, 0, RowMajorStrides({4, 3}),
//               /*dims=*/{4, 3}, /*element_bytes=*/4);
//
// Strides and offsets are in elements and may be negative (reverse) or zero (broadcast).
#ifndef PERFSIM_SIM_INTERP_ARRAY_UTIL_H_
#define PERFSIM_SIM_INTERP_ARRAY_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace perfsim {
namespace interp {

// {d1*d2*..., ..., d_{n-1}, 1}.
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);

// Product of dims (1 for rank 0).
int64_t ElementCountOf(absl::Span<const int64_t> dims);

// For every index i of the box `dims` (row-major order), copies the element at
// src[src_offset + sum(i_k * src_strides[k])] to dst[dst_offset + sum(i_k * dst_strides[k])].
// Runs along the last dimension that are contiguous on both sides are copied with memcpy.
void StridedCopy(const uint8_t* src, int64_t src_offset, absl::Span<const int64_t> src_strides,
                 uint8_t* dst, int64_t dst_offset, absl::Span<const int64_t> dst_strides,
                 absl::Span<const int64_t> dims, int64_t element_bytes);

// Advances a row-major multi-index within `dims`; returns false after the last index.
inline bool NextIndex(absl::Span<const int64_t> dims, std::vector<int64_t>* index) {
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (++(*index)[d] < dims[d]) return true;
    (*index)[d] = 0;
  }
  return false;
}

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_ARRAY_UTIL_H_
