// Per-dimension collective algorithms, torus dimensions run concurrently, and the staging of
// link classes (collectives.h).
#include "sim/comm/collectives.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/group.h"
#include "sim/comm/traffic.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// How one spanned dimension moves data: the algorithm, the bandwidth one device gets for it
// (both directions together for a bidirectional ring), and the latency it pays per step.
struct PhasePlan {
  std::string dimension;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kNone;
  int64_t n = 1;
  int64_t stride = 1;
  double link_bytes_per_second = 0;  // one link, one direction, shared and derated
  int ways = 1;                      // 2 for a bidirectional ring
  int64_t steps = 0;                 // latency steps of one reduce-scatter or all-gather pass
  double step_latency_seconds = 0;
  // Bytes per second one device moves: ways * link_bytes_per_second.
  double rate() const { return ways * link_bytes_per_second; }
};

double Fraction(const EfficiencySpec& e, CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return e.collective_ring_fraction_of_peak();
    case CollectiveAlgorithm::kBidirectionalRing:
      return e.collective_bidirectional_ring_fraction_of_peak();
    case CollectiveAlgorithm::kDirect:
      return e.collective_direct_fraction_of_peak();
    case CollectiveAlgorithm::kHierarchical:
      return e.collective_hierarchical_fraction_of_peak();
    case CollectiveAlgorithm::kNone:
    case CollectiveAlgorithm::kMultiAxis:  // never a phase's own: each keeps its ring's
      break;
  }
  return 1.0;
}

// Devices of one chip that send through its ICI / NVLink / NIC links at the same time as
// each device of the group: all of them (every device runs every phase under SPMD).
double ChipShare(const Topology& topology, const TopologyDimension& dim) {
  return dim.kind == LinkKind::kOnChip ? 1.0 : static_cast<double>(topology.devices_per_chip());
}

std::vector<PhasePlan> PlanPhases(const Topology& topology, const GroupLayout& layout) {
  bool spans_switch = false;
  for (const DimensionSpan& span : layout.spans) {
    spans_switch = spans_switch || topology.dimension(span.dimension).kind == LinkKind::kSwitch;
  }
  std::vector<PhasePlan> plans;
  for (const DimensionSpan& span : layout.spans) {
    const TopologyDimension& dim = topology.dimension(span.dimension);
    PhasePlan plan;
    plan.dimension = dim.name;
    plan.n = span.size;
    plan.stride = span.stride;
    double share = ChipShare(topology, dim);
    switch (dim.kind) {
      case LinkKind::kTorus:
        plan.algorithm =
            span.closed_ring ? CollectiveAlgorithm::kBidirectionalRing : CollectiveAlgorithm::kRing;
        plan.ways = span.closed_ring ? 2 : 1;
        plan.steps = span.closed_ring ? span.size / 2 : span.size - 1;
        plan.step_latency_seconds = static_cast<double>(span.stride) * dim.hop_latency_seconds;
        share *= static_cast<double>(span.stride);
        break;
      case LinkKind::kSwitch:
      case LinkKind::kOnChip:
        plan.algorithm = CollectiveAlgorithm::kDirect;
        plan.steps = 1;
        plan.step_latency_seconds = dim.hop_latency_seconds;
        break;
      case LinkKind::kScaleOut:
        // NCCL-style ring over the domains, one per rail, a round trip per step.
        plan.algorithm = CollectiveAlgorithm::kRing;
        plan.steps = span.size - 1;
        plan.step_latency_seconds = dim.hop_latency_seconds;
        break;
    }
    const CollectiveAlgorithm derate_as = dim.kind == LinkKind::kScaleOut && spans_switch
                                              ? CollectiveAlgorithm::kHierarchical
                                              : plan.algorithm;
    plan.link_bytes_per_second =
        dim.bytes_per_second_per_direction / share * Fraction(topology.efficiency(), derate_as);
    plans.push_back(std::move(plan));
  }
  return plans;
}

