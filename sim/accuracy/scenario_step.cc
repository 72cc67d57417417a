// e2e_train rows: a published whole training step -> the TrainingStepSpec perfsim composes
// (scenario.h documents the mapping).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/accuracy/scenario_internal.h"
#include "sim/accuracy/text_fields.h"
#include "sim/moe/model_registry.h"
#include "sim/step/training_step.h"

namespace perfsim {
namespace {

// Lower-case letters and digits only: "Llama 4 Maverick 17B-128E" -> "llama4maverick17b128e".
std::string Squash(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return out;
}

// The built-in model whose name (underscores dropped) begins the squashed model cell; the
// longest such name wins (qwen3_235b_a22b over a hypothetical qwen3).
std::optional<std::string> ResolveModelCell(absl::string_view cell) {
  const std::string squashed = Squash(cell);
  std::string best;
  for (const std::string& name : BuiltinModelNames()) {
    const std::string key = Squash(name);
    if (absl::StartsWith(squashed, key) && key.size() > Squash(best).size()) best = name;
  }
  if (best.empty()) return std::nullopt;
  return best;
}

// The first integer in `text` ("512 seqs (4194304 tokens)" -> 512).
std::optional<int64_t> FirstInteger(absl::string_view text) {
  size_t i = 0;
  while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  size_t j = i;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
  int64_t value = 0;
  if (i == j || !absl::SimpleAtoi(text.substr(i, j - i), &value)) return std::nullopt;
  return value;
}

// "v5p-256 (4x4x8)" -> "4x4x8"; "v6e-256 (16x16 2D torus)" -> "16x16": the first word of
// digits joined by 'x'.
std::optional<std::string> SliceShape(absl::string_view text) {
  for (absl::string_view word : absl::StrSplit(text, absl::ByAnyChar(" (),;"), absl::SkipEmpty())) {
    const std::vector<std::string> parts = absl::StrSplit(word, 'x');
    if (parts.size() < 2) continue;
    bool digits = true;
    for (const std::string& p : parts) {
      digits = digits && !p.empty() &&
               std::all_of(p.begin(), p.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    }
    if (digits) return std::string(word);
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<MappedRow> MapStepRow(const Measurement& row, const Chip& chip,
                                     const std::string& chip_name) {
  StepRowScenario s;
  s.chip = chip_name;
  s.unit = *row.unit;
  const std::string model_cell = CellText(row, "model");
  const std::optional<std::string> model = ResolveModelCell(model_cell);
  if (!model.has_value()) {
    return SkippedRow(absl::StrCat("model '", model_cell, "' is not a built-in model"));
  }
  s.step.set_model(*model);
  s.step.set_hw(chip_name);
  const std::optional<int64_t> devices = FirstInteger(CellText(row, "num_chips"));
  if (!devices.has_value() || *devices < 1) {
    return CellError(row, "num_chips", "the number of devices of the step");
  }
  s.step.set_devices(*devices);
  const std::optional<int64_t> gbs = FirstInteger(CellText(row, "global_batch"));
  if (!gbs.has_value() || *gbs < 1) return CellError(row, "global_batch", "sequences per step");
  s.step.set_global_batch(*gbs);
  const std::optional<int64_t> seq = FirstInteger(CellText(row, "seq_len"));
  if (!seq.has_value() || *seq < 1) return CellError(row, "seq_len", "tokens per sequence");
  s.step.set_seq_len(*seq);

  const std::string parallelism = CellText(row, "parallelism");
  if (absl::Status st = ApplyParallelismString(parallelism, s.step); !st.ok()) {
    return CellError(row, "parallelism", st.message());
  }
  StepParallelism& p = *s.step.mutable_parallelism();
  p.set_uneven_pipeline(true);
  const std::string group = CellText(row, "group");
  const bool maxtext = ContainsNoCase(group, "maxtext");
  const bool megatron = ContainsNoCase(group, "megatron");
  std::vector<std::string> notes;
  if (maxtext) {
    // MaxText: no gradient accumulation; a data rank's whole batch is one micro-batch.
    const int64_t shards = BatchShardsOf(s.step);
    if (shards < 1 || *gbs % shards != 0) {
      return CellError(row, "parallelism", "a split of the global batch over dp · fsdp");
    }
    s.step.set_micro_batch(*gbs / shards);
  }
  if (megatron && s.step.parallelism().fsdp() <= 1) {
    p.set_zero(ZERO_1);
    notes.push_back("distributed optimizer (ZeRO-1)");
  }
  // "recompute mlp+moe_act" in the parallelism cell: selective recompute.
  const size_t recompute = parallelism.find("recompute ");
  if (recompute != std::string::npos) {
    StepRemat& remat = *s.step.mutable_remat();
    remat.set_policy(REMAT_SELECTIVE);
    const std::string modules(absl::StripAsciiWhitespace(
        absl::string_view(parallelism).substr(recompute + 10)));
    for (absl::string_view m : absl::StrSplit(modules, absl::ByAnyChar("+, "), absl::SkipEmpty())) {
      remat.add_recompute(std::string(m));
    }
  }
  // MaxText's dropping path (megablox=False, sparse_matmul=False) is the capacity einsum.
  const std::string kernel = CellText(row, "backend_kernel");
  if (ContainsNoCase(kernel, "sparse_matmul=false") || ContainsNoCase(kernel, "dropping moe")) {
    s.step.set_moe_backend("capacity_einsum");
  }
  // MaxText's "custom" policy with offload recomputes the layer and offloads its input to the
  // host; without recompute these rows' activations exceed HBM several times over.
  if (ContainsNoCase(kernel, "remat custom")) {
    s.step.mutable_remat()->set_policy(REMAT_FULL);
    notes.push_back("MaxText's custom remat + offload as full recompute (host offload not timed)");
  }

  const std::string dtype = absl::AsciiStrToLower(CellText(row, "dtype"));
  if (absl::StrContains(dtype, "mxfp8")) {
    s.step.mutable_precision()->set_compute(PRECISION_MXFP8);
  } else if (absl::StrContains(dtype, "fp8")) {
    s.step.mutable_precision()->set_compute(PRECISION_FP8);
  }
  if (absl::StrContains(dtype, "fp32 weights")) {
    s.step.mutable_precision()->set_param_bytes(4);
    s.step.mutable_precision()->set_master_weight_bytes(0);
  }
  if (absl::StrContains(dtype, "bf16 optimizer")) {
    s.step.mutable_precision()->set_optimizer_state_bytes(2);
  }
  if (s.step.precision().compute() != PRECISION_BF16) {
    notes.push_back("FP8 GEMMs in attention and dense FFNs; MoE experts at bf16");
  }
  s.step.set_force_balanced_routing(true);

  // The slice: a TPU shape from the interconnect cell, a GPU count (with the NVLink domain the
  // cell states, "every 32 GPUs ... in one NVL domain").
  const std::string interconnect = CellText(row, "interconnect_topology");
  if (chip.is_tpu()) {
    const std::optional<std::string> shape = SliceShape(interconnect);
    if (!shape.has_value()) {
      return SkippedRow(absl::StrCat("interconnect_topology '", interconnect,
                                     "' names no TPU slice shape (like 4x4x8)"));
    }
    s.mesh = *shape;
  } else {
    // NVLink domains: the cell's "every N GPUs ... in one NVL domain", else the chip's domain
    // or, when the devices are not a multiple of it, the fewest equal domains that fit (256
    // GB200s: 4 racks of 64).
    const int64_t chip_domain = std::max<int64_t>(1, chip.proto().interconnect().domain_max_chips());
    int64_t domain = std::min(*devices, chip_domain);
    const size_t every = interconnect.find("every ");
    if (every != std::string::npos && ContainsNoCase(interconnect, "nvl domain")) {
      const std::optional<int64_t> stated = FirstInteger(interconnect.substr(every));
      if (stated.has_value() && *stated > 0) domain = *stated;
    }
    int64_t nodes = (*devices + domain - 1) / domain;
    while (nodes < *devices && *devices % nodes != 0) ++nodes;
    s.mesh = nodes == 1 ? absl::StrCat(*devices) : absl::StrCat(nodes, "x", *devices / nodes);
    if (*devices % chip_domain != 0 && *devices > chip_domain) {
      notes.push_back(absl::StrCat(nodes, " NVLink domains of ", *devices / nodes, " GPUs"));
    }
  }

  const std::string unit_cell = absl::AsciiStrToLower(CellText(row, "unit"));
  switch (*row.unit) {
    case MeasurementUnit::kSeconds:
    case MeasurementUnit::kSecondsPerStep:
    case MeasurementUnit::kMilliseconds:
    case MeasurementUnit::kMicroseconds:
      s.metric = StepMetric::kStepSeconds;
      break;
    case MeasurementUnit::kTokensPerSecond:
      s.metric = StepMetric::kTokensPerSecondPerDevice;
      if (!absl::StrContains(unit_cell, "/gpu") && !absl::StrContains(unit_cell, "/chip") &&
          !absl::StrContains(unit_cell, "/device")) {
        return SkippedRow("e2e_train: tokens/s of the whole job are not mapped; per device is");
      }
      break;
    case MeasurementUnit::kTeraflopsPerSecond:
      s.metric = StepMetric::kModelTflopsPerDevice;
      s.megatron_flops = !maxtext;
      break;
    case MeasurementUnit::kGigabytesPerSecond:
      return SkippedRow("e2e_train: a bandwidth is not a step metric");
  }
  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(s.step);
  if (!step.ok()) return CellError(row, "parallelism", step.status().message());
  s.description = absl::StrCat(
      *model, " step on ", *devices, " x ", chip_name, " (mesh ", s.mesh, "), GBS ", *gbs, " x ",
      *seq, ", dp ", step->dp(), " fsdp ", step->fsdp(), " tp ", step->tp(), " ep ", step->ep(),
      " pp ", step->pp(), " vp ", step->vp(), " cp ", step->cp(), ", MBS ",
      step->proto().micro_batch(), ", ", step->microbatches(), " micro-batches");
  for (const std::string& note : notes) absl::StrAppend(&s.description, "; ", note);
  MappedRow mapped;
  mapped.train_step = std::move(s);
  return mapped;
}

}  // namespace perfsim
