// The one table of backends, in DESIGN.md's order.
#include "sim/lowering/backends_internal.h"

namespace perfsim {

absl::Span<const MoeBackend* const> Backends() {
  static const MoeBackend* const kBackends[] = {
      &DenseEinsumBackend(),
      &CapacityEinsumBackend(),
      &SparseRaggedDotBackend(),
      &MegabloxGmmBackend(),
      &EpRaggedA2aBackend(),
      &RingOfExpertsBackend(),
      &GroupedGemmAlignedBackend(),
      &FusedExpertFfnBackend(),
  };
  return kBackends;
}

}  // namespace perfsim