// One reduce-scatter or all-gather pass along one dimension moving (n-1)/n of `bytes` per
// device.
PhaseTime RunPhase(const PhasePlan& plan, double bytes) {
  PhaseTime phase;
  phase.dimension = plan.dimension;
  phase.algorithm = plan.algorithm;
  phase.group_size = plan.n;
  phase.stride = plan.stride;
  const double moved = bytes * static_cast<double>(plan.n - 1) / static_cast<double>(plan.n);
  phase.link_bytes = moved / plan.ways;
  phase.link_bytes_per_second = plan.link_bytes_per_second;
  phase.transfer_seconds = moved / plan.rate();
  phase.stage_transfer_seconds = phase.transfer_seconds;
  phase.latency_steps = plan.steps;
  phase.latency_seconds = static_cast<double>(plan.steps) * plan.step_latency_seconds;
  phase.seconds = phase.transfer_seconds + phase.latency_seconds;
  return phase;
}

// Dimensions that run as one unit in the staged order: one dimension, or all the torus
// dimensions of the group run concurrently (collectives.h).
struct Stage {
  std::vector<PhasePlan> plans;  // one, or the torus dimensions in rotation order
  bool concurrent = false;
  int64_t n = 1;  // members the stage gathers over: the product of its dimensions' sizes
  // Transfer seconds per byte the stage gathers to (the bytes each device holds after its
  // all-gather pass); the time is linear in them. Concurrent: the larger of the busiest
  // dimension's and the longest part chain's.
  double seconds_per_byte = 0;
};

// Bytes each dimension of a concurrent stage moves per device, per byte gathered to. The buffer
// is split into k equal parts; part p gathers over the dimensions in the rotated order p, p+1,
// ..., p+k-1 (mod k). Along dimension d a part of P gathered bytes moves (n_d - 1) / N * P
// times the sizes of the dimensions it has already gathered over.
std::vector<double> ConcurrentLoads(const std::vector<PhasePlan>& plans) {
  const int64_t k = static_cast<int64_t>(plans.size());
  double total = 1;
  for (const PhasePlan& plan : plans) total *= static_cast<double>(plan.n);
  std::vector<double> loads(k, 0);
  for (int64_t d = 0; d < k; ++d) {
    double before = 1;  // product of the sizes gathered before d, over the k rotations
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      sum += before;
      before *= static_cast<double>(plans[(d + k - 1 - j) % k].n);
    }
    loads[d] = static_cast<double>(plans[d].n - 1) / total * sum / static_cast<double>(k);
  }
  return loads;
}

// One dimension's pass, or a concurrent stage's dimensions, for `bytes` gathered to.
std::vector<PhaseTime> RunStage(const Stage& stage, double bytes, int64_t index) {
  std::vector<PhaseTime> phases;
  if (!stage.concurrent) {
    phases.push_back(RunPhase(stage.plans[0], bytes));
  } else {
    const std::vector<double> loads = ConcurrentLoads(stage.plans);
    for (size_t d = 0; d < stage.plans.size(); ++d) {
      const PhasePlan& plan = stage.plans[d];
      PhaseTime phase = RunPhase(plan, bytes);
      phase.link_bytes = loads[d] * bytes / plan.ways;
      phase.transfer_seconds = loads[d] * bytes / plan.rate();
      phase.seconds = phase.transfer_seconds + phase.latency_seconds;
      phases.push_back(std::move(phase));
    }
  }
  for (PhaseTime& phase : phases) {
    phase.stage = index;
    if (stage.concurrent) phase.stage_transfer_seconds = stage.seconds_per_byte * bytes;
  }
  return phases;
}

// Slowest first (all-gather order; reduce-scatter reverses it): by transfer seconds per byte
// moved, (n-1)/n of the bytes gathered to. Ties keep the topology's order, outermost first.
void SortSlowestFirst(std::vector<Stage>& stages) {
  auto per_moved = [](const Stage& s) {
    return s.seconds_per_byte * static_cast<double>(s.n) / static_cast<double>(s.n - 1);
  };
  std::stable_sort(stages.begin(), stages.end(),
                   [&](const Stage& a, const Stage& b) { return per_moved(a) > per_moved(b); });
}

