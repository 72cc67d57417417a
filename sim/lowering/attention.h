// Lowering one transformer attention block, forward or forward+backward, to a per-device SPMD
// module over its tensor-parallel group (issue 13; the contract is sim/lowering/layer.h).
//
//   AttentionLoweringSpec spec = AttentionLoweringSpec::FromModel(model, /*layer=*/0,
//                                                                 /*batch=*/2, /*seq=*/4096);
//   spec.tp = 8;
//   spec.phase = Phase::kForwardBackward;
//   PERFSIM_ASSIGN_OR_RETURN(LoweredLayer layer, LowerAttention(spec));
//   PrintModule(*layer.module);   // HLO text; SimulateModule times it, RunModule runs it
//
// What is computed (plain ops: dot, exp, reduce, select under an iota-built mask; the backward
// is written by hand, no autodiff). Per batch element, H query heads, Hkv K/V heads, head width
// Dh, S positions:
//   GQA / MHA / MQA: q = x·wq, k = x·wk, v = x·wv; (QK RMSNorm per head, Qwen3); RoPE on q and
//     k (HF Llama's rotate_half; the layer's rope flag); query head h reads K/V head
//     h / (H/Hkv); s = q·kᵀ/√Dh under the layer's mask; p = softmax(s) in f32; o = p·v;
//     y = o·wo.
//   MLA (DeepSeek-V3): q = RMSNorm(x·wq_a)·wq_b (or x·wq without q_lora_rank), split per head
//     into [nope | rope]; x·wkv_a = [c_kv | k_rope] (k_rope one per token, shared by the heads);
//     RMSNorm(c_kv)·wkv_b = [k_nope | v] per head; RoPE on q_rope and k_rope (rotate_half);
//     s = (q_nope·k_noperᵀ + q_rope·k_ropeᵀ)/√(nope + rope); o = p·v; y = o·wo.
//   Masks (every scope is causal): key j is visible from query i iff j <= i, and for a sliding
//   window W also i − W < j, for chunked attention W also j / W == i / W.
//   The backward is the standard attention VJP: dP = dO·Vᵀ, dS = P ⊙ (dP − rowsum(dO ⊙ O)),
//   dQ = dS·K·scale, dK = dSᵀ·Q·scale, dV = Pᵀ·dO, then through RoPE (its transpose), the
//   norms and the projections. Gradients are of sum(y · dy).
//
// Tensor parallelism (Megatron): the query heads (and the K/V heads) are split over the tp
// group; wq, wk, wv (MLA: wq_b, wkv_b) are column-parallel, wo is row-parallel and the output
// is all-reduced over the group (with sequence_parallel: x arrives split on S and is
// all-gathered first, y is reduce-scattered on S instead). With Hkv < tp every K/V head is
// replicated on tp/Hkv consecutive devices, which all-reduce its weight gradients among
// themselves. MLA's down projections wq_a, wkv_a and its norms are replicated: their gradients
// are all-reduced over the group. The backward of the row-parallel wo needs no collective (dy
// is replicated, or all-gathered under sequence parallelism); the input gradient dx, made of
// the column-parallel projections' partial sums, is all-reduced (reduce-scattered under
// sequence parallelism).
//
// Entry parameters, in order (each with its role on the parameter's annotation):
//   x [B, S, D] (ROLE_ACTIVATION; [B, S/tp, D] under sequence parallelism), then the weights
//   (ROLE_TRAINED_WEIGHT):
//     GQA: wq [D, H, Dh], wk [D, Hkv, Dh], wv [D, Hkv, Dh], wo [H, Dh, D],
//          with qk_norm also q_norm [Dh], k_norm [Dh];
//     MLA: wq_a [D, q_lora], q_norm [q_lora], wq_b [q_lora, H, nope + rope] (q_lora_rank > 0;
//          else wq [D, H, nope + rope]), wkv_a [D, kv_lora + rope], kv_norm [kv_lora],
//          wkv_b [kv_lora, H, nope + v], wo [H, v, D];
//   then for fwd_bwd dy [B, S, D] (ROLE_COTANGENT; split like x).
// Per device H and Hkv are divided by tp (Hkv < tp: one K/V head per device). The root is a
// tuple: y, then for fwd_bwd dx and one gradient per weight in parameter order, complete
// (summed over the devices that hold the weight), sharded like the weight.
//
// Annotations: every entry instruction has block BLOCK_ATTENTION and phase PHASE_FORWARD or
// PHASE_BACKWARD (dy and everything computed from it); parameters have their role. Not
// lowered: the pre-attention norm of the residual stream and the residual add (the layer's
// composition owns them), attention biases and sinks (GPT-OSS), context parallelism.
#ifndef PERFSIM_SIM_LOWERING_ATTENTION_H_
#define PERFSIM_SIM_LOWERING_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/model.pb.h"
#include "sim/ir/primitive_type.h"
#include "sim/lowering/layer.h"
#include "sim/moe/model_config.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

