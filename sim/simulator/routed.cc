// The ops whose sizes come from the routing (routed.h): what they are (DescribeRoutedOp, at
// PrepareModule) and their per-device costs under one routing (RoutedCostsFor, at Simulate).
#include "sim/simulator/routed.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/traffic.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/simulator/groups.h"
#include "sim/simulator/prepared.h"
#include "sim/util/status.h"

namespace perfsim {

SimulatorCache::SimulatorCache() : impl_(std::make_unique<Impl>()) {}
SimulatorCache::~SimulatorCache() = default;
SimulatorCache::Stats SimulatorCache::stats() const { return impl_->stats; }

namespace {

// Bounds of a SimulatorCache (entries; values are pure functions of their keys, so dropping
// them changes no result).
constexpr size_t kMaxRoutedCosts = 64;
constexpr size_t kMaxGroupedEntries = 1 << 16;
constexpr size_t kMaxRaggedEntries = 1 << 12;
constexpr size_t kMaxGraphs = 16;

// The RaggedSizes of a grouped matmul's group-sizes operand, or null.
const RaggedSizes* GroupSizesAnnotation(const Instruction& instruction) {
  if (instruction.operand_count() < 3) return nullptr;
  const Annotation* a = instruction.operand(2)->annotation();
  if (a == nullptr || !a->has_ragged() || !a->ragged().has_routing()) return nullptr;
  return &a->ragged();
}

// The index of an annotated routing shape in data.layouts, added (checked) when new.
absl::StatusOr<int32_t> LayoutIndex(const Instruction& instruction, const RoutingShape& shape,
                                    PreparedModuleData& data) {
  absl::StatusOr<RoutingLayout> layout = RoutingLayout::FromProto(shape);
  if (!layout.ok()) return Annotate(layout.status(), instruction.name());
  for (size_t k = 0; k < data.layouts.size(); ++k) {
    const RoutingLayout& l = data.layouts[k];
    if (l.num_experts == layout->num_experts && l.experts_per_token == layout->experts_per_token &&
        l.tokens_per_shard == layout->tokens_per_shard && l.token_shards == layout->token_shards &&
        l.ep == layout->ep && l.tp == layout->tp) {
      return static_cast<int32_t>(k);
    }
  }
  if (layout->num_devices() != data.num_devices) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": expected an annotated routing over the module's ",
                     data.num_devices, " devices; got token_shards · tp = ", layout->token_shards,
                     " · ", layout->tp, " = ", layout->num_devices()));
  }
  data.layouts.push_back(*layout);
  data.layout_named_by.push_back(instruction.name());
  return static_cast<int32_t>(data.layouts.size() - 1);
}

}  // namespace

std::optional<GroupedMatmulSpec> RaggedDotGroupedSpec(const Instruction& instruction,
                                                      const Chip& chip) {
  if (instruction.opcode() != Opcode::kRaggedDot || instruction.operand_count() != 3 ||
      !instruction.attributes().ragged_dot_dimension_numbers.has_value()) {
    return std::nullopt;
  }
  const RaggedDotDimensionNumbers& d = *instruction.attributes().ragged_dot_dimension_numbers;
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const Shape& gs = instruction.operand(2)->shape();
  if (lhs.rank() != 2 || gs.rank() != 1 || rhs.rank() < 2 || instruction.shape().rank() < 2 ||
      d.dot.lhs_contracting_dimensions.empty()) {
    return std::nullopt;
  }
  GroupedMatmulSpec spec;
  // A grouped-GEMM kernel, not a Pallas grid (grouped_matmul.h). XLA:GPU's own dense
  // expansion of jax.lax.ragged_dot (kXlaRaggedDot) is not chosen here yet.
  spec.implementation = GroupedMatmulImplementation::kGroupedGemmKernel;
  spec.num_groups = gs.dimensions(0);
  spec.lhs_type = lhs.element_type();
  spec.rhs_type = rhs.element_type();
  spec.out_type = instruction.shape().element_type();
  if (!d.rhs_group_dimensions.empty()) {
    spec.kind = GroupedMatmulKind::kGmm;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(d.dot.lhs_contracting_dimensions[0]);
    spec.n = instruction.shape().dimensions(1);
  } else {
    spec.kind = GroupedMatmulKind::kTgmm;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(1);
    spec.n = rhs.dimensions(1);
  }
  if (!chip.is_tpu()) {
    // The tile for m split evenly over the groups; CostGroupedMatmul picks again on the routed
    // sizes (a GPU runs its own grouped-GEMM kernel).
    const GpuGemmTile t = ChooseGpuGemmTile(GpuGemmsOf(spec), chip);
    spec.tm = t.tm;
    spec.tk = t.tk;
    spec.tn = t.tn;
    return spec;
  }
  const Annotation* a = instruction.annotation();
  const bool tiled = a != nullptr && a->has_kernel() && a->kernel().tm() > 0 &&
                     a->kernel().tk() > 0 && a->kernel().tn() > 0;
  spec.tm = tiled ? a->kernel().tm() : 128;
  spec.tk = tiled ? a->kernel().tk() : 128;
  spec.tn = tiled ? a->kernel().tn() : 128;
  return spec;
}

