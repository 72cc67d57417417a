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
  return problems.ToStatus();
}

}  // namespace perfsim
