// What `perfsim run` prints about an output array: its checksum and its NaN and Inf counts.
//
//   ArrayStats s = ComputeArrayStats(literal);
//   // f32[3] {1, nan, -inf}: s.nan_count == 1, s.inf_count == 1,
//   // s.fnv1a64 == Fnv1a64(literal.data()).
//
// Checksum: FNV-1a 64 over the array's bytes as stored (row-major, little-endian, ByteWidth
// bytes per element; bf16 and f8 as their bit patterns, pred as one byte), the data bytes of
// the .npy that `run --save-outputs` writes. NaN / Inf: elements that decode (DecodeFloat) to
// NaN / +-infinity; a complex element counts once, as NaN when either part is NaN, else as Inf
// when either part is infinite; 0 for integer and pred arrays.
//
// One pass per array with the element type dispatched once: outputs of a few GiB are common
// (a run's outputs are as large as the memory budget allows), and a per-element type switch
// took longer than running the module.
#ifndef PERFSIM_SIM_INTERP_OUTPUT_STATS_H_
#define PERFSIM_SIM_INTERP_OUTPUT_STATS_H_

#include <cstdint>

#include "absl/types/span.h"
#include "sim/ir/literal.h"

namespace perfsim {

struct ArrayStats {
  uint64_t fnv1a64 = 0;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
};

// FNV-1a 64 of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t Fnv1a64(absl::Span<const uint8_t> bytes);

// The stats of an array literal (a tuple or elided literal gives the checksum of its empty
// data and no NaN or Inf).
ArrayStats ComputeArrayStats(const Literal& array);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_OUTPUT_STATS_H_