absl::StatusOr<std::optional<RoutedOpSpec>> DescribeRoutedOp(const Instruction& instruction,
                                                              int64_t op,
                                                              PreparedModuleData& data) {
  // Not a pass over every opcode: three ops have run-time sizes, everything else is static.
  const Opcode opcode = instruction.opcode();
  const std::string& target = instruction.attributes().custom_call_target;
  RoutedOpSpec routed{.op = op};
  if (opcode == Opcode::kRaggedDot ||
      (opcode == Opcode::kCustomCall && (target == kGmmTarget || target == kTgmmTarget))) {
    const RaggedSizes* ragged = GroupSizesAnnotation(instruction);
    if (ragged == nullptr) return std::optional<RoutedOpSpec>();
    std::optional<GroupedMatmulSpec> spec;
    if (opcode == Opcode::kRaggedDot) {
      spec = RaggedDotGroupedSpec(instruction, *data.chip);
    } else {
      PERFSIM_ASSIGN_OR_RETURN(spec, GroupedMatmulSpecFromInstruction(instruction));
    }
    if (!spec.has_value()) return std::optional<RoutedOpSpec>();
    PERFSIM_ASSIGN_OR_RETURN(routed.layout, LayoutIndex(instruction, ragged->routing(), data));
    routed.kind = RoutedOpSpec::Kind::kGroupedMatmul;
    routed.grouped = *std::move(spec);
    routed.sizes = *ragged;
    return std::optional<RoutedOpSpec>(std::move(routed));
  }
  if (opcode != Opcode::kRaggedAllToAll) return std::optional<RoutedOpSpec>();
  const Annotation* a = instruction.annotation();
  if (a == nullptr || !a->has_traffic() || !a->traffic().has_routing() ||
      a->traffic().direction() == RaggedTransfer::DIRECTION_UNSPECIFIED ||
      instruction.operand_count() < 1 || !instruction.operand(0)->shape().IsArray()) {
    return std::optional<RoutedOpSpec>();
  }
  PERFSIM_ASSIGN_OR_RETURN(routed.layout, LayoutIndex(instruction, a->traffic().routing(), data));
  routed.kind = RoutedOpSpec::Kind::kRaggedAllToAll;
  routed.direction = a->traffic().direction();
  const Shape& operand = instruction.operand(0)->shape();
  routed.row_bytes = static_cast<double>(ByteWidth(operand.element_type()));
  for (int64_t k = 1; k < operand.rank(); ++k) routed.row_bytes *= operand.dimensions(k);
  PERFSIM_ASSIGN_OR_RETURN(routed.groups,
                           CollectiveGroups(instruction, data.num_devices, /*keep_single=*/true));
  return std::optional<RoutedOpSpec>(std::move(routed));
}

namespace {

// Every data-parallel replica (ep consecutive token shards) has the first replica's rows.
bool ReplicasIdentical(const RoutingMatrix& routing, int64_t ep) {
  for (int64_t s = ep; s < routing.sources(); ++s) {
    const int64_t twin = s % ep;
    if (routing.row_index(s) == routing.row_index(twin)) continue;
    if (!std::equal(routing.row(s), routing.row(s) + routing.experts(), routing.row(twin))) {
      return false;
    }
  }
  return true;
}

bool SameRouting(const RoutingSpec& a, const RoutingSpec& b) {
  return a.kind == b.kind && a.parameter == b.parameter && a.file_weights == b.file_weights;
}

using RaggedEntry = SimulatorCache::Impl::RaggedEntry;

// The routing-dependent costs of one Simulate: per layout its matrix, and memos of what the
// routed ops draw from it.
class Evaluator {
 public:
  Evaluator(const PreparedModuleData& data, std::vector<RoutingMatrix> matrices,
            SimulatorCache::Impl& cache)
      : data_(data), matrices_(std::move(matrices)), cache_(cache) {}

