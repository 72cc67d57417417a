// The whole training step composed from its blocks (issue 13): per-layer block timings (from
// the simulator, through a BlockTimer), the pipeline schedule of chunks and micro-batches, and
// the communication around the blocks -- FSDP gathers and gradient scatters per layer, context
// parallelism's K/V ring, pipeline sends, the data-parallel gradient reduction overlapping the
// backward, the optimizer and ZeRO's parameter gather.
//
//   PERFSIM_ASSIGN_OR_RETURN(TrainingStep step, TrainingStep::FromProto(proto));
//   PERFSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(chip, "256"));
//   SimulatedBlockTimer timer(chip, topology);           // sim/step/block_timer.h
//   PERFSIM_ASSIGN_OR_RETURN(StepPrediction p, PredictStep(step, chip, topology, timer));
//   p.step_seconds; p.tokens_per_second_per_device; p.mfu_megatron; p.breakdown.bubble_seconds;
//
// Block timings: the timer is asked once per distinct layer kind (MoE or dense FFN; the
// attention scope and whether the layer rotates q and k), not once per layer: identical layers
// are simulated once. Each timing is one micro-batch (MBS·S/cp tokens per device) through the
// block on one device of its model-parallel group, forward and backward.
//
// Per layer l: F_l = attention + FFN forward; B_l = their backward; R_l what the remat policy
// recomputes before the backward: FULL the whole forward; SELECTIVE core_attn the attention
// core (BlockTiming::core_forward_seconds), mlp a dense layer's FFN forward, moe a MoE layer's
// FFN forward. The elementwise modules (moe_act, layernorm, shared_experts' activations) and
// mla_up_proj are recomputed at a cost not separated in the block timings and counted 0.
//
// Communication, timed on the topology with sim/comm (device d = (((pp_i·DP + dp_i)·FSDP +
// fsdp_i)·CP + cp_i)·TP + tp_i, Megatron's order with tp fastest):
//   FSDP (fsdp > 1, or zero 3 on dp)  per layer and micro-batch: all-gather of its weights before
//        the forward and again before the backward, reduce-scatter of its gradients after; each
//        overlaps the layer's own compute (prefetch), so only max(0, comm - compute) is exposed.
//   CP   per layer: cp - 1 ring steps sending the K and V of the device's tokens, overlapping
//        the attention core (forward), twice that in the backward (K, V and their gradients).
//   PP   each micro-batch's activation (tokens·D, bf16; /tp with sequence parallelism) sent to
//        the next stage (pipeline_schedule.h send_seconds).
//   DP   after the last backward: the gradients all-reduced over dp·cp (zero 0) or
//        reduce-scattered (zero >= 1); the experts' over their dp·fsdp·cp/ep replicas. It
//        overlaps the last micro-batch's backward (Megatron's overlap_grad_reduce); exposed is
//        the rest, and at least the last layer's bucket.
//   ZeRO >= 1  the updated parameters all-gathered over the same groups, overlapping the next
//        step's first forward (overlap_param_gather): exposed likewise.
// The step: the pipeline's makespan + exposed DP reduction + the optimizer update + exposed
// parameter gather, on pipeline rank 0 (which finishes last in 1F1B and interleaved 1F1B).
// MFU: the model FLOPs of the step (model_flops.h) over step · devices · the chip's dense bf16
// peak, in both conventions.
#ifndef PERFSIM_SIM_STEP_STEP_TIME_H_
#define PERFSIM_SIM_STEP_STEP_TIME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/step/model_flops.h"
#include "sim/step/pipeline_schedule.h"
#include "sim/step/step_memory.h"
#include "sim/step/training_step.h"

namespace perfsim {

// One micro-batch through one block on one device.
struct BlockTiming {
  double forward_seconds = 0;
  double backward_seconds = 0;
  // Of the forward: the attention core (QKᵀ, softmax, PV), which core_attn recomputes.
  double core_forward_seconds = 0;
  // Some op of the block could not be timed (the simulator's untimed list): a lower bound.
  bool lower_bound = false;
};

class BlockTimer {
 public:
  virtual ~BlockTimer() = default;
  // Layer `layer`'s attention block and FFN block (dense or MoE, as the model says).
  virtual absl::StatusOr<BlockTiming> Attention(const TrainingStep& step, int64_t layer) = 0;
  virtual absl::StatusOr<BlockTiming> Ffn(const TrainingStep& step, int64_t layer) = 0;
  // The embedding lookup (first chunk) and the LM head with its loss (last chunk).
  virtual absl::StatusOr<BlockTiming> Embedding(const TrainingStep& step) = 0;
  virtual absl::StatusOr<BlockTiming> LmHead(const TrainingStep& step) = 0;
  // The optimizer update of `elements` parameters held by one device.
  virtual absl::StatusOr<double> OptimizerSeconds(const TrainingStep& step, double elements) = 0;
};

struct StepBreakdown {
  // Seconds on pipeline rank 0 over the whole step (every micro-batch), recompute included
  // in the block it repeats.
  double attention_seconds = 0;
  double moe_seconds = 0;
  double dense_ffn_seconds = 0;
  double embedding_head_seconds = 0;
  double recompute_seconds = 0;  // of the above, what the remat policy repeated
  double optimizer_seconds = 0;
  // Communication not hidden behind compute, by kind.
  double exposed_fsdp_seconds = 0;
  double exposed_cp_seconds = 0;
  double exposed_dp_seconds = 0;
  double exposed_param_gather_seconds = 0;
  double pipeline_send_seconds = 0;  // per send (delays its receiver)
  // The pipeline's idle time on rank 0: makespan - its busy time.
  double bubble_seconds = 0;
};

struct StepPrediction {
  double step_seconds = 0;
  double tokens_per_second = 0;             // the whole job
  double tokens_per_second_per_device = 0;  // GBS·S / step / devices
  // Per chip: a TPU v7x chip shows 2 devices (compute.devices_per_chip).
  double tokens_per_second_per_chip = 0;
  StepFlops flops_maxtext;
  StepFlops flops_megatron;
  double model_tflops_per_device_maxtext = 0;   // flops / step / devices / 1e12
  double model_tflops_per_device_megatron = 0;
  double mfu_maxtext = 0;   // of the chip's dense bf16 peak
  double mfu_megatron = 0;
  StepBreakdown breakdown;
  StepMemory memory;
  PipelineSpec pipeline;
  double pipeline_seconds = 0;       // the schedule's makespan
  double bubble_fraction = 0;        // rank 0's idle share of the makespan
  double analytic_bubble_fraction = 0;  // (p-1)/(m+p-1), or its interleaved form
  int64_t distinct_layer_kinds = 0;  // block simulations the step needed (per kind)
  bool lower_bound = false;          // some block was only a lower bound
};

struct PredictStepOptions {
  // Search the largest micro-batch that fits (StepMemory::max_micro_batch): several pipeline
  // simulations more; a sweep turns it off.
  bool search_max_micro_batch = true;
};

absl::StatusOr<StepPrediction> PredictStep(const TrainingStep& step, const Chip& chip,
                                           const Topology& topology, BlockTimer& timer,
                                           const PredictStepOptions& options = {});

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_STEP_TIME_H_
