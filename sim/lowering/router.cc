#include "sim/lowering/router.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

// softmax over the last dimension, named `over`.
Tensor Softmax(NamedBuilder& nb, const Tensor& l, char over) {
  const std::string axis(1, over);
  Tensor m = nb.Reduce(l, axis, Opcode::kMaximum);
  Tensor e = nb.Unary(Opcode::kExp, nb.Sub(l, m));
  return nb.Div(e, nb.Reduce(e, axis));
}

// One-hot TKE of ids TK over `num_experts`.
Tensor OneHot(NamedBuilder& nb, const Tensor& ids, int64_t num_experts) {
  const int64_t t = ids.size('T'), k = ids.size('K');
  Tensor iota = nb.Iota(PrimitiveType::kS32, "TKE", {t, k, num_experts}, 'E');
  Tensor hit = nb.Compare(iota, ids, ComparisonDirection::kEq);
  return nb.Select(hit, nb.Full(kF32, "TKE", {t, k, num_experts}, 1),
                   nb.Full(kF32, "TKE", {t, k, num_experts}, 0));
}

// The group-limited choice of DeepSeek-V3: scores TE -> mask TE (1 in kept groups).
Tensor GroupMask(NamedBuilder& nb, const ModelConfig& model, const Tensor& scores) {
  const int64_t t = scores.size('T'), e = scores.size('E');
  const int64_t g = model.num_groups(), per = e / g;
  Tensor grouped = nb.Reshape(scores, "TGE", {t, g, per});
  Tensor group_score;
  if (model.proto().router().group_score() == GROUP_SCORE_MAX) {
    group_score = nb.Reduce(grouped, "E", Opcode::kMaximum);
  } else {
    auto [top2, unused] = nb.TopK(grouped, 2, 'K');
    group_score = nb.Reduce(top2, "K");
  }
  auto [unused_values, group_ids] = nb.TopK(group_score, model.topk_groups(), 'K');
  Tensor iota = nb.Iota(PrimitiveType::kS32, "TKG", {t, model.topk_groups(), g}, 'G');
  Tensor hit = nb.Compare(iota, group_ids, ComparisonDirection::kEq);
  Tensor hit_f = nb.Select(hit, nb.Full(kF32, "TKG", {t, model.topk_groups(), g}, 1),
                           nb.Full(kF32, "TKG", {t, model.topk_groups(), g}, 0));
  Tensor kept = nb.Reduce(hit_f, "K");  // TG: 1 for the kept groups
  Tensor kept_e = nb.BroadcastTo(kept, "TGE", {{'E', per}});
  return nb.Reshape(kept_e, "TE", {t, e});
}

}  // namespace

Tensor ScatterToExperts(NamedBuilder& nb, const RouterOutputs& r, const Tensor& tk) {
  return nb.Einsum("TK,TKE->TE", tk, r.onehot);
}

Tensor GatherFromExperts(NamedBuilder& nb, const RouterOutputs& r, const Tensor& te) {
  return nb.Einsum("TE,TKE->TK", te, r.onehot);
}

RouterOutputs LowerRouter(NamedBuilder& nb, const ModelConfig& model, const Tensor& x,
                          const Tensor& w, const Tensor* bias, const Tensor* score_bias) {
  const RouterSpec& spec = model.proto().router();
  const int64_t e = model.num_experts(), k = model.experts_per_token();
  RouterOutputs r;
  r.logits = nb.Einsum("TD,DE->TE", nb.Convert(x, kF32), nb.Convert(w, kF32), kF32);
  if (bias != nullptr) r.logits = nb.Add(r.logits, nb.Convert(*bias, kF32));
  switch (spec.kind()) {
    case ROUTER_KIND_SOFTMAX_TOPK: {
      r.probs = Softmax(nb, r.logits, 'E');
      auto [values, ids] = nb.TopK(r.probs, k);
      r.chosen = values;
      r.ids = ids;
      r.weights = values;
      if (spec.renormalize()) {
        r.norm = nb.Reduce(values, "K");
        r.weights = nb.Div(values, r.norm);
      }
      break;
    }
    case ROUTER_KIND_TOPK_SOFTMAX: {
      auto [values, ids] = nb.TopK(r.logits, k);
      r.ids = ids;
      r.chosen = values;
      r.weights = Softmax(nb, values, 'K');
      break;
    }
    case ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK: {
      r.probs = nb.Unary(Opcode::kLogistic, r.logits);
      Tensor choice = r.probs;
      if (score_bias != nullptr) choice = nb.Add(choice, nb.Convert(*score_bias, kF32));
      if (model.num_groups() > 1) {
        Tensor mask = GroupMask(nb, model, choice);
        Tensor zero = nb.Full(kF32, "TE", {choice.size('T'), e}, 0);
        Tensor kept = nb.Compare(mask, zero, ComparisonDirection::kGt);
        choice = nb.Select(kept, choice,
                           nb.Full(kF32, "TE", {choice.size('T'), e},
                                   -std::numeric_limits<double>::infinity()));
      }
      auto [unused, ids] = nb.TopK(choice, k);
      r.ids = ids;
      r.onehot = OneHot(nb, ids, e);
      r.chosen = GatherFromExperts(nb, r, r.probs);
      r.weights = r.chosen;
      if (spec.renormalize()) {
        r.norm = nb.AddScalar(nb.Reduce(r.chosen, "K"), 1e-20);
        r.weights = nb.Div(r.chosen, r.norm);
      }
      r.weights = nb.MulScalar(r.weights, spec.routed_scaling_factor());
      break;
    }
    case ROUTER_KIND_SIGMOID_INPUT_PRESCALE: {
      auto [values, ids] = nb.TopK(r.logits, k);
      r.ids = ids;
      r.chosen = values;
      r.input_scale = nb.Unary(Opcode::kLogistic, values);
      r.weights = nb.Full(kF32, "TK", {values.size('T'), k}, 1);
      break;
    }
    default:
      r.weights = nb.Fail("router: expected a router kind; got none", r.logits);
      return r;
  }
  if (r.onehot.op == nullptr) r.onehot = OneHot(nb, r.ids, e);
  r.dense = ScatterToExperts(nb, r, r.weights);
  return r;
}

