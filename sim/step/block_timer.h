// The BlockTimer that times a step's blocks with the model-agnostic simulator
// (sim/simulator/simulator.h) on the lowerings of sim/lowering: attention
// (attention.h), the dense FFN, embedding, LM head with its loss and AdamW (dense_layers.h),
// and the MoE layer (lowering.h, the backend the step names or the chip's default).
//
//   SimulatedBlockTimer timer(chip, topology);
//   PERFSIM_ASSIGN_OR_RETURN(StepPrediction p, PredictStep(step, chip, topology, timer));
//
// Each block is lowered for one micro-batch on one device of its model-parallel group (MBS
// sequences of S/cp tokens; tp for attention, the dense FFN, embedding and head; ep·tp for the
// MoE layer), forward and forward+backward, and simulated on the step's topology (the group's
// devices are the topology's first ones, as the step numbers them). backward = T(fwd+bwd) -
// T(fwd): the simulator starts the backward when the forward's outputs are ready
// (simulator.h step 7), so the two add.
//
// The attention core runs as the flash-attention kernels of attention.h (AttentionKernel::kFlash:
// one custom-call each way with a cost estimate counting the tiles the mask leaves visible), as
// a real step does; the plain-op core, which writes the S x S scores to HBM, only for a toy
// sequence the kernel's blocks do not divide. core_forward_seconds is the forward kernel's time.
// Context parallelism: the module holds a device's S/cp queries and keys; the core's time is
// multiplied by cp for the keys the ring brings (sim/step/step_time.h times the ring itself).
// MoE layers: with forced-balanced routing every shard receives exactly its T_l·K rows, so
// the dispatch's receive buffer is that size (ragged_buffer_factor 1: a dropless dispatch sizes
// it to what arrives).
//
// Dtypes: compute bf16. An fp8 or MXFP8 step on a chip with an fp8 matmul rate runs the
// attention projections and the dense FFNs as FP8 GEMMs (f8e4m3fn operands, bf16 results:
// NamedBuilder::set_gemm_type; the operand casts fuse into the dots, as a GEMM prologue); the
// attention core, the router, the LM head and the MoE experts stay bf16 (the experts'
// ragged-dots take no fused operand cast in the simulator, so an fp8 lowering there would pay a
// separate quantisation per micro-batch). MXFP8's block scales and delayed scaling's amax
// reductions are not counted. The optimizer updates f32 master weights with f32 moments.
#ifndef PERFSIM_SIM_STEP_BLOCK_TIMER_H_
#define PERFSIM_SIM_STEP_BLOCK_TIMER_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/step/step_time.h"

namespace perfsim {

class SimulatedBlockTimer : public BlockTimer {
 public:
  SimulatedBlockTimer(const Chip& chip, const Topology& topology)
      : chip_(chip), topology_(topology) {}

  absl::StatusOr<BlockTiming> Attention(const TrainingStep& step, int64_t layer) override;
  absl::StatusOr<BlockTiming> Ffn(const TrainingStep& step, int64_t layer) override;
  absl::StatusOr<BlockTiming> Embedding(const TrainingStep& step) override;
  absl::StatusOr<BlockTiming> LmHead(const TrainingStep& step) override;
  absl::StatusOr<double> OptimizerSeconds(const TrainingStep& step, double elements) override;

  // The MoE backend the timer lowers with: the step's moe_backend, else "ep_ragged_a2a" on a
  // TPU with ep > 1, "megablox_gmm" on a TPU otherwise, "grouped_gemm_aligned" on a GPU.
  std::string MoeBackend(const TrainingStep& step) const;

 private:
  const Chip& chip_;
  const Topology& topology_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_BLOCK_TIMER_H_
