// HBM per device of a whole training step (issue 13): parameters, master weights, gradients,
// optimizer state, the activations the backward needs under the remat policy, and transient
// buffers, against the chip's capacity; and the largest micro-batch that fits.
//
//   PERFSIM_ASSIGN_OR_RETURN(StepMemory m, StepHbm(step, chip));
//   m.total_bytes <= m.capacity_bytes == m.fits;
//   m.max_micro_batch;      // the largest MBS (dividing GBS / (dp · fsdp)) that fits; 0: none
//
// Which device: every pipeline rank is evaluated and the fullest reported (`stage`): rank 0
// holds the embedding and the most micro-batches in flight, the last rank the LM head and the
// logits.
//
// Parameters (elements, per layer): attention ModelConfig::AttentionParamsPerLayer() / tp;
// dense FFN matrices·D·F_dense / tp; MoE experts E/ep · matrices·D·F / tp, the router D·E and
// the shared experts matrices·D·F_shared / tp; two norm scales 2·D. The embedding V·D / tp on
// rank 0; the LM head V·D / tp (unless tied) and the final norm on the last rank. The fsdp
// axis shards every weight (ZeRO-3); zero >= 3 on the dp axis likewise.
// Bytes: parameters param_bytes; master weights and optimizer moments (2 for AdamW, 1 for SGD
// with momentum) sharded over the data-parallel group when zero >= 1 (Megatron's distributed
// optimizer; the experts' group is dp·fsdp·cp / ep); gradients grad_bytes, sharded when
// zero >= 2.
//
// Activations, per token of a micro-batch and per layer (compute in bf16: 2 bytes; the
// router's f32 logits 4; sizes with H, F or the latent split over tp; D-sized ones over tp only
// with sequence parallelism):
//   attention  norm input D, norm output D, q/k/v, the output O and the f32 log-sum-exp of a
//              flash kernel (no S² term); MLA also its q and kv latents before and after their
//              norms
//   dense FFN  norm input D, norm output D, h0, h1 and the activation (gated: 3·F)
//   MoE        norm input D, norm output D, router logits and probabilities E (f32), the K
//              dispatched copies of the token K·D, their h0, h1, activation 3·K·F, the expert
//              outputs K·D, and the shared expert like a dense FFN
// Remat: FULL keeps each layer's input D only; SELECTIVE drops the named modules' internals
// (core_attn: O and lse; mlp: the dense FFN's h0/h1/activation; moe_act: the experts'
// activation; moe: everything in the MoE block but its input; layernorm: the norm outputs;
// mla_up_proj: MLA's q, k, v; shared_experts: the shared expert's internals).
// A device holds the activations of every (chunk, micro-batch) in flight at once: the peak the
// pipeline schedule leaves on it (pipeline_schedule.h max_in_flight), each the tokens of one
// micro-batch (MBS·S / cp) through the chunk's layers.
// Transient: the logits of a micro-batch on the last rank, f32, V / tp per token; with fsdp > 1
// two layers' gathered weights (the one running and the one prefetched).
#ifndef PERFSIM_SIM_STEP_STEP_MEMORY_H_
#define PERFSIM_SIM_STEP_STEP_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sim/hw/chip.h"
#include "sim/step/training_step.h"

namespace perfsim {

struct StepMemory {
  int64_t stage = 0;  // the pipeline rank reported
  double parameter_bytes = 0;
  double master_weight_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_state_bytes = 0;
  double activation_bytes = 0;
  double transient_bytes = 0;
  double total_bytes = 0;
  int64_t capacity_bytes = 0;
  bool fits = false;
  // The largest micro-batch (a divisor of GBS / (dp · fsdp)) whose total fits; 0 when even 1
  // does not.
  int64_t max_micro_batch = 0;
  // Parameters of the whole model (elements), for reports.
  double model_parameters = 0;
};

// Parameters (elements) of layer `layer` on one device, before any data-parallel sharding:
// `dense` is replicated over the data-parallel group (attention and dense FFN after tp, norms,
// the router, shared experts after tp), `experts` the routed experts after ep and tp.
struct LayerParams {
  double dense = 0;
  double experts = 0;
};
LayerParams ParamsOfLayer(const TrainingStep& step, int64_t layer);

// Activation bytes one token leaves for the backward in layer `layer` (above).
double ActivationBytesPerToken(const TrainingStep& step, int64_t layer);

// `search_max_micro_batch` false leaves max_micro_batch 0 (a sweep evaluates every micro-batch
// as its own plan and skips the search).
absl::StatusOr<StepMemory> StepHbm(const TrainingStep& step, const Chip& chip,
                                   bool search_max_micro_batch = true);

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_STEP_MEMORY_H_
