#include "sim/interp/array_util.h"

#include <cstring>

namespace perfsim {
namespace interp {

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

int64_t ElementCountOf(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

void StridedCopy(const uint8_t* src, int64_t src_offset, absl::Span<const int64_t> src_strides_in,
                 uint8_t* dst, int64_t dst_offset, absl::Span<const int64_t> dst_strides_in,
                 absl::Span<const int64_t> dims_in, int64_t element_bytes) {
  for (int64_t d : dims_in) {
    if (d == 0) return;
  }
  // The same box with size-1 dimensions dropped and each dimension merged into the one inside
  // it where both sides step through them as one (stride[d] = stride[d+1] · dims[d+1]): a
  // reshape-like copy becomes one memcpy, a transpose keeps only the dimensions it permutes.
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  for (size_t d = 0; d < dims_in.size(); ++d) {
    if (dims_in[d] == 1) continue;
    if (!dims.empty() && src_strides.back() == src_strides_in[d] * dims_in[d] &&
        dst_strides.back() == dst_strides_in[d] * dims_in[d]) {
      dims.back() *= dims_in[d];
      src_strides.back() = src_strides_in[d];
      dst_strides.back() = dst_strides_in[d];
      continue;
    }
    dims.push_back(dims_in[d]);
    src_strides.push_back(src_strides_in[d]);
    dst_strides.push_back(dst_strides_in[d]);
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) {
    std::memcpy(dst + dst_offset * element_bytes, src + src_offset * element_bytes, element_bytes);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t src_inner_stride = src_strides[rank - 1];
  const int64_t dst_inner_stride = dst_strides[rank - 1];
  const bool contiguous = src_inner_stride == 1 && dst_inner_stride == 1;
  // Odometer over the outer dimensions; the last dimension is the inner loop.
  std::vector<int64_t> index(rank - 1, 0);
  int64_t s = src_offset;
  int64_t t = dst_offset;
  while (true) {
    if (contiguous) {
      std::memcpy(dst + t * element_bytes, src + s * element_bytes, inner * element_bytes);
    } else if (element_bytes == 4) {
      for (int64_t i = 0; i < inner; ++i) {
        std::memcpy(dst + (t + i * dst_inner_stride) * 4, src + (s + i * src_inner_stride) * 4, 4);
      }
    } else {
      for (int64_t i = 0; i < inner; ++i) {
        std::memcpy(dst + (t + i * dst_inner_stride) * element_bytes,
                    src + (s + i * src_inner_stride) * element_bytes, element_bytes);
      }
    }
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      s += src_strides[d];
      t += dst_strides[d];
      if (++index[d] < dims[d]) break;
      s -= src_strides[d] * dims[d];
      t -= dst_strides[d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace interp
}  // namespace perfsim
