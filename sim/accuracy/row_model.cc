// Row models: one simulation per row, factors applied in closed form (row_model.h).
#include "sim/accuracy/row_model.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "sim/comm/collectives.h"
#include "sim/comm/ep_dispatch.h"
#include "sim/comm/topology.h"
#include "sim/comm/traffic.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The link classes a collective's transfer is split by (row_model.h).
constexpr FactorKind kCollectiveFactors[] = {FactorKind::kNvlink, FactorKind::kInfiniband,
                                             FactorKind::kIci, FactorKind::kDcn};

std::string Micros(double seconds) { return fmt::format("{:.4g} us", seconds * 1e6); }

// P(at least one of k picks, drawn uniformly without replacement from m, is one of the e
// marked ones) = 1 - C(m - e, k) / C(m, k).
double HitProbability(int64_t m, int64_t e, int64_t k) {
  double miss = 1;
  for (int64_t i = 0; i < k; ++i) {
    if (m - e - i <= 0) return 1;
    miss *= static_cast<double>(m - e - i) / static_cast<double>(m - i);
  }
  return 1 - miss;
}

absl::StatusOr<RowModel> GemmModel(const GroupedGemmScenario& gemm, const Chip& chip) {
  PERFSIM_ASSIGN_OR_RETURN(GroupedMatmulCost cost, CostGroupedMatmul(gemm.spec, chip));
  if (!cost.unknown_rates.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(chip.name(), " has no rate for this grouped matmul (",
                     absl::StrJoin(cost.unknown_rates, ", "), " is 0 in its hardware file)"));
  }
  RowModel model;
  model.max_of_terms = true;
  // The operands stream under the roofline; on a GPU the output write (epilogue) follows it
  // (sim/cost/grouped_matmul.h). Both are HBM traffic, so both scale with the HBM fraction.
  model.terms = {{FactorKind::kMatmul, cost.compute_seconds},
                 {FactorKind::kHbm, cost.operand_seconds}};
  if (cost.epilogue_seconds > 0) {
    model.serial_terms.push_back({FactorKind::kHbm, cost.epilogue_seconds});
  }
  model.fixed_seconds = cost.overhead_seconds;
  model.overhead = FactorKind::kGemmOverhead;
  // CostGroupedMatmul charges the overhead per group of the call, empty groups included.
  model.invocations = static_cast<double>(gemm.spec.num_groups);
  model.work = cost.work.flops;
  model.detail = absl::StrCat(
      "compute ", Micros(cost.compute_seconds), ", memory ", Micros(cost.memory_seconds), " (",
      fmt::format("{:.4g}", cost.work.bytes_accessed / 1e6), " MB",
      cost.epilogue_seconds > 0
          ? absl::StrCat("; operands ", Micros(cost.operand_seconds), " under compute, epilogue ",
                         Micros(cost.epilogue_seconds), " after it")
          : std::string(),
      "), fixed ", Micros(cost.overhead_seconds));
  return model;
}

// The link-class factor of a stage bounded by a link of `fabric`.
FactorKind FabricFactor(LinkFabric fabric) {
  switch (fabric) {
    case LinkFabric::kIci:
      return FactorKind::kIci;
    case LinkFabric::kNvlink:
      return FactorKind::kNvlink;
    case LinkFabric::kInfiniband:
      return FactorKind::kInfiniband;
    case LinkFabric::kDcn:
      return FactorKind::kDcn;
    case LinkFabric::kOnChip:
      break;
  }
  return FactorKind::kNvlink;
}

