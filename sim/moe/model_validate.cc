// ValidateModelSpec: every check of a model description, collected rather than returned one at a
// time, so that a user fixing a file sees all of its problems in one run.
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sim/moe/model_config.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

// Sanity bounds that keep every derived count (parameters, FLOPs per token) inside int64 while
// leaving two orders of magnitude above the largest real models (F = 32768, E = 384, L = 94).
constexpr int64_t kMaxDimElements = int64_t{1} << 18;
constexpr int64_t kMaxExperts = int64_t{1} << 14;
constexpr int64_t kMaxLayers = int64_t{1} << 10;
// Heads (largest real: 128), attention windows (GPT-OSS 128, Llama 4 8192 tokens) and MTP depth
// (DeepSeek-V3: 1), with the same headroom.
constexpr int64_t kMaxHeads = int64_t{1} << 12;
constexpr int64_t kMaxWindowTokens = int64_t{1} << 30;
constexpr int64_t kMaxMtpDepth = 64;

std::string Got(int64_t value) {
  return value == 0 ? "got 0 (unset)" : absl::StrCat("got ", value);
}

class ModelChecker {
 public:
  explicit ModelChecker(ConfigProblems& problems) : problems_(problems) {}

  void Add(const std::string& path, const std::string& message) { problems_.Add(path, message); }
  void AddAt(const std::string& location, const std::string& path, const std::string& message) {
    problems_.AddAt(location, path, message);
  }

  // min <= value <= max.
  void InRange(const std::string& path, int64_t value, int64_t min, int64_t max) {
    if (value < min || value > max) {
      Add(path, absl::StrCat("expected ", min, " <= value <= ", max, "; ", Got(value)));
    }
  }
  void Equal(const std::string& path, int64_t value, int64_t expected, absl::string_view why) {
    if (value != expected) {
      Add(path, absl::StrCat("expected ", expected, " (", why, "); got ", value));
    }
  }
  // Finite and > 0 (a rope base, a norm epsilon); `below` is an exclusive upper bound, 0 = none.
  void PositiveDouble(const std::string& path, double value, double below = 0) {
    if (!(std::isfinite(value) && value > 0 && (below == 0 || value < below))) {
      Add(path, absl::StrCat("expected ", below == 0 ? "> 0" : absl::StrCat("in (0, ", below, ")"),
                             "; got ", FormatDouble(value)));
    }
  }
  void DTypeSet(const std::string& path, DType dtype) {
    if (DTypeSpelling(dtype).empty()) {
      Add(path, absl::StrCat("expected a dtype (DTYPE_BF16, DTYPE_F32, ...); got ",
                             dtype == DTYPE_UNSPECIFIED ? "unset" : absl::StrCat(dtype)));
    }
  }

 private:
  ConfigProblems& problems_;
};

bool IsRegistryName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_')) return false;
  }
  return true;
}

void CheckShapes(const ModelSpec& m, ModelChecker& check) {
  check.InRange("d_model", m.d_model(), 1, kMaxDimElements);
  check.InRange("expert_ffn_dim", m.expert_ffn_dim(), 1, kMaxDimElements);
  check.InRange("num_experts", m.num_experts(), 1, kMaxExperts);
  check.InRange("experts_per_token", m.experts_per_token(), 1,
                m.num_experts() > 0 ? std::min(m.num_experts(), kMaxExperts) : kMaxExperts);
  check.InRange("num_shared_experts", m.num_shared_experts(), 0, kMaxExperts);
  if (m.num_shared_experts() > 0 && m.shared_expert_ffn_dim() == 0) {
    check.AddAt("num_shared_experts", "shared_expert_ffn_dim",
                absl::StrCat("expected > 0 with ", m.num_shared_experts(),
                             " shared experts; got 0 (unset)"));
  } else if (m.num_shared_experts() > 0) {
    check.InRange("shared_expert_ffn_dim", m.shared_expert_ffn_dim(), 1, kMaxDimElements);
  } else {
    check.Equal("shared_expert_ffn_dim", m.shared_expert_ffn_dim(), 0, "no shared experts");
  }
  check.InRange("dense_ffn_dim", m.dense_ffn_dim(), 0, kMaxDimElements);
}