Stage SingleStage(PhasePlan plan) {
  Stage stage;
  stage.n = plan.n;
  stage.seconds_per_byte =
      static_cast<double>(plan.n - 1) / static_cast<double>(plan.n) / plan.rate();
  stage.plans.push_back(std::move(plan));
  return stage;
}

// The stages of a regular group in all-gather order. Torus dimensions run concurrently when
// there are several and that is faster than running them in sequence (with equal parts and
// unequal rates it may not be: a slow open line then carries as much as a fast closed ring).
// A concurrent stage takes the longer of its busiest dimension's transfer and the longest
// chain of one part through all its dimensions at their full rates: both bound any schedule.
// NVLink, InfiniBand and on-chip dimensions are stages of their own: different link classes
// run the hierarchical algorithm.
std::vector<Stage> PlanStages(const Topology& topology, const GroupLayout& layout) {
  const std::vector<PhasePlan> plans = PlanPhases(topology, layout);
  std::vector<Stage> stages;
  std::vector<Stage> torus;  // in sequence, slowest first
  for (size_t i = 0; i < plans.size(); ++i) {
    stages.push_back(SingleStage(plans[i]));
    if (topology.dimension(layout.spans[i].dimension).kind == LinkKind::kTorus) {
      torus.push_back(stages.back());
    }
  }
  SortSlowestFirst(stages);
  if (torus.size() < 2) return stages;
  SortSlowestFirst(torus);
  Stage concurrent;
  concurrent.concurrent = true;
  for (const Stage& s : torus) concurrent.plans.push_back(s.plans[0]);
  for (const PhasePlan& plan : concurrent.plans) concurrent.n *= plan.n;
  const std::vector<double> loads = ConcurrentLoads(concurrent.plans);
  for (size_t d = 0; d < loads.size(); ++d) {
    concurrent.seconds_per_byte =
        std::max(concurrent.seconds_per_byte, loads[d] / concurrent.plans[d].rate());
  }
  // A part's chain: 1/k of the bytes through every dimension in its rotated order, each at
  // that dimension's full rate.
  const double total = static_cast<double>(concurrent.n);
  const int64_t k = static_cast<int64_t>(concurrent.plans.size());
  for (int64_t p = 0; p < k; ++p) {
    double chain = 0;
    double part = 1.0 / total / static_cast<double>(k);
    for (int64_t j = 0; j < k; ++j) {
      const PhasePlan& plan = concurrent.plans[(p + j) % k];
      part *= static_cast<double>(plan.n);
      chain += part * static_cast<double>(plan.n - 1) / static_cast<double>(plan.n) / plan.rate();
    }
    concurrent.seconds_per_byte = std::max(concurrent.seconds_per_byte, chain);
  }
  // In sequence, slowest first: each dimension gathers to the product of the sizes so far.
  double in_sequence = 0;
  double gathered = 1;
  for (const Stage& s : torus) {
    gathered *= static_cast<double>(s.n);
    in_sequence += s.seconds_per_byte * gathered / total;
  }
  if (concurrent.seconds_per_byte >= in_sequence) return stages;
  std::vector<Stage> with_concurrent;
  bool placed = false;  // the concurrent stage goes where its first torus dimension was
  for (size_t i = 0; i < plans.size(); ++i) {
    if (topology.dimension(layout.spans[i].dimension).kind != LinkKind::kTorus) {
      with_concurrent.push_back(SingleStage(plans[i]));
    } else if (!placed) {
      with_concurrent.push_back(concurrent);
      placed = true;
    }
  }
  SortSlowestFirst(with_concurrent);
  return with_concurrent;
}