  // The group sizes `op` draws on `device`, as an index into sizes(); -1 when the annotation
  // says nothing usable. Devices with equal sizes get the same index.
  int64_t GroupSizes(const RoutedOpSpec& op, int64_t device) {
    const RoutingLayout& layout = data_.layouts[op.layout];
    const RaggedSizes& r = op.sizes;
    const std::vector<int64_t> key = {op.layout,
                                      static_cast<int64_t>(r.rows()),
                                      r.group_offset_per_ep_rank(),
                                      r.group_count(),
                                      r.roll_per_ep_rank(),
                                      r.align()};
    std::vector<int64_t>& per_shard = sizes_of_shard_[key];
    if (per_shard.empty()) per_shard.assign(layout.token_shards, -2);
    const int64_t shard = layout.ShardOf(device);
    int64_t& id = per_shard[shard];
    if (id != -2) return id;
    const RoutingMatrix& matrix = matrices_[op.layout];
    const int64_t* rows = nullptr;
    if (r.rows() == RaggedSizes::ROWS_DEVICE) {
      rows = matrix.row(shard);
    } else if (r.rows() == RaggedSizes::ROWS_EP_GROUP) {
      rows = EpGroup(op.layout, shard / layout.ep).data();
    } else {
      return id = -1;
    }
    std::optional<std::vector<int64_t>> sizes =
        GroupSizesFromRows(r, rows, layout.num_experts, layout.EpRankOf(device));
    if (!sizes.has_value()) return id = -1;
    auto [it, inserted] = sizes_ids_.try_emplace(*std::move(sizes), sizes_.size());
    if (inserted) sizes_.push_back(&it->first);
    return id = it->second;
  }
  const std::vector<int64_t>& sizes(int64_t id) const { return *sizes_[id]; }

  // The cost of grouped matmul `op` with `sizes`.
  absl::StatusOr<RoutedWork> Grouped(const RoutedOpSpec& op, const std::vector<int64_t>& sizes) {
    GroupedMatmulSpec spec = op.grouped;
    std::vector<int64_t> key = {static_cast<int64_t>(spec.kind),
                                static_cast<int64_t>(spec.implementation),
                                spec.m,
                                spec.k,
                                spec.n,
                                spec.num_groups,
                                spec.group_offset,
                                spec.tm,
                                spec.tk,
                                spec.tn,
                                static_cast<int64_t>(spec.lhs_type),
                                static_cast<int64_t>(spec.rhs_type),
                                static_cast<int64_t>(spec.out_type)};
    key.insert(key.end(), sizes.begin(), sizes.end());
    auto it = cache_.grouped.find(key);
    if (it != cache_.grouped.end()) {
      ++cache_.stats.grouped_hits;
      return it->second;
    }
    ++cache_.stats.grouped_misses;
    // A buffer smaller than the routing keeps a prefix, as MaxText's _truncate_matrix does.
    spec.group_sizes = TruncateGroupSizes(sizes, spec.m);
    absl::StatusOr<GroupedMatmulCost> cost = CostGroupedMatmul(spec, *data_.chip);
    if (!cost.ok()) return Annotate(cost.status(), data_.ops[op.op].name);
    RoutedWork work{.seconds = cost->seconds,
                    .flops = cost->work.flops,
                    .bytes = cost->work.bytes_accessed,
                    .bound = cost->bound,
                    .unknown_rates = cost->unknown_rates};
    if (cache_.grouped.size() >= kMaxGroupedEntries) cache_.grouped.clear();
    cache_.grouped.emplace(std::move(key), work);
    return work;
  }

