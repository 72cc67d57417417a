// What the lowering of one non-MoE block of the whole training step returns (issue 13):
// attention (sim/lowering/attention.h), the dense FFN, the embedding, the LM head with its
// loss and the optimizer update (sim/lowering/dense_layers.h). The MoE layer keeps LoweredStep
// (lowering.h).
//
// The module is per-device SPMD over the block's own model-parallel group only (its tensor- or
// context-parallel devices: num_partitions = that group's size; 1 for a block without model
// parallelism). Data, FSDP and pipeline parallelism are outside it: the step composition
// (sim/step) adds the FSDP gathers, gradient reductions and pipeline sends around the block,
// and simulates each distinct block module once.
//
// Every instruction carries an annotation (proto/annotation.proto) with its block and phase
// (forward, backward, optimizer); parameters carry their role (activation, trained weight,
// frozen weight, cotangent), so the simulator and the step composition read them without
// knowing which lowering made the module.
#ifndef PERFSIM_SIM_LOWERING_LAYER_H_
#define PERFSIM_SIM_LOWERING_LAYER_H_

#include <memory>
#include <vector>

#include "sim/ir/instruction.h"
#include "sim/lowering/lowering.h"
#include "sim/lowering/named_builder.h"

namespace perfsim {

struct LoweredLayer {
  std::unique_ptr<Module> module;
  // Entry parameters and root tuple elements, in order, with their logical dims and roles
  // (TensorSpec::split over MeshAxis::kTp for tensor-parallel shards).
  std::vector<TensorSpec> parameters;
  std::vector<TensorSpec> outputs;
  // Logical dimension names of the instructions the lowering named (named_builder.h).
  DimNameTable dim_names;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_LAYER_H_