void CheckLayers(const ModelSpec& m, ModelChecker& check) {
  check.InRange("num_layers", m.num_layers(), 1, kMaxLayers);
  check.InRange("num_moe_layers", m.num_moe_layers(), 1, kMaxLayers);
  check.InRange("num_dense_layers", m.num_dense_layers(), 0, kMaxLayers);
  check.InRange("moe_layer_interval", m.moe_layer_interval(), 1, kMaxLayers);
  if (m.num_moe_layers() + m.num_dense_layers() != m.num_layers()) {
    check.Add("num_layers",
              absl::StrCat("expected num_moe_layers + num_dense_layers (", m.num_moe_layers(),
                           " + ", m.num_dense_layers(), " = ",
                           m.num_moe_layers() + m.num_dense_layers(), "); got ", m.num_layers()));
  }
  const int64_t interval = m.moe_layer_interval();
  if (interval > 1 && interval <= kMaxLayers && m.num_layers() >= 1 &&
      m.num_moe_layers() != m.num_layers() / interval) {
    // Interleaved layers (proto/model.proto): layer l is MoE when (l + 1) % interval == 0.
    check.Add("num_moe_layers",
              absl::StrCat("expected num_layers / moe_layer_interval (", m.num_layers(), " / ",
                           interval, " = ", m.num_layers() / interval,
                           ") with interleaved layers; got ", m.num_moe_layers()));
  }
  if (m.num_dense_layers() > 0 && m.dense_ffn_dim() == 0) {
    check.AddAt(
        "num_dense_layers", "dense_ffn_dim",
        absl::StrCat("expected > 0 with ", m.num_dense_layers(), " dense layers; got 0 (unset)"));
  }
}

void CheckActivation(const ModelSpec& m, ModelChecker& check) {
  const ActivationSpec& a = m.activation();
  switch (a.kind()) {
    case ACTIVATION_KIND_SILU:
    case ACTIVATION_KIND_GELU:
      if (a.clip_limit() != 0) {
        check.Add("activation.clip_limit",
                  "expected 0 (only CLIPPED_SWIGLU clips); got " + FormatDouble(a.clip_limit()));
      }
      if (a.sigmoid_alpha() != 0) {
        check.Add("activation.sigmoid_alpha", "expected 0 (only CLIPPED_SWIGLU has alpha); got " +
                                                  FormatDouble(a.sigmoid_alpha()));
      }
      return;
    case ACTIVATION_KIND_CLIPPED_SWIGLU:
      if (!a.gated()) check.Add("activation.gated", "expected true for CLIPPED_SWIGLU; got false");
      if (!(std::isfinite(a.clip_limit()) && a.clip_limit() > 0)) {
        check.Add("activation.clip_limit", "expected > 0; got " + FormatDouble(a.clip_limit()));
      }
      if (!(std::isfinite(a.sigmoid_alpha()) && a.sigmoid_alpha() > 0)) {
        check.Add("activation.sigmoid_alpha",
                  "expected > 0; got " + FormatDouble(a.sigmoid_alpha()));
      }
      return;
    case ACTIVATION_KIND_UNSPECIFIED:
    case ActivationKind_INT_MIN_SENTINEL_DO_NOT_USE_:
    case ActivationKind_INT_MAX_SENTINEL_DO_NOT_USE_:
      break;
  }
  check.Add(
      "activation.kind",
      absl::StrCat("expected ACTIVATION_KIND_SILU, _GELU or _CLIPPED_SWIGLU; got ",
                   a.kind() == ACTIVATION_KIND_UNSPECIFIED ? "unset" : absl::StrCat(a.kind())));
}

