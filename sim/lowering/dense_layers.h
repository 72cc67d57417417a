// Lowerings of the whole training step's non-attention, non-MoE blocks (issue 13): the dense
// FFN, the token embedding, the LM head with its loss, and the AdamW update. Each returns a
// LoweredLayer (layer.h): a per-device module over the block's tensor-parallel group only
// (num_partitions = tp), every entry instruction annotated with its block and phase, every
// parameter with its role (the instructions of called computations, a reduce's add or the
// optimizer's fusion, carry the block only). Backward passes are written by hand (no
// autodiff), like the MoE backends'.
//
//   DenseFfnSpec spec = DenseFfnSpec::FromModel(model, /*batch=*/4, /*seq=*/4096, /*tp=*/8,
//                                               Phase::kForwardBackward);
//   PERFSIM_ASSIGN_OR_RETURN(LoweredLayer ffn, LowerDenseFfn(spec));
//   ffn.parameters[0].name == "x";  ffn.outputs[1].name == "dx";
//
// Dimension names (named_builder.h): B batch, S sequence, D model, F FFN hidden, V vocabulary,
// T tokens (B·S flattened), N the optimizer's flat parameter shard. B and S are per device
// (the data-parallel shard); D is never split; F and V are split over tp (Megatron's column-
// and row-parallel linears, vocab-parallel embedding and cross-entropy). Activations are
// replicated over tp. A module's gradients are complete over its tp group (summed where
// Megatron sums them); reductions over data parallelism belong to the step composition.
//
// Numerics. Norms, the softmax cross-entropy and the optimizer compute in f32 whatever the
// storage types; matmuls run in the activation type (weights of another param type are
// converted first; the logits are accumulated into f32). Results are stored back in the
// activation type (activations, dx) or the param type (weight gradients, new params).
//
// Goldens: tools/jax/dense_layer_goldens.py (tests/testdata/dense_layers).
#ifndef PERFSIM_SIM_LOWERING_DENSE_LAYERS_H_
#define PERFSIM_SIM_LOWERING_DENSE_LAYERS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/model.pb.h"
#include "sim/ir/shape.h"
#include "sim/lowering/layer.h"
#include "sim/moe/model_config.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

// Pre-norm gated FFN with a residual add:
//   n = norm(x)                                   RMSNorm: x / sqrt(mean_D(x²) + eps) · scale
//                                                 LayerNorm: (x − μ)/sqrt(var + eps)·scale + bias
//   y = x + (act(n·w0) ⊙ (n·w1)) · wo             act: silu, gelu (tanh form, ffn.h), clipped
// (without the `x +` when residual is false). TP: w0, w1 column-parallel [D, F/tp], wo
// row-parallel [F/tp, D] with an all-reduce of y's partial sums; the backward all-reduces the
// norm output's gradient (Megatron's "f" operator), so dx is complete on every device.
//
// Parameters: x [B,S,D] (activation), norm_scale [D], (norm_bias [D] for LayerNorm), w0 [D,F],
// w1 [D,F], wo [F,D] (trained weights), then for fwd_bwd dy [B,S,D] (cotangent). Outputs: y,
// then for fwd_bwd dx, d_norm_scale, (d_norm_bias), d_w0, d_w1, d_wo: the gradients of
// sum(y·dy), one per parameter in parameter order.
struct DenseFfnSpec {
  int64_t batch = 0;    // B per device
  int64_t seq = 0;      // S
  int64_t d_model = 0;  // D
  int64_t ffn_dim = 0;  // F, global (F/tp per device)
  int64_t tp = 1;
  Phase phase = Phase::kForward;
  ActivationSpec activation;  // must be gated
  NormSpec norm;              // kind RMSNorm or LayerNorm; epsilon unset: 1e-6
  bool residual = true;
  PrimitiveType activation_type = PrimitiveType::kF32;
  PrimitiveType param_type = PrimitiveType::kF32;
  // FP8 (f8e4m3fn) GEMMs for 16-bit activations and weights (NamedBuilder::set_gemm_type).
  bool fp8_gemms = false;

  // F = dense_ffn_dim, the model's activation, norm and dtypes.
  static DenseFfnSpec FromModel(const ModelConfig& model, int64_t batch, int64_t seq, int64_t tp,
                                Phase phase);
};
absl::StatusOr<LoweredLayer> LowerDenseFfn(const DenseFfnSpec& spec);

