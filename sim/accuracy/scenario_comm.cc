// kernel_ep_comm and collective rows (scenario.h).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/accuracy/ep_fields.h"
#include "sim/accuracy/scenario_internal.h"
#include "sim/accuracy/text_fields.h"
#include "sim/comm/topology.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr double kNcclTestBytes = 1073741824.0;  // 1 GiB per rank: a sweep's large-message end

// GPUs in one NVLink domain of the chip's default slice.
int64_t DomainSize(const Chip& chip) {
  for (const InterconnectDimension& d : chip.proto().interconnect().dimensions()) {
    if (d.kind() == DIMENSION_KIND_SWITCH) return d.size_chips();
  }
  return 1;
}

bool IsFp8(PrimitiveType type) { return BitWidth(type) == 8 && type != PrimitiveType::kS8; }

// The collective a text names: op_shape spellings ("AllGather") and the ones scenario.h lists
// for free text. The earliest mention wins.
std::optional<CollectiveKind> FindCollectiveKind(absl::string_view text, bool squash) {
  std::string lower = absl::AsciiStrToLower(text);
  struct Name {
    absl::string_view spelling;
    CollectiveKind kind;
  };
  static constexpr Name kFreeText[] = {{"all-to-all", CollectiveKind::kAllToAll},
                                       {"alltoall", CollectiveKind::kAllToAll},
                                       {"all-gather", CollectiveKind::kAllGather},
                                       {"all-reduce", CollectiveKind::kAllReduce},
                                       {"reduce-scatter", CollectiveKind::kReduceScatter}};
  static constexpr Name kSquashed[] = {{"alltoall", CollectiveKind::kAllToAll},
                                       {"allgather", CollectiveKind::kAllGather},
                                       {"allreduce", CollectiveKind::kAllReduce},
                                       {"reducescatter", CollectiveKind::kReduceScatter}};
  if (squash) {
    // "AllGather", "all_gather", "All-Gather" all read "allgather".
    lower.erase(
        std::remove_if(lower.begin(), lower.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) == 0; }),
        lower.end());
  }
  std::optional<CollectiveKind> found;
  size_t first = std::string::npos;
  for (const Name& name :
       squash ? absl::MakeConstSpan(kSquashed) : absl::MakeConstSpan(kFreeText)) {
    const size_t at = absl::string_view(lower).find(name.spelling);
    if (at != std::string::npos && (first == std::string::npos || at < first)) {
      first = at;
      found = name.kind;
    }
  }
  return found;
}

// The word after `label` in the text's words ("over Y" -> "y"), or nullopt.
std::optional<std::string> WordAfter(absl::string_view text, absl::string_view label) {
  const std::vector<std::string> words = Words(text);
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == label) return words[i + 1];
  }
  return std::nullopt;
}

struct ArrayText {
  PrimitiveType dtype = PrimitiveType::kBF16;
  double elements = 1;
};

// "bf16[2048, 8192]" anywhere in the text; nullopt when absent.
absl::StatusOr<std::optional<ArrayText>> FindArray(const Measurement& row) {
  const std::string& text = row.Field("op_shape").text;
  const size_t open = text.find('[');
  if (open == std::string::npos) return std::optional<ArrayText>();
  size_t start = open;
  while (start > 0 && std::isalnum(static_cast<unsigned char>(text[start - 1])) != 0) --start;
  const std::optional<PrimitiveType> dtype = ParseDtypeWord(text.substr(start, open - start));
  const size_t close = text.find(']', open);
  if (!dtype.has_value() || close == std::string::npos) {
    return CellError(row, "op_shape", "an array 'dtype[d0, d1, ...]' such as bf16[2048, 8192]");
  }
  ArrayText array;
  array.dtype = *dtype;
  for (absl::string_view piece : absl::StrSplit(text.substr(open + 1, close - open - 1), ',')) {
    const std::optional<int64_t> d = ParseInteger(piece);
    if (!d.has_value()) return CellError(row, "op_shape", "array dimensions that are integers");
    array.elements *= static_cast<double>(*d);
  }
  return std::optional<ArrayText>(array);
}

}  // namespace