void CheckRouter(const ModelSpec& m, ModelChecker& check) {
  const RouterSpec& r = m.router();
  if (r.kind() == ROUTER_KIND_UNSPECIFIED || !RouterKind_IsValid(r.kind())) {
    check.Add("router.kind",
              absl::StrCat("expected ROUTER_KIND_SOFTMAX_TOPK, _TOPK_SOFTMAX, "
                           "_SIGMOID_BIAS_GROUPED_TOPK or _SIGMOID_INPUT_PRESCALE; got ",
                           r.kind() == ROUTER_KIND_UNSPECIFIED ? "unset" : absl::StrCat(r.kind())));
  }
  if (r.kind() == ROUTER_KIND_SIGMOID_INPUT_PRESCALE && m.experts_per_token() != 1) {
    check.Add("experts_per_token",
              absl::StrCat("expected 1 for ROUTER_KIND_SIGMOID_INPUT_PRESCALE (the router score "
                           "scales the expert input); got ",
                           m.experts_per_token()));
  }
  const int64_t experts = m.num_experts();
  const int64_t groups = r.num_groups();
  check.InRange("router.num_groups", groups, 1, experts > 0 ? experts : kMaxExperts);
  if (groups >= 1 && experts > 0 && experts % groups != 0) {
    check.Add("router.num_groups",
              absl::StrCat("expected a divisor of num_experts (", experts, "); got ", groups));
  }
  check.InRange("router.topk_groups", r.topk_groups(), 1, groups >= 1 ? groups : 1);
  if (groups > 1 && experts > 0 && experts % groups == 0 && r.topk_groups() >= 1 &&
      r.topk_groups() <= groups) {
    const int64_t per_group = experts / groups;
    if (m.experts_per_token() > r.topk_groups() * per_group) {
      check.Add("experts_per_token",
                absl::StrCat("expected <= topk_groups x experts per group (", r.topk_groups(),
                             " x ", per_group, " = ", r.topk_groups() * per_group, "); got ",
                             m.experts_per_token()));
    }
    if (r.group_score() == GROUP_SCORE_UNSPECIFIED || !GroupScore_IsValid(r.group_score())) {
      check.AddAt("router.num_groups", "router.group_score",
                  absl::StrCat("expected GROUP_SCORE_TOP2_SUM or GROUP_SCORE_MAX with ", groups,
                               " groups; got unset"));
    } else if (r.group_score() == GROUP_SCORE_TOP2_SUM && per_group < 2) {
      check.Add("router.group_score",
                absl::StrCat("expected groups of >= 2 experts for GROUP_SCORE_TOP2_SUM; got ",
                             per_group));
    }
  }
  if (!(std::isfinite(r.routed_scaling_factor()) && r.routed_scaling_factor() > 0)) {
    check.Add("router.routed_scaling_factor",
              "expected > 0; got " + FormatDouble(r.routed_scaling_factor()));
  }
  if (r.has_score_correction_bias() && r.kind() != ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK) {
    check.Add("router.has_score_correction_bias",
              "expected only with ROUTER_KIND_SIGMOID_BIAS_GROUPED_TOPK (DeepSeek-V3's "
              "score-correction bias shifts sigmoid scores for the choice); got it with another "
              "router kind");
  }
  check.DTypeSet("router.dtype", r.dtype());
}

// GQA: Hkv divides H, one head width Dh, no MLA sizes.
void CheckGqa(const AttentionSpec& a, ModelChecker& check) {
  const int64_t heads = a.num_query_heads();
  check.InRange("attention.num_kv_heads", a.num_kv_heads(), 1,
                heads >= 1 && heads <= kMaxHeads ? heads : kMaxHeads);
  if (heads >= 1 && a.num_kv_heads() >= 1 && a.num_kv_heads() <= heads &&
      heads % a.num_kv_heads() != 0) {
    check.Add("attention.num_kv_heads",
              absl::StrCat("expected a divisor of num_query_heads (", heads,
                           ": each K/V head serves a whole group of query heads); got ",
                           a.num_kv_heads()));
  }
  check.InRange("attention.head_dim", a.head_dim(), 1, kMaxDimElements);
  if (a.head_dim() > 0 && a.head_dim() % 2 != 0 && a.nope_layer_interval() != 1) {
    check.Add("attention.head_dim",
              absl::StrCat("expected an even width (the rotary embedding turns pairs of "
                           "elements); got ",
                           a.head_dim()));
  }
  if (a.has_mla()) {
    check.Add("attention.mla",
              "expected unset for ATTENTION_KIND_GQA (the MLA sizes belong to "
              "ATTENTION_KIND_MLA); got set");
  }
}

