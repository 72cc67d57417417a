// Model FLOPs of one training step, in the two conventions users read MFU in (issue 13).
//
//   PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel("deepseek_v3"));
//   StepFlops f = ModelFlopsPerStep(model, {.sequences = 2048, .seq_len = 4096},
//                                   FlopConvention::kMegatron);
//   f.total;            // FLOPs of the whole step, all devices (forward + backward)
//   f.total / (step_seconds · devices · peak_flops)   // MFU
//
// "Model FLOPs" count the matmuls a step needs by the model's definition, forward + backward
// (= 3x forward: the backward's data and weight gradients), whatever the implementation
// recomputes (rematerialisation is not counted: it is hardware FLOPs, not model FLOPs) and
// whatever it wastes (padding, dropped tokens). A multiply-add counts 2. Per sequence of S
// tokens and per layer, T = S tokens, H query heads, Hkv key/value heads, Dh head dim:
//
// MaxText (MaxText/maxtext_utils.py calculate_tflops_training_per_device):
//   attention weights  qkv 2·T·D·(H + 2·Hkv)·Dh + out 2·T·D·H·Dh
//                      MLA: q 2·T·(D·q_lora + q_lora·H·(nope+rope)) (q_lora = 0: 2·T·D·H·(nope+rope)),
//                           kv 2·T·(D·(kv_lora + rope) + kv_lora·H·(nope + v)), out 2·T·D·H·v
//   attention core     causal: half of the non-causal 4·T·S·H·Dh (MLA: 2·T·S·H·(nope+rope+v)/2);
//                      a SLIDING_WINDOW layer counts 4·T·min(W, S)·H·Dh / 2, a CHUNKED layer
//                      4·(⌊S/W⌋·W² + (S mod W)²)·H·Dh / 2 (Llama 4's chunked attention)
//   FFN                dense: 2·T·D·F·(a + 1), a = 2 when gated (len(mlp_activations)), else 1;
//                      MoE: the router 2·T·D·E + (K + shared experts)·2·T·D·F_moe·(a + 1)
//   LM head            2·T·D·V ("embedding_flops"; the input embedding lookup is free)
//   total              3 · (all of the above): weights and attention core alike. MTP modules
//                      are not counted (MaxText does not).
// Megatron (megatron/training/training.py num_floating_point_operations), per token:
//   3·2·[ D·(F_dense·a'·n_dense + (F_moe·K + F_shared)·a'·n_moe)         a' = 3 gated, else 2
//         + n_layers·attn + mtp·(3·D + 2·D²) + D·V·(mtp + 1) ]
//   attn (GQA) = D·(H + 2·Hkv)·Dh + H·Dh·S/2·2 + H·Dh·D
//   attn (MLA) = q_lora·(D + H·(nope + rope) + 1)  (q_lora = 0: D·H·(nope + rope))
//                + kv_lora·(D + H·(nope + v) + 1) + D·rope + H·v·D
//                + S·H·(nope + rope)/2 + S·H·v/2
//   where n_layers, n_dense, n_moe include the MTP layers (each a copy of the last layer's
//   kind). The router is not counted; causal attention counts half of S² for every layer,
//   sliding window or not (Megatron has no window term).
// The two conventions agree on the FFN and projections of a plain GQA model and differ in: the
// router (MaxText counts it), MTP (Megatron counts it), the norms folded into MLA's terms
// (Megatron's "+ 1"), and local attention (MaxText shortens it, Megatron does not).
#ifndef PERFSIM_SIM_STEP_MODEL_FLOPS_H_
#define PERFSIM_SIM_STEP_MODEL_FLOPS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "sim/moe/model_config.h"

namespace perfsim {

enum class FlopConvention { kMaxText, kMegatron };
// "maxtext", "megatron".
absl::string_view FlopConventionName(FlopConvention convention);

struct StepTokens {
  int64_t sequences = 1;  // sequences in the step (global batch, all micro-batches)
  int64_t seq_len = 1;    // S
  int64_t mtp_layers = 0;  // multi-token-prediction modules trained (Megatron counts them)
};

struct StepFlops {
  double total = 0;            // forward + backward, every device together
  double attention_core = 0;   // of which QKᵀ and PV (what the causal halving applies to)
  double attention_weights = 0;  // q/k/v/out (MLA: its down/up) projections
  double ffn = 0;              // dense FFN, routed and shared experts, router where counted
  double lm_head = 0;          // the output projection over the vocabulary (and MTP's)
  double mtp_extra = 0;        // Megatron's MTP norms and projection (0 in MaxText)
};

// The model FLOPs of one step. Needs model.has_attention() and model.proto().vocab_size() > 0
// for the attention and LM-head terms (they are 0 without them).
StepFlops ModelFlopsPerStep(const ModelConfig& model, const StepTokens& tokens,
                            FlopConvention convention);

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_MODEL_FLOPS_H_
