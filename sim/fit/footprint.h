// On-chip buffers a kernel allocates for one tiling, and how big they are.
//
// A Pallas TPU kernel allocates every BlockSpec'd operand `count` times (2 = double buffering)
// at the *block* shape, even when the block runs past the edge of the array; scratch buffers
// once; scalar-prefetch operands in SMEM. VMEM stores the last two dimensions of a block in
// native tiles of (8·32/bits sublanes, 128 lanes), so a bf16 block [8, 100] occupies [16, 128].
// (shared/reference/backends.md 1b "VMEM bytes", 1c "Tiling and alignment rules".)
//
//   FitBuffer b = MakeBuffer("rhs", BufferRole::kPipelined, {1024, 1024}, PrimitiveType::kF32,
//                            /*count=*/2, MemorySpace::kVmem);
//   b.bytes == 2 * 1024 * 1024 * 4;   // 8 MiB
//
// GPU shared memory and SparseCore memory have no such native tile here: their buffers are
// counted at the block shape, unpadded.
//
// The packed tile is used on every TPU generation. backends.md 1c notes that before gen 7 XLA
// keeps 16-bit arrays at 8 sublanes by default, so on v4 to v6e a bf16 block whose row count is
// an odd multiple of 8 may be counted 8 rows larger than what is allocated.
#ifndef PERFSIM_SIM_FIT_FOOTPRINT_H_
#define PERFSIM_SIM_FIT_FOOTPRINT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

// Where a buffer lives.
enum class MemorySpace {
  kVmem,              // TPU TensorCore vector memory.
  kSmem,              // TPU TensorCore scalar memory (scalar-prefetch operands).
  kSparseCoreMemory,  // TPU SparseCore subcore memory (TileSPMEM).
  kGpuSharedMemory,   // GPU shared memory of one thread block (CTA).
};

// "VMEM", "SMEM", "SparseCore memory", "shared memory".
absl::string_view MemorySpaceName(MemorySpace space);

// Why a buffer exists; decides nothing, explains the count.
enum class BufferRole {
  kPipelined,       // BlockSpec'd operand, allocated `count` times for the DMA pipeline.
  kScratch,         // Kernel scratch (accumulators), allocated once.
  kScalarPrefetch,  // Metadata copied to SMEM before the grid runs.
  kFixed,           // A fixed allocation the kernel makes whatever the tiling.
};

absl::string_view BufferRoleName(BufferRole role);

using Dims = absl::InlinedVector<int64_t, 3>;

struct FitBuffer {
  // A string literal ("lhs", "acc", ...): buffers are built on the search's hot path.
  absl::string_view name;
  BufferRole role = BufferRole::kPipelined;
  Dims block_shape;      // As the kernel declares it (squeezed dimensions removed).
  Dims allocated_shape;  // After native-tile alignment (equal to block_shape outside VMEM).
  PrimitiveType dtype = PrimitiveType::kF32;
  int64_t count = 1;
  MemorySpace space = MemorySpace::kVmem;
  int64_t bytes = 0;  // count × elements(allocated_shape) × element size, sub-byte types packed.
};

// Sublanes of a native VMEM tile for `dtype`: 8·32/bits (f32 8, bf16 16, int8/fp8 32, int4 64);
// 8 for types wider than 32 bits.
int64_t NativeSublanes(PrimitiveType dtype);
inline constexpr int64_t kVmemLanes = 128;

// `block` with its last dimension rounded up to 128 lanes and the one before it to
// NativeSublanes(dtype); rank-1 blocks get the lane rounding only.
Dims AlignToNativeTile(const Dims& block, PrimitiveType dtype);

// Bytes of `count` copies of an array of `shape` elements of `dtype` (sub-byte types packed,
// rounded up to whole bytes).
int64_t ArrayBytes(const Dims& shape, PrimitiveType dtype, int64_t count);

// A buffer in `space`; VMEM buffers are aligned to the native tile, others kept as declared.
FitBuffer MakeBuffer(absl::string_view name, BufferRole role, Dims block, PrimitiveType dtype,
                     int64_t count, MemorySpace space);

// "[512,1024]".
std::string DimsToString(const Dims& dims);

// What a kernel needs for one tiling: its buffers, and the kernel's own rules the tiling or the
// shapes break (e.g. "m % tm == 0: expected m (1000) divisible by tm (512)"). A tiling that
// breaks a rule is reported like one that does not fit.
struct KernelFootprint {
  std::vector<FitBuffer> buffers;
  std::vector<std::string> violations;

  // Sum of the bytes of the buffers in `space`.
  int64_t BytesIn(MemorySpace space) const;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_FIT_FOOTPRINT_H_