absl::StatusOr<RowModel> EpModel(const EpCommScenario& ep, const Chip& chip) {
  const int64_t nodes = ep.nodes;
  const int64_t g = ep.gpus_per_node;
  const double tokens = static_cast<double>(ep.tokens_per_rank);
  const double b = ep.bytes_per_token;
  // Expected reach of one token (scenario.h): every node, or `limit` of them chosen first.
  const int64_t limit = ep.node_limit > 0 ? std::min(ep.node_limit, nodes) : nodes;
  const int64_t pool = limit * ep.experts / nodes;  // experts the token picks from
  if (pool < ep.top_k) {
    return absl::InvalidArgumentError(
        absl::StrCat("EP routing: expected at least top-k = ", ep.top_k, " experts on the ", limit,
                     " chosen nodes; got ", pool));
  }
  const double chosen = static_cast<double>(limit) / static_cast<double>(nodes);
  const double p_node = chosen * HitProbability(pool, ep.experts / nodes, ep.top_k);
  const double p_rank = chosen * HitProbability(pool, ep.experts / (nodes * g), ep.top_k);

  PERFSIM_ASSIGN_OR_RETURN(
      Topology topology,
      Topology::Create(chip, nodes > 1 ? absl::StrCat(nodes, "x", g) : absl::StrCat(g)));
  EpExchange exchange;
  exchange.nodes = nodes;
  exchange.gpus_per_node = g;
  exchange.tokens_per_rank = tokens;
  exchange.bytes_per_token = b;
  exchange.p_node = p_node;
  exchange.p_rank = p_rank;
  exchange.combine = ep.op == EpOp::kCombine;
  exchange.mode = ep.mode;
  exchange.sms = ep.sms;
  PERFSIM_ASSIGN_OR_RETURN(EpTime t, TimeEpExchange(exchange, chip, topology));
  RowModel model;
  model.max_of_terms = true;
  model.invocations = 1;
  // The first stage: NVLink, or on the flat path whatever class its busiest link is.
  const FactorKind first =
      t.path == EpPath::kFlat ? FabricFactor(t.bound) : FactorKind::kNvlink;
  model.terms.push_back({first, t.nvlink_seconds});
  model.fixed_seconds = t.fixed_seconds;
  model.detail = absl::StrCat(EpPathName(t.path), ": NVLink ", Micros(t.nvlink_seconds));
  if (t.path == EpPath::kHierarchical) {
    model.terms.push_back({FactorKind::kInfiniband, t.scale_out_seconds});
    absl::StrAppend(&model.detail, ", IB ", Micros(t.scale_out_seconds));
  }
  if (t.sm_seconds > 0) {
    model.terms.push_back({FactorKind::kSmCopy, t.sm_seconds});
    absl::StrAppend(&model.detail, ", SM copy ", Micros(t.sm_seconds), " (", ep.sms, " SMs, ",
                    fmt::format("{:.4g}", t.sm_bytes / 1e6), " MB)");
  }
  model.detail =
      absl::StrCat(model.detail, ", fixed ", Micros(model.fixed_seconds),
                   fmt::format("; per token P(node) {:.4f}, P(rank) {:.4f}", p_node, p_rank));
  switch (ep.bottleneck) {
    case LinkClass::kNvlink:
      // Tokens a rank receives, its own included, from every node's forwarder.
      model.work = static_cast<double>(g * nodes) * tokens * p_rank * b;
      break;
    case LinkClass::kScaleOut:
      // (token, node) pairs a rank sends, its own node included.
      model.work = static_cast<double>(nodes) * tokens * p_node * b;
      break;
  }
  return model;
}

absl::StatusOr<CollectiveTime> TimeCollective(const CollectiveScenario& c, const Chip& chip) {
  PERFSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(chip, c.slice));
  switch (c.kind) {
    case CollectiveKind::kAllGather:
      return AllGatherTime(c.bytes, c.group, topology);
    case CollectiveKind::kReduceScatter:
      return ReduceScatterTime(c.bytes, c.group, topology);
    case CollectiveKind::kAllReduce:
      return AllReduceTime(c.bytes, c.group, topology);
    case CollectiveKind::kAllToAll:
      return AllToAllTime(c.bytes, c.group, topology);
  }
  return absl::InternalError("unknown collective kind");
}