// How the attention core (scores, mask, softmax, P·V and their backward) is emitted.
enum class AttentionKernel {
  kPlain,  // plain ops, which the interpreter runs
  kFlash,  // one custom-call each way (below), which the simulator times as one kernel
};

// The flash-attention kernels (AttentionKernel::kFlash). Operands and results, per device
// (Dqk: the query/key head width, MLA nope + rope; Dv the value head width):
//   perfsim.flash_attention      (q [B,S,H,Dqk], k [B,S,Hk,Dqk], v [B,S,Hk,Dv])
//                                -> (o [B,S,H,Dv], lse [B,H,S] f32: the softmax's log-sum-exp)
//   perfsim.flash_attention_bwd  (q, k, v, o, lse, dO [B,S,H,Dv]) -> (dq, dk, dv) shaped as q, k, v
// with Hk = H/Hkv K/V heads for GQA (query head h reads K/V head h/(H/Hk)); MLA passes one key
// per head, [k_nope | k_rope broadcast over the heads], and sums the rope part's gradient back
// over the heads. The typed annotation says kernel KERNEL_FLASH_ATTENTION (_BWD) with tm =
// block_q and tn = block_kv; backend_config is JSON
//   {"custom_call_config":{"cost_estimate":{"flops":F,"transcendentals":T,"bytes_accessed":M}},
//    "flash_attention":{"block_q":128,"block_kv":128,"mask":"causal|sliding_window|chunked",
//                       "window_tokens":W,"scale":1/sqrt(Dqk)}}
// where the cost estimate (Pallas's convention, which sim/cost reads) counts the tiles the
// mask leaves visible (attention.cc FlashConfig). The interpreter has no implementation of
// these targets: a flash module is for timing, the plain one for numerics.
inline constexpr absl::string_view kFlashAttentionTarget = "perfsim.flash_attention";
inline constexpr absl::string_view kFlashAttentionBwdTarget = "perfsim.flash_attention_bwd";

struct AttentionLoweringSpec {
  // The model's attention description (proto/model.proto AttentionSpec) and D.
  AttentionSpec attention;
  int64_t d_model = 0;
  // 0-based layer: picks the scope (attention.layer_scopes) and whether q and k rotate
  // (nope_layer_interval), as ModelConfig::LayerAttentionScope / LayerHasRope do.
  int64_t layer = 0;
  // Per-device batch B and the full sequence S, tokens.
  int64_t batch = 1;
  int64_t seq = 1;
  // Tensor-parallel group size, and Megatron sequence parallelism over it.
  int64_t tp = 1;
  bool sequence_parallel = false;
  Phase phase = Phase::kForward;
  // Element type of x, the weights, y and the gradients (the matmuls produce it; the softmax
  // and the norms compute in f32).
  PrimitiveType dtype = PrimitiveType::kF32;
  // The epsilon of the QK and MLA latent RMSNorms.
  double norm_epsilon = 1e-6;
  AttentionKernel kernel = AttentionKernel::kPlain;
  // FP8 (f8e4m3fn) projections (NamedBuilder::set_gemm_type); the attention core stays in
  // `dtype` (TransformerEngine's default: FP8 attention is a separate option).
  bool fp8_gemms = false;
  // kFlash: the kernel's query and key/value blocks, tokens (each divides seq).
  int64_t flash_block_q = 128;
  int64_t flash_block_kv = 128;

  // The spec of `model`'s layer `layer` (attention, D, activation dtype, norm epsilon when
  // the model gives one), tp = 1, forward.
  static AttentionLoweringSpec FromModel(const ModelConfig& model, int64_t layer, int64_t batch,
                                         int64_t seq);

  // Every problem at once, one per line, as InvalidArgument "field: expected X; got Y"
  // (e.g. "tp: expected a divisor of the 6 query heads; got 4").
  absl::Status Validate() const;
};

// Validates `spec`, lowers the block and verifies the module.
absl::StatusOr<LoweredLayer> LowerAttention(const AttentionLoweringSpec& spec);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_ATTENTION_H_