// MLA: every head has its own K and V, the head widths live in `mla`, and RoPE is on every layer
// (through the decoupled rope dimensions).
void CheckMla(const AttentionSpec& a, ModelChecker& check) {
  if (a.num_kv_heads() != a.num_query_heads()) {
    check.Add("attention.num_kv_heads",
              absl::StrCat("expected num_query_heads (", a.num_query_heads(),
                           ") for ATTENTION_KIND_MLA (every head has its own K and V); ",
                           Got(a.num_kv_heads())));
  }
  if (a.head_dim() != 0) {
    check.Add("attention.head_dim",
              absl::StrCat("expected unset for ATTENTION_KIND_MLA (the head widths are "
                           "mla.qk_nope_head_dim + mla.qk_rope_head_dim and mla.v_head_dim); got ",
                           a.head_dim()));
  }
  if (a.nope_layer_interval() != 0) {
    check.Add("attention.nope_layer_interval",
              absl::StrCat("expected 0 (unset) for ATTENTION_KIND_MLA (its rotary part is the "
                           "decoupled qk_rope_head_dim on every layer); got ",
                           a.nope_layer_interval()));
  }
  if (!a.has_mla()) {
    check.AddAt("attention.kind", "attention.mla",
                "expected kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim for "
                "ATTENTION_KIND_MLA; got unset");
    return;
  }
  const MlaSpec& mla = a.mla();
  check.InRange("attention.mla.q_lora_rank", mla.q_lora_rank(), 0, kMaxDimElements);
  check.InRange("attention.mla.kv_lora_rank", mla.kv_lora_rank(), 1, kMaxDimElements);
  check.InRange("attention.mla.qk_nope_head_dim", mla.qk_nope_head_dim(), 1, kMaxDimElements);
  check.InRange("attention.mla.qk_rope_head_dim", mla.qk_rope_head_dim(), 1, kMaxDimElements);
  if (mla.qk_rope_head_dim() > 0 && mla.qk_rope_head_dim() % 2 != 0) {
    check.Add("attention.mla.qk_rope_head_dim",
              absl::StrCat("expected an even width (the rotary embedding turns pairs of "
                           "elements); got ",
                           mla.qk_rope_head_dim()));
  }
  check.InRange("attention.mla.v_head_dim", mla.v_head_dim(), 1, kMaxDimElements);
}

// The per-layer scope pattern, its window and the NoPE interval, against num_layers.
void CheckAttentionLayers(const ModelSpec& m, ModelChecker& check) {
  const AttentionSpec& a = m.attention();
  bool any_local = false;
  for (int i = 0; i < a.layer_scopes_size(); ++i) {
    const AttentionScope scope = a.layer_scopes(i);
    switch (scope) {
      case ATTENTION_SCOPE_GLOBAL:
        continue;
      case ATTENTION_SCOPE_SLIDING_WINDOW:
      case ATTENTION_SCOPE_CHUNKED:
        any_local = true;
        continue;
      case ATTENTION_SCOPE_UNSPECIFIED:
      case AttentionScope_INT_MIN_SENTINEL_DO_NOT_USE_:
      case AttentionScope_INT_MAX_SENTINEL_DO_NOT_USE_:
        break;
    }
    check.Add(absl::StrCat("attention.layer_scopes[", i, "]"),
              absl::StrCat("expected ATTENTION_SCOPE_GLOBAL, _SLIDING_WINDOW or _CHUNKED; got ",
                           scope == ATTENTION_SCOPE_UNSPECIFIED ? "unset" : absl::StrCat(scope)));
  }
  if (m.num_layers() >= 1 && a.layer_scopes_size() > m.num_layers()) {
    check.Add("attention.layer_scopes",
              absl::StrCat("expected a pattern of at most num_layers (", m.num_layers(),
                           ") entries; got ", a.layer_scopes_size()));
  }
  if (any_local && a.local_window_tokens() == 0) {
    check.AddAt("attention.layer_scopes", "attention.local_window_tokens",
                "expected > 0 with sliding-window or chunked layers; got 0 (unset)");
  } else if (any_local) {
    check.InRange("attention.local_window_tokens", a.local_window_tokens(), 1, kMaxWindowTokens);
  } else if (a.local_window_tokens() != 0) {
    check.Add("attention.local_window_tokens",
              absl::StrCat("expected 0 (unset) when every layer is global (no sliding-window or "
                           "chunked entry in layer_scopes); got ",
                           a.local_window_tokens()));
  }
  check.InRange("attention.nope_layer_interval", a.nope_layer_interval(), 0,
                m.num_layers() >= 1 ? std::min(m.num_layers(), kMaxLayers) : kMaxLayers);
}