absl::StatusOr<RowModel> CollectiveModel(const CollectiveScenario& c, const std::string& chip_name,
                                         ScenarioMetric metric) {
  PERFSIM_ASSIGN_OR_RETURN(Chip datasheet, ChipWithFactors(chip_name, ChipFactors()));
  PERFSIM_ASSIGN_OR_RETURN(CollectiveTime base, TimeCollective(c, datasheet));
  RowModel model;
  model.max_of_terms = false;
  model.invocations = c.plateau ? 0 : 1;
  double scaled = 0;
  for (FactorKind kind : kCollectiveFactors) {
    ChipFactors half;
    half.Set(kind, 0.5);
    PERFSIM_ASSIGN_OR_RETURN(Chip chip, ChipWithFactors(chip_name, half));
    PERFSIM_ASSIGN_OR_RETURN(CollectiveTime t, TimeCollective(c, chip));
    // Halving the factor doubles exactly the transfer it divides.
    const double transfer = t.seconds - base.seconds;
    if (transfer > 1e-12 * base.seconds) {
      model.terms.push_back({kind, transfer});
      scaled += transfer;
      absl::StrAppend(&model.detail, FactorShortName(kind), " ", Micros(transfer), ", ");
    }
  }
  model.fixed_seconds = std::max(0.0, base.seconds - scaled);
  absl::StrAppend(&model.detail, "fixed + latency ", Micros(model.fixed_seconds));
  const double n = static_cast<double>(c.group.size());
  switch (metric) {
    case ScenarioMetric::kBusBandwidth:
      model.work = c.bytes * (n - 1) / n * (c.kind == CollectiveKind::kAllReduce ? 2 : 1);
      break;
    case ScenarioMetric::kLinkBandwidth: {
      if (c.kind != CollectiveKind::kAllToAll) {
        return absl::FailedPreconditionError(
            "bytes on one NIC are mapped for all-to-all only (a uniform exchange)");
      }
      PERFSIM_ASSIGN_OR_RETURN(Topology topology, Topology::Create(datasheet, c.slice));
      const int64_t dim = topology.FindDimension(c.link_dimension);
      if (dim < 0) return absl::FailedPreconditionError("no such link dimension");
      const int64_t home = topology.Coordinates(c.group[0])[dim];
      double remote = 0;
      for (int64_t d : c.group) remote += topology.Coordinates(d)[dim] != home ? 1 : 0;
      model.work = c.bytes / n * remote;
      break;
    }
    case ScenarioMetric::kTime:
    case ScenarioMetric::kThroughput:
      break;
  }
  return model;
}

}  // namespace

absl::string_view FactorFieldName(FactorKind kind) {
  switch (kind) {
    case FactorKind::kMatmul:
      return "matmul_fraction_of_peak";
    case FactorKind::kHbm:
      return "hbm_fraction_of_peak";
    case FactorKind::kRing:
      return "collective_ring_fraction_of_peak";
    case FactorKind::kBidirectionalRing:
      return "collective_bidirectional_ring_fraction_of_peak";
    case FactorKind::kDirect:
      return "collective_direct_fraction_of_peak";
    case FactorKind::kHierarchical:
      return "collective_hierarchical_fraction_of_peak";
    case FactorKind::kNvlink:
      return "nvlink_fraction_of_peak";
    case FactorKind::kInfiniband:
      return "infiniband_fraction_of_peak";
    case FactorKind::kIci:
      return "ici_fraction_of_peak";
    case FactorKind::kDcn:
      return "dcn_fraction_of_peak";
    case FactorKind::kSmCopy:
      return "sm_copy_fraction_of_peak";
    case FactorKind::kGemmOverhead:
      return "grouped_matmul_overhead_seconds_per_group";
    case FactorKind::kCommOverhead:
      return "collective_overhead_seconds";
    case FactorKind::kApiOverhead:
      return "api_overhead_seconds";
  }
  return "?";
}

absl::string_view FactorShortName(FactorKind kind) {
  switch (kind) {
    case FactorKind::kMatmul:
      return "matmul";
    case FactorKind::kHbm:
      return "hbm";
    case FactorKind::kRing:
      return "ring";
    case FactorKind::kBidirectionalRing:
      return "bidir_ring";
    case FactorKind::kDirect:
      return "direct";
    case FactorKind::kHierarchical:
      return "hierarchical";
    case FactorKind::kNvlink:
      return "nvlink";
    case FactorKind::kInfiniband:
      return "infiniband";
    case FactorKind::kIci:
      return "ici";
    case FactorKind::kDcn:
      return "dcn";
    case FactorKind::kSmCopy:
      return "sm_copy";
    case FactorKind::kGemmOverhead:
      return "gmm_overhead";
    case FactorKind::kCommOverhead:
      return "comm_overhead";
    case FactorKind::kApiOverhead:
      return "api_overhead";
  }
  return "?";
}

bool IsFraction(FactorKind kind) {
  switch (kind) {
    case FactorKind::kMatmul:
    case FactorKind::kHbm:
    case FactorKind::kRing:
    case FactorKind::kBidirectionalRing:
    case FactorKind::kDirect:
    case FactorKind::kHierarchical:
    case FactorKind::kNvlink:
    case FactorKind::kInfiniband:
    case FactorKind::kIci:
    case FactorKind::kDcn:
    case FactorKind::kSmCopy:
      return true;
    case FactorKind::kGemmOverhead:
    case FactorKind::kCommOverhead:
    case FactorKind::kApiOverhead:
      return false;
  }
  return false;
}

bool IsChipProperty(FactorKind kind) { return kind != FactorKind::kApiOverhead; }

