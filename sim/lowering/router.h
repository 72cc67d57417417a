// The router, shared by every backend: logits, expert choice and combine weights (forward), and
// the gradient of the router weights and of x through the routing weights (backward). Router
// math runs in f32 whatever the activation dtype (known_bugs.md #28).
//
// Logits l = x·W in f32, plus the router matmul bias b when the model has one (GPT-OSS:
// l = x·W + b; router.has_bias). Families (proto/model.proto RouterKind):
//   softmax_topk        p = softmax(l) over E; (w, ids) = top_k(p, K); renormalize: w /= Σ_K w
//                       (Qwen3's norm_topk_prob).
//   topk_softmax        (v, ids) = top_k(l, K); w = softmax(v) over K (Mixtral).
//   sigmoid_grouped     s = σ(l); choice by s + c (c the score-correction bias when the model
//                       has one: router.has_score_correction_bias), limited to the top groups
//                       (group score = sum of the group's top 2, or its max); w = s[ids] (no c);
//                       renormalize: w /= Σ_K w + 1e-20; w *= routed_scaling_factor
//                       (DeepSeek-V3).
//   sigmoid_prescale    (v, ids) = top_k(l, K); the expert input is x·σ(v); combine weight 1
//                       (Llama 4).
// The router bias b is trained: its gradient is Σ_T ∂L/∂l. The score-correction bias c gets no
// gradient: DeepSeek-V3 updates it by its load-balancing rule, not by SGD.
#ifndef PERFSIM_SIM_LOWERING_ROUTER_H_
#define PERFSIM_SIM_LOWERING_ROUTER_H_

#include "proto/model.pb.h"
#include "sim/lowering/named_builder.h"
#include "sim/moe/model_config.h"

namespace perfsim {

struct RouterOutputs {
  Tensor logits;    // TE f32
  Tensor ids;       // TK s32, the chosen experts (global ids)
  Tensor onehot;    // TKE f32, onehot[t,k,e] = (ids[t,k] == e)
  Tensor weights;   // TK f32, combine weights (1 for sigmoid_prescale)
  Tensor dense;     // TE f32, combine weights scattered over E (0 where not chosen)
  // sigmoid_prescale only: TK f32 factor each chosen expert's input is multiplied by.
  Tensor input_scale;
  // Residuals for the backward.
  Tensor probs;     // TE f32: softmax(l) (softmax_topk) or σ(l) (sigmoid_*)
  Tensor chosen;    // TK f32: the values top_k picked before renormalisation
  Tensor norm;      // TK-broadcastable T f32: the renormalisation divisor (when renormalised)
};

// x is TD in the activation dtype, w is DE; bias (the router matmul bias b) and score_bias
// (the score-correction bias c) are E f32, null when the model has none.
RouterOutputs LowerRouter(NamedBuilder& nb, const ModelConfig& model, const Tensor& x,
                          const Tensor& w, const Tensor* bias, const Tensor* score_bias);

struct RouterGrads {
  Tensor dx;  // TD, x's type
  Tensor dw;  // DE, w's type (not yet summed over devices)
  Tensor db;  // E f32, the router bias's gradient Σ_T ∂L/∂l (set when the model has a bias)
};

// d_weights: TK f32 gradient w.r.t. RouterOutputs::weights (zero tensor for sigmoid_prescale);
// d_input_scale: TK f32 gradient w.r.t. input_scale (sigmoid_prescale only, else unused).
RouterGrads LowerRouterGrad(NamedBuilder& nb, const ModelConfig& model, const Tensor& x,
                            const Tensor& w, const RouterOutputs& r, const Tensor& d_weights,
                            const Tensor* d_input_scale);

// The dense TE form of a TK tensor over the chosen experts: einsum("TK,TKE->TE").
Tensor ScatterToExperts(NamedBuilder& nb, const RouterOutputs& r, const Tensor& tk);
// The TK form of a TE tensor at the chosen experts: einsum("TE,TKE->TK").
Tensor GatherFromExperts(NamedBuilder& nb, const RouterOutputs& r, const Tensor& te);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_ROUTER_H_