absl::StatusOr<MappedRow> MapEpCommRow(const Measurement& row, const Chip& chip,
                                       Scenario scenario) {
  if (!chip.is_gpu()) {
    return SkippedRow(absl::StrCat("expert-parallel dispatch/combine is simulated on GPUs ",
                                   "(NVLink + InfiniBand); got ", chip.name()));
  }
  EpCommScenario ep;
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> experts, OptionalIntegerColumn(row, "E"));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, OptionalIntegerColumn(row, "K"));
  PERFSIM_ASSIGN_OR_RETURN(std::optional<int64_t> hidden, OptionalIntegerColumn(row, "D"));
  const std::optional<int64_t> tokens = LeadingInteger(row.Field("tokens").text);
  if (!experts || !top_k || !hidden || !tokens || *experts == 0 || *top_k == 0 || *hidden == 0 ||
      *tokens == 0) {
    return SkippedRow("E, K, D and tokens (per rank): expected positive integers in every one");
  }
  if (*top_k > *experts) return CellError(row, "K", absl::StrCat("at most E = ", *experts));

  // Nodes and GPUs per node from the topology text, the chip count, the NVLink domain.
  const std::string& topo_text = row.Field("interconnect_topology").text;
  std::optional<int64_t> nodes = IntegerBefore(topo_text, "node");
  std::optional<int64_t> per_node = IntegerBefore(topo_text, "gpu");
  const std::optional<int64_t> chips = LeadingInteger(row.Field("num_chips").text);
  if (!per_node.has_value()) {
    // Without a count per node: the chips over the nodes, else the chip's NVLink domain, but no
    // more GPUs than the row has ("NVL72 rack" with 8 chips: 8 GPUs of one 72-GPU domain).
    per_node = nodes.has_value() && chips.has_value() ? *chips / std::max<int64_t>(*nodes, 1)
                                                      : DomainSize(chip);
    if (!nodes.has_value() && chips.has_value() && *chips > 0) {
      per_node = std::min(*per_node, *chips);
    }
  }
  if (!nodes.has_value() && chips.has_value()) nodes = *chips / std::max<int64_t>(*per_node, 1);
  if (!nodes.has_value() || *nodes <= 0 || *per_node <= 0) {
    return SkippedRow("num_chips / interconnect_topology: expected the nodes and GPUs per node");
  }
  if (chips.has_value() && *chips != *nodes * *per_node) {
    return CellError(
        row, "num_chips",
        absl::StrCat(*nodes, " nodes x ", *per_node, " GPUs as interconnect_topology says"));
  }
  ep.nodes = *nodes;
  ep.gpus_per_node = *per_node;
  const int64_t ranks = ep.nodes * ep.gpus_per_node;
  if (*experts % ranks != 0) {
    return SkippedRow(absl::StrCat("E = ", *experts, " is not a multiple of the ", ranks,
                                   " ranks: experts cannot be spread evenly"));
  }
  ep.tokens_per_rank = *tokens;
  ep.hidden = *hidden;
  ep.top_k = *top_k;
  ep.experts = *experts;

  const std::string what = absl::StrCat(row.Field("op_shape").text, " ", row.Field("metric").text);
  const bool dispatch = ContainsNoCase(what, "dispatch");
  const bool combine = ContainsNoCase(what, "combine");
  if (dispatch == combine) {
    return SkippedRow("op_shape / metric: expected exactly one of dispatch or combine");
  }
  ep.op = dispatch ? EpOp::kDispatch : EpOp::kCombine;
  const std::string& dtype_text = row.Field("dtype").text;
  std::optional<PrimitiveType> dtype = FindDtypeWord(dtype_text, dispatch ? "dispatch" : "combine");
  if (!dtype.has_value()) dtype = FindDtypeWord(dtype_text, "");
  if (!dtype.has_value()) dtype = FindDtypeWord(row.Field("op_shape").text, "");
  if (!dtype.has_value()) return SkippedRow("dtype: expected a dtype word (fp8, bf16, ...)");
  ep.dtype = *dtype;
  // FP8 tokens carry one f32 scale per 128 elements.
  ep.bytes_per_token = IsFp8(ep.dtype)
                           ? static_cast<double>(ep.hidden + 4 * ((ep.hidden + 127) / 128))
                           : static_cast<double>(ByteWidth(ep.dtype) * ep.hidden);

  const std::string& backend = row.Field("backend_kernel").text;
  const EpKernelText kernel = ParseEpKernelText(backend);
  ep.mode = kernel.mode;
  ep.sms = kernel.sms;
  if (ContainsNoCase(backend, "node-limited") || ContainsNoCase(backend, "node limited")) {
    ep.node_limit = IntegerBefore(backend, "group").value_or(0);
  }
  if (ep.node_limit > 0 && *experts % ep.nodes != 0) {
    return SkippedRow("node-limited routing needs E to be a multiple of the nodes");
  }
  const std::string& metric = row.Field("metric").text;
  const std::vector<std::string> metric_words = Words(metric);
  const bool names_scale_out =
      ContainsNoCase(metric, "rdma") ||
      std::find(metric_words.begin(), metric_words.end(), "ib") != metric_words.end();
  const bool names_nvlink = ContainsNoCase(metric, "nvlink") || ContainsNoCase(metric, "nvl)");
  ep.bottleneck = names_nvlink                      ? LinkClass::kNvlink
                  : names_scale_out || ep.nodes > 1 ? LinkClass::kScaleOut
                                                    : LinkClass::kNvlink;
  if (ep.bottleneck == LinkClass::kScaleOut && ep.nodes == 1) {
    return SkippedRow("an RDMA / IB bandwidth needs more than one node");
  }

  scenario.description = absl::StrCat(
      "EP ", dispatch ? "dispatch" : "combine", " ", ep.nodes, " node", ep.nodes == 1 ? "" : "s",
      " x ", ep.gpus_per_node, " GPUs, ", ep.tokens_per_rank, " tokens/rank of ",
      ep.bytes_per_token, " B (", PrimitiveTypeName(ep.dtype), "), top-", ep.top_k, " of ",
      ep.experts, " experts",
      ep.node_limit > 0 ? absl::StrCat(", at most ", ep.node_limit, " nodes per token") : "",
      ", ", EpKernelModeName(ep.mode), " mode",
      ep.sms > 0 ? absl::StrCat(", ", ep.sms, " SMs") : std::string(),
      scenario.metric == ScenarioMetric::kTime ? ""
      : ep.bottleneck == LinkClass::kNvlink    ? "; NVLink received bytes/s"
                                               : "; RDMA (token, node) bytes/s");
  scenario.what = ep;
  MappedRow out;
  out.scenario = std::move(scenario);
  return out;
}

