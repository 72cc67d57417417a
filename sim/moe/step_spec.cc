#include "sim/moe/step_spec.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

absl::Status StepSpec::Validate() const {
  const Parallelism& p = parallelism;
  if (batch < 1 || seq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected batch >= 1 and seq >= 1; got batch ", batch, ", seq ", seq));
  }
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