absl::StatusOr<Chip> ChipWithFactors(absl::string_view name, const ChipFactors& factors) {
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, LoadBuiltinChip(name));
  HardwareSpec spec = chip.proto();
  EfficiencySpec& e = *spec.mutable_efficiency();
  e.set_matmul_fraction_of_peak(factors.Get(FactorKind::kMatmul));
  e.set_hbm_fraction_of_peak(factors.Get(FactorKind::kHbm));
  e.set_collective_ring_fraction_of_peak(factors.Get(FactorKind::kRing));
  e.set_collective_bidirectional_ring_fraction_of_peak(factors.Get(FactorKind::kBidirectionalRing));
  e.set_collective_direct_fraction_of_peak(factors.Get(FactorKind::kDirect));
  e.set_collective_hierarchical_fraction_of_peak(factors.Get(FactorKind::kHierarchical));
  e.set_nvlink_fraction_of_peak(factors.Get(FactorKind::kNvlink));
  e.set_infiniband_fraction_of_peak(factors.Get(FactorKind::kInfiniband));
  e.set_ici_fraction_of_peak(factors.Get(FactorKind::kIci));
  e.set_dcn_fraction_of_peak(factors.Get(FactorKind::kDcn));
  e.set_sm_copy_fraction_of_peak(factors.Get(FactorKind::kSmCopy));
  e.set_grouped_matmul_overhead_seconds_per_group(factors.Get(FactorKind::kGemmOverhead));
  e.set_collective_overhead_seconds(factors.Get(FactorKind::kCommOverhead));
  return Chip::FromProto(std::move(spec));
}

absl::StatusOr<RowModel> BuildRowModel(const Scenario& scenario) {
  absl::StatusOr<RowModel> model;
  if (const auto* c = std::get_if<CollectiveScenario>(&scenario.what)) {
    model = CollectiveModel(*c, scenario.chip, scenario.metric);
  } else {
    PERFSIM_ASSIGN_OR_RETURN(Chip datasheet, ChipWithFactors(scenario.chip, ChipFactors()));
    if (const auto* gemm = std::get_if<GroupedGemmScenario>(&scenario.what)) {
      model = GemmModel(*gemm, datasheet);
    } else {
      model = EpModel(std::get<EpCommScenario>(scenario.what), datasheet);
    }
  }
  if (!model.ok()) return model.status();
  model->chip = scenario.chip;
  model->metric = scenario.metric;
  model->unit = scenario.unit;
  switch (scenario.timing) {
    case TimingMethod::kDevice:
      model->api_calls = 0;
      break;
    case TimingMethod::kHostApi:
      model->api_calls = 1;
      absl::StrAppend(&model->detail, "; + API overhead (host-API timing)");
      break;
  }
  if (ModelSeconds(*model, ChipFactors()) <= 0) {
    return absl::FailedPreconditionError("the simulated time is 0: nothing to compare");
  }
  return model;
}

double ModelSeconds(const RowModel& model, const ChipFactors& factors) {
  double combined = 0;
  for (const FactorTerm& term : model.terms) {
    const double seconds = term.seconds / factors.Get(term.factor);
    combined = model.max_of_terms ? std::max(combined, seconds) : combined + seconds;
  }
  double serial = 0;
  for (const FactorTerm& term : model.serial_terms)
    serial += term.seconds / factors.Get(term.factor);
  return model.fixed_seconds + combined + serial + model.invocations * factors.Get(model.overhead) +
         model.api_calls * factors.Get(FactorKind::kApiOverhead);
}

double ModelValue(const RowModel& model, const ChipFactors& factors) {
  return ValueInUnit(ModelSeconds(model, factors), model.work, model.unit);
}

bool ModelInforms(const RowModel& model, FactorKind kind) {
  if (kind == FactorKind::kApiOverhead) return model.api_calls > 0;
  // An API-timed row's fixed cost per call goes to the API term (row_model.h).
  if (!IsFraction(kind)) {
    return model.overhead == kind && model.invocations > 0 && model.api_calls == 0;
  }
  for (const FactorTerm& term : model.serial_terms) {
    if (term.factor == kind && term.seconds > 0) return true;
  }
  if (!model.max_of_terms) {
    for (const FactorTerm& term : model.terms) {
      if (term.factor == kind && term.seconds > 0) return true;
    }
    return false;
  }
  // The bound at datasheet physics: the largest term (the first of equal ones).
  const FactorTerm* bound = nullptr;
  for (const FactorTerm& term : model.terms) {
    if (bound == nullptr || term.seconds > bound->seconds) bound = &term;
  }
  return bound != nullptr && bound->factor == kind && bound->seconds > 0;
}

}  // namespace perfsim