absl::StatusOr<MappedRow> MapCollectiveRow(const Measurement& row, const Chip& chip,
                                           Scenario scenario) {
  CollectiveScenario c;
  const std::string op_shape = CellText(row, "op_shape");
  std::optional<int64_t> axis_size;
  std::string axis;
  std::string array_text;
  if (!op_shape.empty()) {
    const std::optional<CollectiveKind> kind = FindCollectiveKind(op_shape, /*squash=*/true);
    if (!kind.has_value()) {
      return SkippedRow(absl::StrCat("op_shape: expected a collective (AllGather, ReduceScatter, ",
                                     "AllReduce, AllToAll); got '", op_shape, "'"));
    }
    c.kind = *kind;
    PERFSIM_ASSIGN_OR_RETURN(std::optional<ArrayText> array, FindArray(row));
    if (!array.has_value())
      return SkippedRow("op_shape: expected an array such as bf16[2048, 8192]");
    c.bytes = array->elements * static_cast<double>(ByteWidth(array->dtype));
    axis = WordAfter(op_shape, "over").value_or("");
    if (const std::optional<std::string> size = WordAfter(op_shape, "size")) {
      axis_size = ParseInteger(*size);
    }
    const std::optional<std::string> slice =
        FindSliceShape(row.Field("interconnect_topology").text);
    if (slice.has_value()) {
      c.slice = *slice;
    } else if (const std::optional<int64_t> n = LeadingInteger(row.Field("num_chips").text)) {
      c.slice = absl::StrCat(*n);
    }
    array_text = absl::StrCat(" of ", c.bytes, " B");
  } else {
    std::optional<CollectiveKind> kind;
    for (absl::string_view column : {"metric", "derived", "notes"}) {
      if (!kind.has_value()) kind = FindCollectiveKind(row.Field(column).text, /*squash=*/false);
    }
    if (!kind.has_value()) {
      return SkippedRow("no op_shape, and metric, derived and notes name no collective");
    }
    if (!chip.is_gpu()) return SkippedRow("a TPU collective needs an op_shape naming its axis");
    c.kind = *kind;
    c.bytes = kNcclTestBytes;
    const std::string& chips_text = row.Field("num_chips").text;
    std::optional<int64_t> chips;
    if (const std::optional<int64_t> nodes = IntegerBefore(chips_text, "node")) {
      chips = *nodes * DomainSize(chip);
    } else {
      chips = LeadingInteger(chips_text);
    }
    if (!chips.has_value() || *chips <= 0) {
      return SkippedRow("num_chips: expected a GPU count or 'N nodes'");
    }
    c.slice = absl::StrCat(*chips);
    c.plateau = true;
    array_text = " of 1 GiB per rank (a sweep's plateau: no per-call overhead)";
  }
  absl::StatusOr<Topology> topology = Topology::Create(chip, c.slice);
  if (!topology.ok()) {
    return SkippedRow(absl::StrCat("interconnect_topology: ", topology.status().message()));
  }
  if (axis.empty()) {
    for (int64_t d = 0; d < topology->num_devices(); ++d) c.group.push_back(d);
  } else {
    const int64_t dim = topology->FindDimension(axis);
    if (dim < 0) {
      return SkippedRow(
          absl::StrCat("op_shape: axis '", axis, "' is not a dimension of ", topology->ToString()));
    }
    if (axis_size.has_value() && *axis_size != topology->dimension(dim).size) {
      return SkippedRow(absl::StrCat("op_shape: axis '", axis, "' has size ",
                                     topology->dimension(dim).size, " in slice ", c.slice, ", not ",
                                     *axis_size));
    }
    for (int64_t i = 0; i < topology->dimension(dim).size; ++i) {
      c.group.push_back(i * topology->dimension(dim).device_stride);
    }
  }

  const std::string& metric = row.Field("metric").text;
  std::string measured = "time";
  if (scenario.metric == ScenarioMetric::kLinkBandwidth) {
    if (ContainsNoCase(metric, "busbw")) {
      scenario.metric = ScenarioMetric::kBusBandwidth;
      measured = "bus bandwidth";
    } else if (ContainsNoCase(metric, "per nic") || ContainsNoCase(metric, "ib bandwidth")) {
      if (topology->FindDimension("ib") < 0) {
        return SkippedRow(
            absl::StrCat("an IB bandwidth on a slice with no InfiniBand: ", topology->ToString()));
      }
      c.link_dimension = "ib";
      measured = "bytes on one NIC per second";
    } else {
      return SkippedRow("metric: expected busBw, IB bandwidth per NIC, or a time unit");
    }
  }
  scenario.description = absl::StrCat(CollectiveKindName(c.kind), " over ", c.group.size(),
                                      " devices of ", chip.name(), " ", topology->slice_shape(),
                                      axis.empty() ? "" : absl::StrCat(" (axis ", axis, ")"),
                                      array_text, "; ", measured);
  scenario.what = std::move(c);
  MappedRow out;
  out.scenario = std::move(scenario);
  return out;
}

}  // namespace perfsim