void Finish(const Topology& topology, CollectiveTime& t) {
  t.transfer_seconds = 0;
  t.latency_seconds = 0;
  double longest_transfer = -1;
  double stage_transfer = 0;
  for (size_t i = 0; i < t.phases.size(); ++i) {
    const PhaseTime& p = t.phases[i];
    // A stage's phases run at the same time (stage_transfer_seconds); each part of the buffer
    // crosses every dimension of it in turn, so their latencies add.
    stage_transfer = std::max(stage_transfer, p.stage_transfer_seconds);
    if (i + 1 == t.phases.size() || t.phases[i + 1].stage != p.stage) {
      t.transfer_seconds += stage_transfer;
      stage_transfer = 0;
    }
    t.latency_seconds += p.latency_seconds;
    // The busiest link is the one that takes longest to drain, not the one with most bytes
    // (an on-chip copy may move more bytes than an ICI link, much faster).
    if (p.transfer_seconds > longest_transfer) {
      longest_transfer = p.transfer_seconds;
      t.busiest_link_bytes = p.link_bytes;
      t.busiest_link = absl::StrCat("phase ", p.dimension);
    }
  }
  const bool one_stage = !t.phases.empty() && t.phases.front().stage == t.phases.back().stage;
  if (t.phases.size() == 1) {
    t.algorithm = t.phases[0].algorithm;
  } else if (one_stage) {
    t.algorithm = CollectiveAlgorithm::kMultiAxis;
  } else if (t.phases.size() > 1) {
    t.algorithm = CollectiveAlgorithm::kHierarchical;
  }
  if (!t.phases.empty()) t.fixed_seconds = topology.collective_fixed_seconds();
  t.seconds = t.fixed_seconds + t.transfer_seconds + t.latency_seconds;
}

CollectiveTime FromTraffic(const TrafficTime& traffic) {
  CollectiveTime t;
  t.algorithm =
      traffic.busiest_link_bytes > 0 ? CollectiveAlgorithm::kDirect : CollectiveAlgorithm::kNone;
  t.busiest_link_bytes = traffic.busiest_link_bytes;
  t.busiest_link = traffic.busiest_link;
  t.fixed_seconds = traffic.fixed_seconds;
  t.transfer_seconds = traffic.transfer_seconds;
  t.latency_seconds = traffic.latency_seconds;
  t.seconds = traffic.seconds;
  return t;
}

absl::Status CheckBytes(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective: expected finite non-negative bytes; got ", bytes));
  }
  return absl::OkStatus();
}

// A group that is not a product of evenly spaced positions: a ring through the members in
// group order, each step routed over the topology (only this group's flows are counted).
// Returns one phase of `passes` reduce-scatter/all-gather passes of `bytes` per device.
absl::StatusOr<PhaseTime> RoutedRingPhase(double bytes, absl::Span<const int64_t> group,
                                          const Topology& topology, int passes) {
  const int64_t n = static_cast<int64_t>(group.size());
  TrafficMatrix step = TrafficMatrix::Zero(std::vector<int64_t>(group.begin(), group.end()));
  const double chunk = bytes / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) step.set(i, (i + 1) % n, chunk);
  PERFSIM_ASSIGN_OR_RETURN(TrafficTime one, RouteTraffic(step, topology));
  const double steps = static_cast<double>(passes * (n - 1));
  PhaseTime phase;
  phase.dimension = "routed";
  phase.algorithm = CollectiveAlgorithm::kRing;
  phase.group_size = n;
  phase.link_bytes = one.busiest_link_bytes * steps;
  phase.link_bytes_per_second =
      one.transfer_seconds > 0 ? one.busiest_link_bytes / one.transfer_seconds : 0;
  phase.latency_steps = passes * (n - 1) * one.max_hops;
  phase.transfer_seconds = one.transfer_seconds * steps;
  phase.stage_transfer_seconds = phase.transfer_seconds;
  phase.latency_seconds = one.latency_seconds * steps;
  phase.seconds = phase.transfer_seconds + phase.latency_seconds;
  return phase;
}

enum class Pass { kGather, kScatter, kReduce };

