// moe_block and moe_layer_fused rows: one MoE layer's forward, simulated whole (scenario.h).
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sim/accuracy/scenario_internal.h"
#include "sim/accuracy/text_fields.h"
#include "sim/comm/topology.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr int64_t kMaxBlockExperts = 4096;
constexpr int64_t kMaxBlockWidth = 65536;
constexpr int64_t kMaxBlockDevices = 4096;
constexpr int64_t kMaxBlockTokens = int64_t{1} << 24;  // 16M: 4096 devices x 4096 tokens

// The one-chip slice of a TPU: "1x1x1" on the 3-D tori (v4, v5p, v7x), "1x1" on the 2-D ones.
std::optional<std::string> OneChipSlice(const Chip& chip) {
  for (const char* slice : {"1x1x1", "1x1"}) {
    if (Topology::Create(chip, slice).ok()) return std::string(slice);
  }
  return std::nullopt;
}

// The model dtype of a dtype word (bf16 when the cell names one perfsim's models lack).
DType ModelDType(PrimitiveType type) {
  if (type == PrimitiveType::kF8E4M3FN) return DTYPE_F8E4M3FN;
  if (type == PrimitiveType::kF8E5M2) return DTYPE_F8E5M2;
  if (type == PrimitiveType::kF16) return DTYPE_F16;
  if (type == PrimitiveType::kF32) return DTYPE_F32;
  return DTYPE_BF16;
}

}  // namespace