RouterGrads LowerRouterGrad(NamedBuilder& nb, const ModelConfig& model, const Tensor& x,
                            const Tensor& w, const RouterOutputs& r, const Tensor& d_weights,
                            const Tensor* d_input_scale) {
  const RouterSpec& spec = model.proto().router();
  Tensor dl;  // TE
  switch (spec.kind()) {
    case ROUTER_KIND_SOFTMAX_TOPK: {
      // w = v / n with n = Σ_K v: dv = (dw - Σ_K dw·w) / n.
      Tensor dv = d_weights;
      if (spec.renormalize()) {
        dv = nb.Div(nb.Sub(d_weights, nb.Reduce(nb.Mul(d_weights, r.weights), "K")), r.norm);
      }
      Tensor dp = ScatterToExperts(nb, r, dv);
      // softmax: dl = p·(dp − Σ_E p·dp).
      dl = nb.Mul(r.probs, nb.Sub(dp, nb.Reduce(nb.Mul(r.probs, dp), "E")));
      break;
    }
    case ROUTER_KIND_TOPK_SOFTMAX: {
      Tensor dv = nb.Mul(r.weights, nb.Sub(d_weights, nb.Reduce(nb.Mul(d_weights, r.weights), "K")));
      dl = ScatterToExperts(nb, r, dv);
      break;
    }
    case ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK: {
      // w = c·v/n (n = Σ_K v + eps when renormalised, else n = 1): dv = c·(dw − Σ_K dw·v/n)/n.
      Tensor dw_scaled = nb.MulScalar(d_weights, spec.routed_scaling_factor());
      Tensor dv = dw_scaled;
      if (spec.renormalize()) {
        Tensor v_over_n = nb.Div(r.chosen, r.norm);
        dv = nb.Div(nb.Sub(dw_scaled, nb.Reduce(nb.Mul(dw_scaled, v_over_n), "K")), r.norm);
      }
      Tensor ds = ScatterToExperts(nb, r, dv);
      // σ' = σ·(1 − σ).
      Tensor one_minus = nb.AddScalar(nb.MulScalar(r.probs, -1), 1);
      dl = nb.Mul(ds, nb.Mul(r.probs, one_minus));
      break;
    }
    case ROUTER_KIND_SIGMOID_INPUT_PRESCALE: {
      Tensor one_minus = nb.AddScalar(nb.MulScalar(r.input_scale, -1), 1);
      Tensor dv = nb.Mul(*d_input_scale, nb.Mul(r.input_scale, one_minus));
      dl = ScatterToExperts(nb, r, dv);
      break;
    }
    default:
      return {};
  }
  RouterGrads g;
  if (spec.has_bias()) g.db = nb.Reduce(dl, "T");
  Tensor w32 = nb.Convert(w, kF32);
  g.dx = nb.Convert(nb.Einsum("TE,DE->TD", dl, w32, kF32), x.type());
  g.dw = nb.Convert(nb.Einsum("TD,TE->DE", nb.Convert(x, kF32), dl, kF32), w.type());
  return g;
}

}  // namespace perfsim