  // The cost of ragged-all-to-all `op` over `group` (device ids) from the routing's traffic.
  absl::StatusOr<std::shared_ptr<const RaggedEntry>> Ragged(const RoutedOpSpec& op,
                                                            const std::vector<int64_t>& group) {
    const RoutingLayout& layout = data_.layouts[op.layout];
    const RoutingMatrix& matrix = matrices_[op.layout];
    const bool to_experts = op.direction == RaggedTransfer::DIRECTION_TO_EXPERTS;
    const int64_t n = static_cast<int64_t>(group.size());
    // The traffic is a function of the group, the direction, the row bytes and each member's
    // EP rank and routing row: the key.
    std::vector<int64_t> rank(n), rows_key;
    rows_key.reserve(2 * n + 1);
    rows_key.push_back(to_experts ? 1 : 0);
    std::vector<int64_t> distinct_rows, row_shards;  // routing row indices, by first use
    std::vector<int64_t> shard(n);
    for (int64_t i = 0; i < n; ++i) {
      shard[i] = layout.ShardOf(group[i]);
      rank[i] = layout.EpRankOf(group[i]);
      const int64_t row = matrix.row_index(shard[i]);
      auto at = std::find(distinct_rows.begin(), distinct_rows.end(), row);
      if (at == distinct_rows.end()) {
        at = distinct_rows.insert(distinct_rows.end(), row);
        row_shards.push_back(shard[i]);
      }
      rows_key.push_back(rank[i]);
      rows_key.push_back(at - distinct_rows.begin());
    }
    // The rows' contents, so that a cache kept across routings tells them apart.
    for (int64_t s : row_shards) {
      rows_key.insert(rows_key.end(), matrix.row(s), matrix.row(s) + layout.num_experts);
    }
    std::vector<int64_t> where = group;
    where.push_back(static_cast<int64_t>(op.row_bytes));
    where.push_back(layout.ep);
    auto key = std::make_pair(std::move(where), std::move(rows_key));
    auto it = cache_.ragged.find(key);
    if (it != cache_.ragged.end()) {
      ++cache_.stats.ragged_hits;
      return it->second;
    }
    ++cache_.stats.ragged_misses;
    // Rows shard i sends to the experts of EP rank r: blocks[i][r].
    std::vector<const std::vector<int64_t>*> blocks(n);
    for (int64_t i = 0; i < n; ++i) blocks[i] = &Blocks(op.layout, shard[i]);
    absl::StatusOr<TrafficTime> routed;
    std::vector<double> local(n);  // bytes a device keeps (its own experts' share)
    if (row_shards.size() == 1) {
      // Every member routes alike: towards the experts each device gets the same bytes from
      // everyone; back from them each device's bytes go to everyone (O(n) routing).
      std::vector<double> per_device(n);
      for (int64_t i = 0; i < n; ++i) {
        per_device[i] = static_cast<double>((*blocks[0])[rank[i]]) * op.row_bytes;
      }
      local = per_device;
      routed = to_experts ? RouteTrafficToEach(group, per_device, *data_.topology)
                          : RouteTrafficFromEach(group, per_device, *data_.topology);
    } else {
      TrafficMatrix traffic;
      traffic.devices = group;
      traffic.bytes.resize(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n; ++i) {
        double* row = &traffic.bytes[i * n];
        for (int64_t j = 0; j < n; ++j) {
          // Back from the experts, device i receives what shard j sent to rank(i).
          row[j] = static_cast<double>(to_experts ? (*blocks[i])[rank[j]] : (*blocks[j])[rank[i]]) *
                   op.row_bytes;
        }
        local[i] = row[i];
      }
      routed = RouteTraffic(traffic, *data_.topology);
    }
    if (!routed.ok()) return Annotate(routed.status(), data_.ops[op.op].name);
    auto entry = std::make_shared<RaggedEntry>();
    entry->seconds = routed->seconds;
    entry->sent.resize(n);
    entry->hbm.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      // Rows read (sent, its own share included) and rows written (received, own share too).
      const DeviceTraffic& t = routed->devices[i];
      entry->sent[i] = t.send_bytes;
      entry->hbm[i] = t.send_bytes + local[i] + t.receive_bytes + local[i];
    }
    if (cache_.ragged.size() >= kMaxRaggedEntries) cache_.ragged.clear();
    cache_.ragged.emplace(std::move(key), entry);
    return std::shared_ptr<const RaggedEntry>(std::move(entry));
  }

