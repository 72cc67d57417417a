#include "sim/fit/footprint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfsim {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

absl::string_view MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::kVmem:
      return "VMEM";
    case MemorySpace::kSmem:
      return "SMEM";
    case MemorySpace::kSparseCoreMemory:
      return "SparseCore memory";
    case MemorySpace::kGpuSharedMemory:
      return "shared memory";
  }
  return "?";
}

absl::string_view BufferRoleName(BufferRole role) {
  switch (role) {
    case BufferRole::kPipelined:
      return "pipelined";
    case BufferRole::kScratch:
      return "scratch";
    case BufferRole::kScalarPrefetch:
      return "scalar prefetch";
    case BufferRole::kFixed:
      return "fixed";
  }
  return "?";
}

int64_t NativeSublanes(PrimitiveType dtype) {
  const int bits = BitWidth(dtype);
  // Narrow types pack 32/bits rows into each 32-bit sublane; wider than 32 bits has no packing.
  if (bits <= 0 || bits >= 32) return 8;
  return 8 * 32 / bits;
}

Dims AlignToNativeTile(const Dims& block, PrimitiveType dtype) {
  Dims aligned = block;
  const size_t rank = aligned.size();
  if (rank >= 1) aligned[rank - 1] = RoundUp(aligned[rank - 1], kVmemLanes);
  if (rank >= 2) aligned[rank - 2] = RoundUp(aligned[rank - 2], NativeSublanes(dtype));
  return aligned;
}

int64_t ArrayBytes(const Dims& shape, PrimitiveType dtype, int64_t count) {
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  const int64_t bits = elements * BitWidth(dtype);
  return count * ((bits + 7) / 8);
}

FitBuffer MakeBuffer(absl::string_view name, BufferRole role, Dims block, PrimitiveType dtype,
                     int64_t count, MemorySpace space) {
  FitBuffer buffer;
  buffer.name = name;
  buffer.role = role;
  buffer.allocated_shape = space == MemorySpace::kVmem ? AlignToNativeTile(block, dtype) : block;
  buffer.block_shape = std::move(block);
  buffer.dtype = dtype;
  buffer.count = count;
  buffer.space = space;
  buffer.bytes = ArrayBytes(buffer.allocated_shape, dtype, count);
  return buffer;
}

std::string DimsToString(const Dims& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

int64_t KernelFootprint::BytesIn(MemorySpace space) const {
  int64_t total = 0;
  for (const FitBuffer& buffer : buffers) {
    if (buffer.space == space) total += buffer.bytes;
  }
  return total;
}

}  // namespace perfsim
