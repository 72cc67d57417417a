// The backends' singletons, one per file (sim/lowering/<backend>.cc), collected by the table
// in backends.cc. Include only from sim/lowering.
#ifndef PERFSIM_SIM_LOWERING_BACKENDS_INTERNAL_H_
#define PERFSIM_SIM_LOWERING_BACKENDS_INTERNAL_H_

#include "sim/lowering/lowering.h"
#include "sim/lowering/router.h"

namespace perfsim {

const MoeBackend& DenseEinsumBackend();
const MoeBackend& CapacityEinsumBackend();
const MoeBackend& SparseRaggedDotBackend();
const MoeBackend& MegabloxGmmBackend();
const MoeBackend& EpRaggedA2aBackend();
const MoeBackend& RingOfExpertsBackend();
const MoeBackend& GroupedGemmAlignedBackend();
const MoeBackend& FusedExpertFfnBackend();

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_BACKENDS_INTERNAL_H_
