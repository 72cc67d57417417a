#include "sim/moe/step_spec.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {

absl::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "fwd";
    case Phase::kForwardBackward:
      return "fwd_bwd";
  }
  return "?";
}

absl::StatusOr<Phase> ParsePhase(absl::string_view text) {
  if (text == "fwd") return Phase::kForward;
  if (text == "fwd_bwd") return Phase::kForwardBackward;
  return absl::InvalidArgumentError(
      absl::StrCat("expected a phase (fwd or fwd_bwd); got '", text, "'"));
}

absl::StatusOr<Parallelism> ParseParallelism(absl::string_view text) {
  Parallelism p;
  if (text.empty()) return p;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, '=');
    int64_t value = 0;
    int64_t* field = kv.first == "dp"     ? &p.dp
                     : kv.first == "ep"   ? &p.ep
                     : kv.first == "tp"   ? &p.tp
                     : kv.first == "fsdp" ? &p.fsdp
                                          : nullptr;
    if (field == nullptr || !absl::SimpleAtoi(kv.second, &value) || value < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected AXIS=N with AXIS one of dp, ep, tp, fsdp and N >= 1; got '", part, "'"));
    }
    *field = value;
  }
  return p;
}

std::string ParallelismToString(const Parallelism& p) {
  return absl::StrCat("dp=", p.dp, ",ep=", p.ep, ",tp=", p.tp, ",fsdp=", p.fsdp);
}

absl::string_view GroupedMatmulFormName(GroupedMatmulForm form) {
  switch (form) {
    case GroupedMatmulForm::kNative:
      return "native";
    case GroupedMatmulForm::kRaggedDot:
      return "ragged_dot";
    case GroupedMatmulForm::kMaskedDot:
      return "masked_dot";
  }
  return "?";
}