absl::StatusOr<CollectiveTime> StagedCollective(Pass pass, double bytes,
                                                absl::Span<const int64_t> group,
                                                const Topology& topology) {
  PERFSIM_RETURN_IF_ERROR(CheckBytes(bytes));
  PERFSIM_ASSIGN_OR_RETURN(GroupLayout layout, AnalyzeGroup(topology, group));
  CollectiveTime t;
  if (layout.size == 1) return t;
  if (!layout.regular) {
    PERFSIM_ASSIGN_OR_RETURN(
        PhaseTime phase, RoutedRingPhase(bytes, group, topology, pass == Pass::kReduce ? 2 : 1));
    t.phases.push_back(std::move(phase));
    Finish(topology, t);
    return t;
  }
  const std::vector<Stage> gather_order = PlanStages(topology, layout);
  const double total = static_cast<double>(layout.size);
  int64_t index = 0;
  auto append = [&](const Stage& stage, double gathered) {
    for (PhaseTime& phase : RunStage(stage, gathered, index)) t.phases.push_back(std::move(phase));
    ++index;
  };
  if (pass == Pass::kScatter || pass == Pass::kReduce) {
    // Fastest first: the big buffer crosses the fast links; each stage leaves 1/n of it.
    double current = bytes;
    for (auto it = gather_order.rbegin(); it != gather_order.rend(); ++it) {
      append(*it, current);
      current /= static_cast<double>(it->n);
    }
  }
  if (pass == Pass::kGather || pass == Pass::kReduce) {
    double current = bytes / total;
    for (const Stage& stage : gather_order) {
      current *= static_cast<double>(stage.n);
      append(stage, current);
    }
  }
  Finish(topology, t);
  return t;
}

// Flows crossing the busiest link of one line of n members, per unit sent to every peer
// (collectives.h).
double LineLoad(const TopologyDimension& dim, const DimensionSpan& span) {
  const double n = static_cast<double>(span.size);
  if (dim.kind != LinkKind::kTorus) return n - 1;
  if (!span.closed_ring) return std::floor(n / 2) * std::ceil(n / 2);
  return span.size % 2 == 0 ? n * n / 8 : (n * n - 1) / 8;
}

// Hops of the longest route along one spanned dimension.
int64_t LongestRoute(const TopologyDimension& dim, const DimensionSpan& span) {
  if (dim.kind != LinkKind::kTorus) return 1;
  const int64_t member_hops = span.closed_ring ? span.size / 2 : span.size - 1;
  return member_hops * span.stride;
}

}  // namespace

absl::string_view CollectiveAlgorithmName(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kNone:
      return "none";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kBidirectionalRing:
      return "bidirectional_ring";
    case CollectiveAlgorithm::kDirect:
      return "direct";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
    case CollectiveAlgorithm::kMultiAxis:
      return "multi_axis";
  }
  return "?";
}

absl::StatusOr<CollectiveTime> AllGatherTime(double bytes, absl::Span<const int64_t> group,
                                             const Topology& topology) {
  return StagedCollective(Pass::kGather, bytes, group, topology);
}

absl::StatusOr<CollectiveTime> ReduceScatterTime(double bytes, absl::Span<const int64_t> group,
                                                 const Topology& topology) {
  return StagedCollective(Pass::kScatter, bytes, group, topology);
}

absl::StatusOr<CollectiveTime> AllReduceTime(double bytes, absl::Span<const int64_t> group,
                                             const Topology& topology) {
  return StagedCollective(Pass::kReduce, bytes, group, topology);
}