 private:
  // Rows per expert the token shards of `replica` route in all (ROWS_EP_GROUP).
  const std::vector<int64_t>& EpGroup(int32_t layout, int64_t replica) {
    auto key = std::make_pair(layout, replica);
    auto it = ep_group_.find(key);
    if (it != ep_group_.end()) return it->second;
    return ep_group_
        .emplace(key, EpGroupRows(matrices_[layout], data_.layouts[layout], replica))
        .first->second;
  }
  // Rows `shard` routes to each EP rank's block of experts.
  const std::vector<int64_t>& Blocks(int32_t layout, int64_t shard) {
    const RoutingMatrix& matrix = matrices_[layout];
    auto key = std::make_pair(layout, matrix.row_index(shard));
    auto it = blocks_.find(key);
    if (it != blocks_.end()) return it->second;
    const RoutingLayout& l = data_.layouts[layout];
    const int64_t el = l.experts_per_rank();
    const int64_t* row = matrix.row(shard);
    std::vector<int64_t> blocks(l.ep, 0);
    for (int64_t r = 0; r < l.ep; ++r) {
      for (int64_t g = 0; g < el; ++g) blocks[r] += row[r * el + g];
    }
    return blocks_.emplace(key, std::move(blocks)).first->second;
  }

  const PreparedModuleData& data_;
  std::vector<RoutingMatrix> matrices_;
  SimulatorCache::Impl& cache_;
  // Per annotation key: the sizes index of each token shard; -2 not yet computed.
  std::map<std::vector<int64_t>, std::vector<int64_t>> sizes_of_shard_;
  std::map<std::vector<int64_t>, int64_t> sizes_ids_;
  std::vector<const std::vector<int64_t>*> sizes_;
  std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> ep_group_;
  std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> blocks_;
};