absl::StatusOr<GroupedMatmulForm> ParseGroupedMatmulForm(absl::string_view text) {
  for (GroupedMatmulForm form : {GroupedMatmulForm::kNative, GroupedMatmulForm::kRaggedDot,
                                 GroupedMatmulForm::kMaskedDot}) {
    if (GroupedMatmulFormName(form) == text) return form;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected a grouped-matmul form (native, ragged_dot, masked_dot); got '", text, "'"));
}

const GmmTiling* TilingKnob(const BackendKnobs& knobs, absl::string_view role) {
  const std::pair<absl::string_view, const GmmTiling*> roles[] = {
      {"wi.fwd", &knobs.wi.fwd}, {"wi.dlhs", &knobs.wi.dlhs}, {"wi.drhs", &knobs.wi.drhs},
      {"wo.fwd", &knobs.wo.fwd}, {"wo.dlhs", &knobs.wo.dlhs}, {"wo.drhs", &knobs.wo.drhs}};
  for (const auto& [name, tiling] : roles) {
    if (name == role) return tiling;
  }
  return nullptr;
}

StepSpec StepSpec::Defaults(ModelConfig model) {
  StepSpec spec{.model = std::move(model)};
  // MaxText's defaults (backends.md 1a): 512 rows, 1024 along embed and mlp, for every kernel.
  const GmmTiling wi{512, 1024, 1024};
  const GmmTiling wo{512, 1024, 1024};
  spec.knobs.wi = {wi, wi, wi};
  spec.knobs.wo = {wo, wo, wo};
  return spec;
}

// The plausibility limits of step_spec.h, before anything multiplies the spec's numbers
// unchecked (tokens(), num_devices(), the lowerings' shapes).
absl::Status StepSpec::ValidateLimits() const {
  const StepSpec& spec = *this;
  const Parallelism& p = spec.parallelism;
  if (spec.batch < 1 || spec.seq < 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected batch >= 1 and seq >= 1; got batch ",
                                                   spec.batch, ", seq ", spec.seq));
  }
  PERFSIM_ASSIGN_OR_RETURN(const int64_t tokens,
                           CheckedMul("tokens = batch * seq", spec.batch, spec.seq));
  PERFSIM_RETURN_IF_ERROR(CheckAtMost("tokens = batch * seq", tokens, kMaxStepTokens));
  if (p.dp < 1 || p.fsdp < 1 || p.ep < 1 || p.tp < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected every mesh axis >= 1; got ", ParallelismToString(p)));
  }
  PERFSIM_ASSIGN_OR_RETURN(const int64_t devices, CheckedProduct("devices = dp * fsdp * ep * tp",
                                                                 {p.dp, p.fsdp, p.ep, p.tp}));
  PERFSIM_RETURN_IF_ERROR(CheckAtMost("devices = dp * fsdp * ep * tp", devices, kMaxStepDevices));

  const ModelConfig& m = spec.model;
  const int64_t width = std::max({m.d_model(), m.expert_ffn_dim(), m.num_experts(),
                                  m.num_shared_experts() * m.shared_expert_ffn_dim()});
  constexpr absl::string_view kActivation =
      "bytes of the largest activation [tokens * K, max(D, F, H, E)] in f32";
  PERFSIM_ASSIGN_OR_RETURN(const int64_t bytes,
                           CheckedProduct(kActivation, {tokens, m.experts_per_token(), width, 4}));
  PERFSIM_RETURN_IF_ERROR(CheckAtMost(kActivation, bytes, kMaxStepBufferBytes));

  const BackendKnobs& k = spec.knobs;
  for (const auto& [name, projection] : {std::pair{"wi", &k.wi}, std::pair{"wo", &k.wo}}) {
    for (const auto& [kernel, t] :
         {std::pair{"fwd", &projection->fwd}, std::pair{"dlhs", &projection->dlhs},
          std::pair{"drhs", &projection->drhs}}) {
      for (const auto& [dim, v] :
           {std::pair{"tm", t->tm}, std::pair{"tk", t->tk}, std::pair{"tn", t->tn}}) {
        PERFSIM_RETURN_IF_ERROR(
            CheckAtMost(absl::StrCat("tiling ", name, ".", kernel, " ", dim), v, kMaxStepTile));
      }
    }
  }
  PERFSIM_RETURN_IF_ERROR(CheckAtMost("fused_tile", k.fused_tile, kMaxStepTile));
  PERFSIM_RETURN_IF_ERROR(CheckAtMost("align_size", k.align_size, kMaxStepTile));
  for (const auto& [name, factor] : {std::pair{"capacity_factor", k.capacity_factor},
                                     std::pair{"ragged_buffer_factor", k.ragged_buffer_factor}}) {
    if (!std::isfinite(factor) || factor > kMaxStepBufferFactor) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": expected a finite number at most ",
                                                     kMaxStepBufferFactor, "; got ", factor));
    }
  }
  return absl::OkStatus();
}

absl::Status StepSpec::Validate() const {
  const Parallelism& p = parallelism;
  PERFSIM_RETURN_IF_ERROR(ValidateLimits());
  if (tokens() % token_shards() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected batch·seq divisible by dp·fsdp·ep to split tokens over devices; got ", tokens(),
        " tokens over dp·fsdp·ep = ", token_shards()));
  }
  if (model.d_model() % p.fsdp != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected D divisible by fsdp (FSDP shards every weight's D); got D = ",
                     model.d_model(), ", fsdp = ", p.fsdp));
  }
  if (model.num_experts() % p.ep != 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected E divisible by ep; got E = ",
                                                   model.num_experts(), ", ep = ", p.ep));
  }
  if (model.expert_ffn_dim() % p.tp != 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected F divisible by tp; got F = ",
                                                   model.expert_ffn_dim(), ", tp = ", p.tp));
  }
  if (model.num_shared_experts() > 0 &&
      (model.num_shared_experts() * model.shared_expert_ffn_dim()) % p.tp != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected the shared expert width divisible by tp; got ",
        model.num_shared_experts() * model.shared_expert_ffn_dim(), ", tp = ", p.tp));
  }
  return absl::OkStatus();
}

}  // namespace perfsim