absl::StatusOr<CollectiveTime> AllToAllTime(double bytes, absl::Span<const int64_t> group,
                                            const Topology& topology) {
  PERFSIM_RETURN_IF_ERROR(CheckBytes(bytes));
  PERFSIM_ASSIGN_OR_RETURN(GroupLayout layout, AnalyzeGroup(topology, group));
  if (layout.size == 1) return CollectiveTime();
  const double total = static_cast<double>(layout.size);
  const double per_peer = bytes / total;
  if (!layout.regular) {
    TrafficMatrix m = TrafficMatrix::Zero(std::vector<int64_t>(group.begin(), group.end()));
    for (int64_t i = 0; i < layout.size; ++i) {
      for (int64_t j = 0; j < layout.size; ++j) m.set(i, j, i == j ? 0 : per_peer);
    }
    PERFSIM_ASSIGN_OR_RETURN(TrafficTime routed, RouteTraffic(m, topology));
    return FromTraffic(routed);
  }

  const double efficiency = topology.efficiency().collective_direct_fraction_of_peak();

  CollectiveTime t;
  t.algorithm = CollectiveAlgorithm::kDirect;
  for (const DimensionSpan& span : layout.spans) {
    const TopologyDimension& dim = topology.dimension(span.dimension);
    // Per source device at a position, (total / size) * LineLoad flows cross the busiest link
    // of its line; a chip's links carry the flows of all its devices (this group's and the
    // concurrent groups' on the other cores), and a strided torus group shares its links with
    // the groups interleaved with it.
    double share = ChipShare(topology, dim);
    if (dim.kind == LinkKind::kTorus) share *= static_cast<double>(span.stride);
    PhaseTime phase;
    phase.dimension = dim.name;
    phase.algorithm = CollectiveAlgorithm::kDirect;
    phase.group_size = span.size;
    phase.stride = span.stride;
    phase.link_bytes =
        total / static_cast<double>(span.size) * LineLoad(dim, span) * per_peer * share;
    phase.link_bytes_per_second = dim.bytes_per_second_per_direction * efficiency;
    phase.transfer_seconds = phase.link_bytes / phase.link_bytes_per_second;
    phase.latency_steps = LongestRoute(dim, span);
    phase.latency_seconds = static_cast<double>(phase.latency_steps) * dim.hop_latency_seconds;
    phase.seconds = phase.transfer_seconds + phase.latency_seconds;
    // Dimensions carry their flows at the same time: the slowest link decides, latency adds
    // along the longest route.
    if (phase.transfer_seconds > t.transfer_seconds) {
      t.transfer_seconds = phase.transfer_seconds;
      t.busiest_link_bytes = phase.link_bytes;
      t.busiest_link = absl::StrCat("phase ", dim.name);
    }
    t.latency_seconds += phase.latency_seconds;
    t.phases.push_back(std::move(phase));
  }
  t.fixed_seconds = topology.collective_fixed_seconds();
  t.seconds = t.fixed_seconds + t.transfer_seconds + t.latency_seconds;
  return t;
}

absl::StatusOr<CollectiveTime> CollectivePermuteTime(
    double bytes, absl::Span<const std::pair<int64_t, int64_t>> source_target_pairs,
    const Topology& topology) {
  PERFSIM_RETURN_IF_ERROR(CheckBytes(bytes));
  std::vector<int64_t> devices;
  absl::flat_hash_set<int64_t> seen;
  for (const auto& [source, target] : source_target_pairs) {
    for (int64_t d : {source, target}) {
      if (d < 0 || d >= topology.num_devices()) {
        return absl::InvalidArgumentError(
            absl::StrCat("collective-permute: expected device ids in [0, ", topology.num_devices(),
                         "); got ", d));
      }
      if (seen.insert(d).second) devices.push_back(d);
    }
  }
  absl::flat_hash_set<int64_t> sources;
  absl::flat_hash_set<int64_t> targets;
  for (const auto& [source, target] : source_target_pairs) {
    if (!sources.insert(source).second || !targets.insert(target).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "collective-permute: expected each device to send at most once and receive at most "
          "once; got pair {",
          source, ",", target, "} repeating one"));
    }
  }
  if (devices.empty()) return CollectiveTime();
  TrafficMatrix m = TrafficMatrix::Zero(devices);
  auto index = [&](int64_t d) {
    return static_cast<int64_t>(std::find(m.devices.begin(), m.devices.end(), d) -
                                m.devices.begin());
  };
  for (const auto& [source, target] : source_target_pairs)
    m.add(index(source), index(target), bytes);
  PERFSIM_ASSIGN_OR_RETURN(TrafficTime routed, RouteTraffic(m, topology));
  return FromTraffic(routed);
}

}  // namespace perfsim
