// Collectives over mesh axes, for the lowerings: replica groups come from the axes
// (MeshGroups), channel ids are unique in the module.
//
//   Tensor g = AllReduce(state, partial_dw, {MeshAxis::kDp});   // sum over data parallel
//   Tensor s = AllGather(state, sizes, 'P', {MeshAxis::kEp});  // [EP, ...] from [1, ...]
#ifndef PERFSIM_SIM_LOWERING_COLLECTIVES_H_
#define PERFSIM_SIM_LOWERING_COLLECTIVES_H_

#include <vector>

#include "sim/lowering/lowering.h"

namespace perfsim {

// Sum over the devices that differ only in `axes`. Identity when they number 1.
Tensor AllReduce(StepState& state, const Tensor& t, std::vector<MeshAxis> axes);
// Concatenates the group's tensors along the dimension named `along` (tiled, as JAX's
// all_gather(tiled=True)).
Tensor AllGather(StepState& state, const Tensor& t, char along, std::vector<MeshAxis> axes);
// Sums over the group and keeps this device's 1/n slice of the dimension named `along`.
Tensor ReduceScatter(StepState& state, const Tensor& t, char along, std::vector<MeshAxis> axes);
// JAX's ragged_all_to_all over `axes` (backends.md 1b): rows of `operand` move into `output`;
// offsets and sizes are s32 rank 1 with one entry per group member.
Tensor RaggedAllToAll(StepState& state, const Tensor& operand, const Tensor& output,
                      const Tensor& input_offsets, const Tensor& send_sizes,
                      const Tensor& output_offsets, const Tensor& recv_sizes,
                      std::vector<MeshAxis> axes);
// Number of devices in one group over `axes`.
int64_t GroupSize(const StepSpec& spec, const std::vector<MeshAxis>& axes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_COLLECTIVES_H_