void CheckAttention(const ModelSpec& m, ModelChecker& check) {
  if (!m.has_attention()) return;  // A description of the MoE block alone.
  const AttentionSpec& a = m.attention();
  check.InRange("attention.num_query_heads", a.num_query_heads(), 1, kMaxHeads);
  switch (a.kind()) {
    case ATTENTION_KIND_GQA:
      CheckGqa(a, check);
      break;
    case ATTENTION_KIND_MLA:
      CheckMla(a, check);
      break;
    case ATTENTION_KIND_UNSPECIFIED:
    case AttentionKind_INT_MIN_SENTINEL_DO_NOT_USE_:
    case AttentionKind_INT_MAX_SENTINEL_DO_NOT_USE_:
      check.Add(
          "attention.kind",
          absl::StrCat("expected ATTENTION_KIND_GQA or ATTENTION_KIND_MLA; got ",
                       a.kind() == ATTENTION_KIND_UNSPECIFIED ? "unset" : absl::StrCat(a.kind())));
      break;
  }
  CheckAttentionLayers(m, check);
  if (a.has_rope_theta()) check.PositiveDouble("attention.rope_theta", a.rope_theta());
}

void CheckNorm(const ModelSpec& m, ModelChecker& check) {
  if (!m.has_norm()) return;
  const NormSpec& n = m.norm();
  if (n.kind() == NORM_KIND_UNSPECIFIED || !NormKind_IsValid(n.kind())) {
    check.Add("norm.kind",
              absl::StrCat("expected NORM_KIND_RMSNORM or NORM_KIND_LAYERNORM; got ",
                           n.kind() == NORM_KIND_UNSPECIFIED ? "unset" : absl::StrCat(n.kind())));
  }
  if (n.has_epsilon()) check.PositiveDouble("norm.epsilon", n.epsilon(), 1);
}

// Tied embeddings and MTP modules need an embedding; an MTP module is a decoder layer, so it
// needs the attention described too.
void CheckEmbeddings(const ModelSpec& m, ModelChecker& check) {
  if (m.tied_embeddings() && m.vocab_size() == 0) {
    check.AddAt("tied_embeddings", "vocab_size",
                "expected > 0 with tied_embeddings (the LM head reuses the embedding); got 0 "
                "(unset)");
  }
  check.InRange("mtp_depth", m.mtp_depth(), 0, kMaxMtpDepth);
  if (m.mtp_depth() > 0 && m.vocab_size() == 0) {
    check.AddAt("mtp_depth", "vocab_size",
                absl::StrCat("expected > 0 with ", m.mtp_depth(),
                             " MTP modules (each embeds and predicts tokens); got 0 (unset)"));
  }
  if (m.mtp_depth() > 0 && !m.has_attention()) {
    check.AddAt("mtp_depth", "attention",
                absl::StrCat("expected an attention description with ", m.mtp_depth(),
                             " MTP modules (each is one more decoder layer); got unset"));
  }
}

}  // namespace

absl::Status ValidateModelSpec(const ModelSpec& spec, const TextProtoSource* source) {
  ConfigProblems problems(source);
  ModelChecker check(problems);
  if (!IsRegistryName(spec.name())) {
    check.Add("name", absl::StrCat("expected lower-case letters, digits and '_' "
                                   "(e.g. \"deepseek_v3\"); got \"",
                                   spec.name(), "\""));
  }
  CheckShapes(spec, check);
  CheckLayers(spec, check);
  CheckActivation(spec, check);
  CheckRouter(spec, check);
  check.DTypeSet("param_dtype", spec.param_dtype());
  check.DTypeSet("activation_dtype", spec.activation_dtype());
  check.InRange("vocab_size", spec.vocab_size(), 0, int64_t{1} << 40);
  CheckAttention(spec, check);
  CheckNorm(spec, check);
  CheckEmbeddings(spec, check);
  return problems.ToStatus();
}

}  // namespace perfsim