// The schedule graph of the first `n` devices: collective groups restricted to them (a group
// left with fewer than two waits for no one and is dropped).
absl::StatusOr<std::shared_ptr<const ScheduleGraph>> RestrictedGraph(
    const PreparedModuleData& data, int64_t n, SimulatorCache::Impl& cache) {
  if (n == data.num_devices) return data.graph;
  for (const auto& [key, graph] : cache.graphs) {
    if (key.first == data.id && key.second == n) return graph;
  }
  ScheduleProblem problem{.num_devices = n};
  problem.ops.resize(data.problem.ops.size());
  for (size_t i = 0; i < problem.ops.size(); ++i) {
    const ScheduleOp& full = data.problem.ops[i];
    ScheduleOp& op = problem.ops[i];
    op.operands = full.operands;
    op.stream = full.stream;
    for (const auto& group : full.groups) {
      int64_t kept = 0;
      for (int64_t d : group) kept += d < n ? 1 : 0;
      if (kept < 2) continue;
      std::vector<int64_t>& restricted = op.groups.emplace_back();
      restricted.reserve(kept);
      for (int64_t d : group) {
        if (d < n) restricted.push_back(d);
      }
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph graph, ScheduleGraph::Create(std::move(problem)));
  auto shared = std::make_shared<const ScheduleGraph>(std::move(graph));
  if (cache.graphs.size() >= kMaxGraphs) cache.graphs.pop_front();
  cache.graphs.emplace_back(std::make_pair(data.id, n), shared);
  return shared;
}

absl::StatusOr<std::shared_ptr<const RoutedCosts>> CostRouting(const PreparedModuleData& data,
                                                               const RoutingSpec& routing,
                                                               SimulatorCache::Impl& cache) {
  std::vector<RoutingMatrix> matrices;
  matrices.reserve(data.layouts.size());
  for (size_t k = 0; k < data.layouts.size(); ++k) {
    absl::StatusOr<RoutingMatrix> matrix = BuildLayoutRouting(routing, data.layouts[k]);
    if (!matrix.ok()) {
      return Annotate(matrix.status(), absl::StrCat(data.layout_named_by[k], ": --routing ",
                                                    RoutingSpecToString(routing)));
    }
    matrices.push_back(*std::move(matrix));
  }
  auto costs = std::make_shared<RoutedCosts>();
  costs->prepared_id = data.id;
  costs->routing = routing;
  // Identical replicas run the same timeline: simulate the first (routed.h, "Replicas").
  int64_t n = data.num_devices;
  if (data.layouts.size() == 1) {
    const RoutingLayout& layout = data.layouts[0];
    if (ReplicasIdentical(matrices[0], layout.ep)) n = layout.ep * layout.tp;
  }
  costs->num_devices = n;
  PERFSIM_ASSIGN_OR_RETURN(costs->graph, RestrictedGraph(data, n, cache));
  Evaluator evaluator(data, std::move(matrices), cache);
  const int64_t num_ops = static_cast<int64_t>(data.ops.size());
  ScheduleDurations& durations = costs->durations;
  durations.uniform.resize(num_ops);
  for (int64_t i = 0; i < num_ops; ++i) durations.uniform[i] = data.ops[i].seconds;
  durations.row.assign(num_ops, -1);
  costs->routed.resize(data.routed.size());
  for (size_t k = 0; k < data.routed.size(); ++k) {
    const RoutedOpSpec& op = data.routed[k];
    RoutedTime& time = costs->routed[k];
    time.work_of_device.assign(n, -1);
    if (op.kind == RoutedOpSpec::Kind::kGroupedMatmul) {
      std::vector<int64_t> ids(n);
      bool known = true;
      for (int64_t d = 0; d < n && known; ++d) {
        ids[d] = evaluator.GroupSizes(op, d);
        known = ids[d] >= 0;
      }
      // Sizes the annotation does not give: the op keeps its static time.
      if (!known) {
        time.work_of_device.clear();
        continue;
      }
      // Costs by sizes index: devices with equal group sizes cost the same.
      std::vector<int32_t> work_of_sizes;
      for (int64_t d = 0; d < n; ++d) {
        if (ids[d] >= static_cast<int64_t>(work_of_sizes.size())) {
          work_of_sizes.resize(ids[d] + 1, -1);
        }
        int32_t& w = work_of_sizes[ids[d]];
        if (w < 0) {
          PERFSIM_ASSIGN_OR_RETURN(RoutedWork work, evaluator.Grouped(op, evaluator.sizes(ids[d])));
          w = static_cast<int32_t>(time.work.size());
          time.work.push_back(std::move(work));
        }
        time.work_of_device[d] = w;
      }
    } else {
      for (const std::vector<int64_t>& group : op.groups) {
        if (group.empty() || group.front() >= n) continue;
        PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<const RaggedEntry> entry,
                                 evaluator.Ragged(op, group));
        for (size_t m = 0; m < group.size(); ++m) {
          if (group[m] >= n) continue;
          time.work_of_device[group[m]] = static_cast<int32_t>(time.work.size());
          time.work.push_back(RoutedWork{.seconds = entry->seconds,
                                         .bytes = entry->hbm[m],
                                         .sent_bytes = entry->sent[m],
                                         .bound = Bound::kCommunication});
        }
      }
      // A device in no group moves nothing.
      int32_t idle = -1;
      for (int32_t& w : time.work_of_device) {
        if (w >= 0) continue;
        if (idle < 0) {
          idle = static_cast<int32_t>(time.work.size());
          time.work.push_back(RoutedWork{.bound = Bound::kNone});
        }
        w = idle;
      }
    }
    durations.row[op.op] = static_cast<int32_t>(durations.per_device.size() / n);
    for (int64_t d = 0; d < n; ++d) {
      durations.per_device.push_back(time.work[time.work_of_device[d]].seconds);
    }
  }
  return std::shared_ptr<const RoutedCosts>(std::move(costs));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const RoutedCosts>> RoutedCostsFor(const PreparedModuleData& data,
                                                                  const RoutingSpec& routing,
                                                                  SimulatorCache::Impl& cache) {
  if (cache.context != data.cost_context) {
    cache.grouped.clear();
    cache.ragged.clear();
    cache.context = data.cost_context;
  }
  for (auto it = cache.routed.rbegin(); it != cache.routed.rend(); ++it) {
    if ((*it)->prepared_id == data.id && SameRouting((*it)->routing, routing)) {
      ++cache.stats.routing_hits;
      return *it;
    }
  }
  ++cache.stats.routing_misses;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<const RoutedCosts> costs,
                           CostRouting(data, routing, cache));
  if (cache.routed.size() >= kMaxRoutedCosts) cache.routed.pop_front();
  cache.routed.push_back(costs);
  return costs;
}

}  // namespace perfsim