absl::StatusOr<MappedRow> MapBlockRow(const Measurement& row, const Chip& chip,
                                      const Scenario& scenario) {
  if (scenario.metric != ScenarioMetric::kTime) {
    return SkippedRow(absl::StrCat("unit '", CellText(row, "unit"),
                                   "': a whole MoE layer is compared as a time (us, ms, s)"));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> experts, OptionalIntegerColumn(row, "E"));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, OptionalIntegerColumn(row, "K"));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> hidden, OptionalIntegerColumn(row, "D"));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> ffn, OptionalIntegerColumn(row, "F"));
  if (!experts || !top_k || !hidden || !ffn || *experts == 0 || *top_k == 0 || *hidden == 0 ||
      *ffn == 0) {
    return SkippedRow("E, K, D and F: expected positive integers in every one");
  }
  if (*top_k > *experts) return CellError(row, "K", absl::StrCat("at most E = ", *experts));
  // Beyond any published MoE layer, and what keeps a simulation of the row short: every
  // measured layer has at most 384 experts, a model width of 16k and a few hundred GPUs.
  if (*experts > kMaxBlockExperts) {
    return CellError(row, "E", absl::StrCat("at most ", kMaxBlockExperts, " experts"));
  }
  if (*hidden > kMaxBlockWidth || *ffn > kMaxBlockWidth) {
    return CellError(row, *hidden > kMaxBlockWidth ? "D" : "F",
                     absl::StrCat("at most ", kMaxBlockWidth));
  }

  BlockScenario block;
  block.chip = scenario.chip;
  block.timing = scenario.timing;
  block.unit = scenario.unit;
  std::string assumptions;

  // Devices: "8", or "1? (not stated)".
  const std::string chips_text = CellText(row, "num_chips");
  const std::optional<int64_t> chips = LeadingInteger(chips_text);
  if (!chips.has_value() || *chips <= 0) {
    return SkippedRow("num_chips: expected the number of devices the layer ran on");
  }
  if (*chips > kMaxBlockDevices) {
    return CellError(row, "num_chips", absl::StrCat("at most ", kMaxBlockDevices, " devices"));
  }
  block.devices = *chips;
  if (ContainsNoCase(chips_text, "not stated") || ContainsNoCase(chips_text, "?")) {
    absl::StrAppend(&assumptions, "; the device count is not stated: ", block.devices,
                    " assumed");
  }
  if (*experts % block.devices != 0) {
    return SkippedRow(absl::StrCat("E = ", *experts, " is not a multiple of the ", block.devices,
                                   " devices: experts cannot be spread evenly"));
  }

  // Tokens: "32768 tokens", "1 tokens per rank", "M=512 tokens per rank".
  const std::string tokens_text = CellText(row, "tokens");
  std::optional<int64_t> tokens = LeadingInteger(tokens_text);
  if (!tokens.has_value()) {
    if (const std::optional<std::string> m = ParseKeyValues(tokens_text).Find({"M", "m", "T"})) {
      tokens = LeadingInteger(*m);
    }
  }
  if (!tokens.has_value() || *tokens <= 0) {
    return SkippedRow("tokens: expected a positive token count ('4096 tokens per rank')");
  }
  const bool per_rank = ContainsNoCase(tokens_text, "per rank") ||
                        ContainsNoCase(tokens_text, "per gpu") ||
                        ContainsNoCase(tokens_text, "per device");
  block.tokens = per_rank ? *tokens * block.devices : *tokens;
  if (block.tokens > kMaxBlockTokens) {
    return CellError(row, "tokens", absl::StrCat("at most ", kMaxBlockTokens, " tokens in all"));
  }

  if (chip.is_tpu()) {
    if (block.devices != 1) {
      return SkippedRow("a MoE layer on several TPU chips needs the slice shape; only one chip "
                        "is mapped");
    }
    const std::optional<std::string> slice = OneChipSlice(chip);
    if (!slice.has_value()) return SkippedRow(absl::StrCat(chip.name(), " has no one-chip slice"));
    block.mesh = *slice;
    block.backend = "megablox_gmm";
  } else {
    block.mesh = absl::StrCat(block.devices);
    block.backend = "ep_ragged_a2a";
  }
  const std::string backend_text = CellText(row, "backend_kernel");
  // One GPU running argsort + jax.lax.ragged_dot (validation/gpu/measure_moe.py): that is
  // sparse_ragged_dot, with no expert parallelism.
  if (chip.is_gpu() && block.devices == 1 && ContainsNoCase(backend_text, "ragged_dot")) {
    block.backend = "sparse_ragged_dot";
  }
  const bool fused = row.category == "moe_layer_fused" || ContainsNoCase(backend_text, "megamoe") ||
                     ContainsNoCase(backend_text, "mega_moe");
  if (fused) {
    absl::StrAppend(&assumptions,
                    "; a fused kernel, simulated as the unfused path it replaces (its overlap of "
                    "dispatch, GEMMs and combine is not modelled)");
  }

  // Dtypes: the first dtype word of the cell for weights and activations.
  const std::string dtype_text = CellText(row, "dtype");
  const PrimitiveType dtype = FindDtypeWord(dtype_text, "").value_or(PrimitiveType::kBF16);
  if (ContainsNoCase(dtype_text, "fp4")) {
    absl::StrAppend(&assumptions, "; FP4 weights as FP8 (perfsim has no 4-bit type)");
  }

  ModelSpec& m = block.model;
  m.set_name(absl::AsciiStrToLower(absl::StrCat(row.id, "_layer")));
  m.set_display_name(absl::StrCat(row.id, " MoE layer"));
  m.set_d_model(*hidden);
  m.set_expert_ffn_dim(*ffn);
  m.set_num_experts(*experts);
  m.set_experts_per_token(*top_k);
  m.set_num_shared_experts(0);
  m.set_dense_ffn_dim(0);
  m.set_num_layers(1);
  m.set_num_dense_layers(0);
  m.set_num_moe_layers(1);
  m.set_moe_layer_interval(1);
  m.mutable_activation()->set_kind(ACTIVATION_KIND_SILU);
  m.mutable_activation()->set_gated(true);
  m.mutable_router()->set_kind(ROUTER_KIND_TOPK_SOFTMAX);
  m.mutable_router()->set_renormalize(false);
  m.mutable_router()->set_routed_scaling_factor(1.0);
  m.mutable_router()->set_dtype(DTYPE_F32);
  m.set_param_dtype(ModelDType(dtype));
  m.set_activation_dtype(ModelDType(dtype));
  m.set_vocab_size(1);

  block.description = absl::StrCat(
      "MoE layer forward, E=", *experts, " K=", *top_k, " D=", *hidden, " F=", *ffn, ", ",
      block.tokens, " tokens on ", block.devices, " ", chip.name(), " (", block.backend, ", ep=",
      block.devices, ", ", PrimitiveTypeName(dtype), ", uniform routing)", assumptions);
  MappedRow mapped;
  mapped.block = std::move(block);
  return mapped;
}

}  // namespace perfsim