// Token embedding: y[b, s] = table[ids[b, s]]. TP (Megatron's VocabParallelEmbedding): each
// device holds rows [r·V/tp, (r+1)·V/tp) of the table, looks up the ids in its range (others
// read row 0 and are zeroed) and the partial rows are all-reduced. The backward scatter-adds
// dy's rows into the local table's gradient (accumulated in f32).
//
// Parameters: ids [B,S] s32 (activation), table [V,D] (trained weight), then for fwd_bwd dy
// [B,S,D] (cotangent). Outputs: y [B,S,D], then for fwd_bwd d_table [V,D]. Ids outside [0, V)
// select no row (y is 0 there), as the masked lookup does.
struct EmbeddingSpec {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t vocab_size = 0;  // V, global (V/tp per device)
  int64_t d_model = 0;
  int64_t tp = 1;
  Phase phase = Phase::kForward;
  PrimitiveType activation_type = PrimitiveType::kF32;
  PrimitiveType param_type = PrimitiveType::kF32;

  static EmbeddingSpec FromModel(const ModelConfig& model, int64_t batch, int64_t seq, int64_t tp,
                                 Phase phase);
};
absl::StatusOr<LoweredLayer> LowerEmbedding(const EmbeddingSpec& spec);

// Final RMSNorm (or LayerNorm), logits = n·W_outᵀ [B,S,V] in f32, softmax cross-entropy against
// the labels, mean over the B·S tokens of this device:
//   loss = mean_{b,s} (log Σ_v exp(l[b,s,v]) − l[b,s,label[b,s]]).
// TP (Megatron's vocab-parallel cross-entropy): W_out [V/tp, D] per device; the max, the sum
// of exponentials and the label's logit are all-reduced over tp (max, sum, sum); the backward
// all-reduces the norm output's gradient. fwd_bwd differentiates the loss itself (seed 1: the
// loss is the top of the step, so there is no cotangent parameter):
//   dl = (softmax(l) − onehot(label)) / (B·S),  dn = dl·W_out,  dW_out = dlᵀ·n.
//
// Parameters: h [B,S,D] (activation), norm_scale [D], (norm_bias [D]), w_out [V,D] (named
// "embedding" when tied_embeddings: the embedding's table, whose two gradients the step
// composition adds) (trained weights), labels [B,S] s32 (activation). Outputs: loss (f32
// scalar), then for fwd_bwd dh, d_norm_scale, (d_norm_bias), d_w_out (or d_embedding).
struct LmHeadSpec {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t vocab_size = 0;
  int64_t d_model = 0;
  int64_t tp = 1;
  Phase phase = Phase::kForward;
  NormSpec norm;
  bool tied_embeddings = false;
  PrimitiveType activation_type = PrimitiveType::kF32;
  PrimitiveType param_type = PrimitiveType::kF32;

  static LmHeadSpec FromModel(const ModelConfig& model, int64_t batch, int64_t seq, int64_t tp,
                              Phase phase);
};
absl::StatusOr<LoweredLayer> LowerLmHead(const LmHeadSpec& spec);

// One AdamW step on a flat shard of N parameters, in f32 (optax.adamw with eps_root = 0, which
// is torch.optim.AdamW's update; decoupled weight decay applied to every element):
//   m' = b1·m + (1 − b1)·g            v' = b2·v + (1 − b2)·g²
//   m̂ = m'/(1 − b1^t)                 v̂ = v'/(1 − b2^t)
//   p' = p − lr·(m̂/(sqrt(v̂) + eps) + weight_decay·p)
// b1, b2, eps and weight_decay are constants of the module; the learning rate lr and the step
// number t (from 1, as f32) are scalar parameters, since a schedule changes them every step.
// The update is one multi-output loop fusion (kind=kLoop, computation adamw_update), as XLA
// compiles an optimizer step: its time is HBM traffic, (2·bytes(param) + bytes(grad) + 16)·N
// bytes (28·N for f32), for N up to ~1e9 in one flat vector.
//
// Parameters: param [N] (trained weight, param_type: an f32 master copy or bf16), grad [N]
// (activation: the block's input, grad_type), m [N], v [N] (f32 optimizer state, frozen
// weights: held like weights, no gradient), lr, count (f32 scalars, activation). Outputs:
// new_param [N] (param_type), new_m, new_v [N] (f32). Every entry instruction is
// PHASE_OPTIMIZER; the fusion's own instructions carry the block only.
struct OptimizerSpec {
  int64_t num_params = 0;  // N
  PrimitiveType param_type = PrimitiveType::kF32;
  PrimitiveType grad_type = PrimitiveType::kF32;
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-4;  // optax.adamw's default
};
absl::StatusOr<LoweredLayer> LowerAdamW(const OptimizerSpec& spec);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_DENSE_LAYERS_H_
