// PredictWithRouting and Predict (predict.h): the routing-dependent stage.
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/comm/traffic.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/predict/predict.h"
#include "sim/predict/predict_internal.h"
#include "sim/util/status.h"

namespace perfsim {

PredictCache::PredictCache() : impl_(std::make_unique<Impl>()) {}
PredictCache::~PredictCache() = default;
PredictCache::Stats PredictCache::stats() const { return impl_->stats; }

namespace {

// Bounds of a PredictCache (entries; values are pure functions of their keys, so dropping them
// changes no result).
constexpr size_t kMaxRoutedCosts = 64;
constexpr size_t kMaxGroupedEntries = 1 << 16;
constexpr size_t kMaxRaggedEntries = 1 << 12;

// A device's place in the mesh (dp, fsdp, ep, tp, major to minor; sim/lowering MeshGroups):
// `dp` is its token replica, dp and fsdp together (dp_index · fsdp + fsdp_index), so its token
// shard — a row of the routing matrix — is dp · EP + ep.
struct DeviceCoords {
  int64_t dp, ep, tp;
};

DeviceCoords Coords(const Parallelism& p, int64_t device) {
  return {device / (p.tp * p.ep), (device / p.tp) % p.ep, device % p.tp};
}

// Every data-parallel replica of the (ep, tp) grid has the same routing rows.
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

// The routing-dependent costs of one evaluation.
class Evaluator {
 public:
  Evaluator(const PreparedStepData& data, const RoutingMatrix& routing, PredictCache::Impl& cache)
      : data_(data),
        spec_(data.options.spec),
        p_(spec_.parallelism),
        routing_(routing),
        cache_(cache) {}

  // Rows per group of a grouped matmul with `groups` groups on `device` (before truncation to
  // the op's buffer), as an index into sizes(); -1 when the routing does not say. Devices
  // with equal sizes get the same index.
  int64_t GroupSizes(const RaggedSizes& ragged, int64_t device) {
    const DeviceCoords c = Coords(p_, device);
    std::vector<int64_t>& per_shard = sizes_of_shard_[Key(ragged)];
    if (per_shard.empty()) per_shard.assign(spec_.token_shards(), -2);
    int64_t& id = per_shard[c.dp * p_.ep + c.ep];
    if (id != -2) return id;
    std::optional<std::vector<int64_t>> sizes = ComputeGroupSizes(ragged, c);
    if (!sizes.has_value()) return id = -1;
    auto [it, inserted] = sizes_ids_.try_emplace(*std::move(sizes), sizes_.size());
    if (inserted) sizes_.push_back(&it->first);
    return id = it->second;
  }
  const std::vector<int64_t>& sizes(int64_t id) const { return *sizes_[id]; }

  // GroupSizes of devices 0 .. n − 1.
  const std::vector<int64_t>& DeviceSizes(const RaggedSizes& ragged, int64_t n) {
    std::vector<int64_t>& ids = device_sizes_[Key(ragged)];
    if (ids.empty()) {
      ids.resize(n);
      for (int64_t d = 0; d < n; ++d) ids[d] = GroupSizes(ragged, d);
    }
    return ids;
  }

  // The cost of grouped matmul `op` with `sizes`.
  absl::StatusOr<GroupedEntry> Grouped(const PreparedOp& op, const std::vector<int64_t>& sizes) {
    GroupedMatmulSpec spec = *op.grouped;
    std::vector<int64_t> key = {static_cast<int64_t>(spec.kind),
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
    // A buffer smaller than the routing (a dropping ragged_buffer_factor) keeps a prefix, as
    // MaxText's _truncate_matrix does.
    std::vector<int64_t> truncated = sizes;
    int64_t left = spec.m;
    for (int64_t& s : truncated) {
      s = std::min(s, left);
      left -= s;
    }
    spec.group_sizes = std::move(truncated);
    absl::StatusOr<GroupedMatmulCost> cost = CostGroupedMatmul(spec, *data_.chip);
    if (!cost.ok()) return Annotate(cost.status(), op.info.name);
    GroupedEntry entry{.seconds = cost->seconds,
                       .flops = cost->work.flops,
                       .bytes = cost->work.bytes_accessed,
                       .bound = cost->bound};
    if (cache_.grouped.size() >= kMaxGroupedEntries) cache_.grouped.clear();
    cache_.grouped.emplace(std::move(key), entry);
    return entry;
  }

  // The cost of ragged-all-to-all `op` over `group` (device ids) from the routing's traffic.
  absl::StatusOr<std::shared_ptr<const RaggedEntry>> Ragged(const PreparedOp& op,
                                                            const std::vector<int64_t>& group) {
    const int64_t n = static_cast<int64_t>(group.size());
    const int64_t e = spec_.model.num_experts(), el = e / p_.ep;
    // The traffic is a function of the group, the direction, the row bytes and each member's
    // expert shard and routing row: the key.
    std::vector<DeviceCoords> coords;
    coords.reserve(n);
    std::vector<int64_t> rows_key;
    rows_key.reserve(2 * n + 1);
    rows_key.push_back(op.to_experts ? 1 : 0);
    std::vector<int64_t> distinct_rows, row_sources;  // routing row indices, by first use
    for (int64_t d : group) {
      coords.push_back(Coords(p_, d));
      const int64_t source = coords.back().dp * p_.ep + coords.back().ep;
      const int64_t row = routing_.row_index(source);
      auto at = std::find(distinct_rows.begin(), distinct_rows.end(), row);
      if (at == distinct_rows.end()) {
        at = distinct_rows.insert(distinct_rows.end(), row);
        row_sources.push_back(source);
      }
      rows_key.push_back(coords.back().ep);
      rows_key.push_back(at - distinct_rows.begin());
    }
    // The rows' contents, so that a cache kept across routings tells them apart.
    for (int64_t source : row_sources) {
      const int64_t* counts = routing_.row(source);
      rows_key.insert(rows_key.end(), counts, counts + e);
    }
    std::vector<int64_t> where = group;
    where.push_back(static_cast<int64_t>(op.row_bytes));
    where.push_back(p_.ep);
    auto key = std::make_pair(std::move(where), std::move(rows_key));
    auto it = cache_.ragged.find(key);
    if (it != cache_.ragged.end()) {
      ++cache_.stats.ragged_hits;
      return it->second;
    }
    ++cache_.stats.ragged_misses;
    // Bytes token shard i sends to the experts of shard j: shard_rows[i][ep of j] rows.
    std::vector<const std::vector<int64_t>*> shard_rows(n);
    for (int64_t i = 0; i < n; ++i) {
      shard_rows[i] = &ShardRows(coords[i].dp * p_.ep + coords[i].ep, el);
    }
    absl::StatusOr<TrafficTime> routed;
    std::vector<double> local(n);  // bytes a device keeps (its own experts' share)
    if (row_sources.size() == 1) {
      // Every member routes alike: dispatch sends each device the same bytes from everyone,
      // combine returns each device's bytes to everyone (O(n) routing).
      std::vector<double> per_device(n);
      for (int64_t i = 0; i < n; ++i) {
        per_device[i] = static_cast<double>((*shard_rows[0])[coords[i].ep]) * op.row_bytes;
      }
      local = per_device;
      routed = op.to_experts ? RouteTrafficToEach(group, per_device, *data_.topology)
                             : RouteTrafficFromEach(group, per_device, *data_.topology);
    } else {
      TrafficMatrix traffic;
      traffic.devices = group;
      traffic.bytes.resize(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n; ++i) {
        double* row = &traffic.bytes[i * n];
        if (op.to_experts) {
          const std::vector<int64_t>& rows = *shard_rows[i];
          for (int64_t j = 0; j < n; ++j) {
            row[j] = static_cast<double>(rows[coords[j].ep]) * op.row_bytes;
          }
        } else {
          // Back from the experts: device i receives what it sent to each shard j.
          const int64_t ep = coords[i].ep;
          for (int64_t j = 0; j < n; ++j) {
            row[j] = static_cast<double>((*shard_rows[j])[ep]) * op.row_bytes;
          }
        }
        local[i] = row[i];
      }
      routed = RouteTraffic(traffic, *data_.topology);
    }
    if (!routed.ok()) return Annotate(routed.status(), op.info.name);
    auto entry = std::make_shared<RaggedEntry>();
    entry->seconds = routed->seconds;
    entry->sent.resize(n);
    entry->hbm.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      // Rows read (sent, its own share included) and rows written (received, own share too).
      const DeviceTraffic& t = routed->devices[i];
      entry->sent[i] = t.send_bytes;
      entry->max_sent = std::max(entry->max_sent, t.send_bytes);
      entry->hbm[i] = t.send_bytes + local[i] + t.receive_bytes + local[i];
    }
    if (cache_.ragged.size() >= kMaxRaggedEntries) cache_.ragged.clear();
    cache_.ragged.emplace(std::move(key), entry);
    return std::shared_ptr<const RaggedEntry>(std::move(entry));
  }

 private:
  static std::vector<int64_t> Key(const RaggedSizes& r) {
    return {static_cast<int64_t>(r.rows()), r.group_offset_per_ep_rank(), r.group_count(),
            r.roll_per_ep_rank(), r.align()};
  }

  // The sizes the annotation (proto/annotation.proto RaggedSizes) says the operand holds on the
  // device at `c`: group g is expert (r·offset + r·roll + g) mod E of the device's own routing
  // row or of its EP group's, r the device's EP rank; nullopt when the annotation says nothing.
  std::optional<std::vector<int64_t>> ComputeGroupSizes(const RaggedSizes& ragged,
                                                        const DeviceCoords& c) {
    const int64_t e = spec_.model.num_experts();
    const int64_t src = c.dp * p_.ep + c.ep;
    const int64_t* rows = nullptr;
    switch (ragged.rows()) {
      case RaggedSizes::ROWS_DEVICE: rows = routing_.row(src); break;
      case RaggedSizes::ROWS_EP_GROUP: rows = Received(c.dp).data(); break;
      default: return std::nullopt;
    }
    const int64_t groups = ragged.group_count();
    if (groups <= 0 || groups > e) return std::nullopt;
    const int64_t first =
        c.ep * (ragged.group_offset_per_ep_rank() + ragged.roll_per_ep_rank());
    std::vector<int64_t> sizes(groups);
    for (int64_t g = 0; g < groups; ++g) sizes[g] = rows[(first + g) % e];
    const int64_t a = ragged.align();
    if (a > 1) {
      for (int64_t& s : sizes) s = (s + a - 1) / a * a;
    }
    return sizes;
  }

  // Rows per expert that the token shards of replica `dp` send in all.
  const std::vector<int64_t>& Received(int64_t dp) {
    auto it = received_.find(dp);
    if (it != received_.end()) return it->second;
    std::vector<int64_t> total(spec_.model.num_experts(), 0);
    bool one_row = true;
    for (int64_t j = 1; j < p_.ep; ++j) {
      one_row = one_row && routing_.row_index(dp * p_.ep + j) == routing_.row_index(dp * p_.ep);
    }
    if (one_row) {
      // Every shard of the replica sends alike (integers: the product is the sum).
      const int64_t* row = routing_.row(dp * p_.ep);
      for (size_t g = 0; g < total.size(); ++g) total[g] = row[g] * p_.ep;
    } else {
      for (int64_t j = 0; j < p_.ep; ++j) {
        const int64_t* row = routing_.row(dp * p_.ep + j);
        for (size_t g = 0; g < total.size(); ++g) total[g] += row[g];
      }
    }
    return received_.emplace(dp, std::move(total)).first->second;
  }

  // Rows `source` sends to each expert shard (blocks of `el` experts).
  const std::vector<int64_t>& ShardRows(int64_t source, int64_t el) {
    const int64_t row_index = routing_.row_index(source);
    auto it = shard_rows_.find(row_index);
    if (it != shard_rows_.end()) return it->second;
    const int64_t* row = routing_.row(source);
    std::vector<int64_t> blocks(p_.ep, 0);
    for (int64_t s = 0; s < p_.ep; ++s) {
      for (int64_t g = 0; g < el; ++g) blocks[s] += row[s * el + g];
    }
    return shard_rows_.emplace(row_index, std::move(blocks)).first->second;
  }

  const PreparedStepData& data_;
  const StepSpec& spec_;
  const Parallelism& p_;
  const RoutingMatrix& routing_;
  PredictCache::Impl& cache_;
  // Per group count: the sizes index of each token shard (dp·EP + ep); -2 not yet computed.
  std::map<std::vector<int64_t>, std::vector<int64_t>> sizes_of_shard_;
  std::map<std::vector<int64_t>, int64_t> sizes_ids_;
  std::vector<const std::vector<int64_t>*> sizes_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> device_sizes_;
  std::map<int64_t, std::vector<int64_t>> received_;
  std::map<int64_t, std::vector<int64_t>> shard_rows_;
};

bool SameRouting(const RoutingSpec& a, const RoutingSpec& b) {
  return a.kind == b.kind && a.parameter == b.parameter && a.file_weights == b.file_weights;
}

// Everything PredictWithRouting derives from the routing before the schedule: the simulated
// devices, their graph, every op's durations and the per-device costs of the routed ops.
absl::StatusOr<std::shared_ptr<const RoutedCosts>> CostRouting(const PreparedStepData& data,
                                                               const RoutingSpec& routing_spec,
                                                               PredictCache::Impl& cache) {
  const StepSpec& spec = data.options.spec;
  const Parallelism& par = spec.parallelism;
  PERFSIM_ASSIGN_OR_RETURN(
      RoutingMatrix routing,
      BuildRoutingMatrix(routing_spec, spec.token_shards(), spec.tokens_per_device(),
                         spec.model.experts_per_token(), spec.model.num_experts(),
                         /*sources_per_cycle=*/par.ep));
  auto costs = std::make_shared<RoutedCosts>();
  costs->step_id = data.id;
  costs->routing = routing_spec;
  // Identical replicas run the same timeline: simulate replica dp = 0 (ids 0 .. EP·TP − 1,
  // step_spec.h's numbering) and let collectives over dp act within it.
  const int64_t n = ReplicasIdentical(routing, par.ep) ? par.ep * par.tp : spec.num_devices();
  costs->num_devices = n;
  if (n == data.replica_devices) {
    costs->graph = data.replica_graph;
  } else {
    for (const auto& other : cache.routed) {
      if (other->step_id == data.id && other->num_devices == n) costs->graph = other->graph;
    }
    if (costs->graph == nullptr) {
      PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph graph, BuildScheduleGraph(data, n));
      costs->graph = std::make_shared<const ScheduleGraph>(std::move(graph));
    }
  }
  Evaluator evaluator(data, routing, cache);
  const int64_t num_ops = static_cast<int64_t>(data.ops.size());
  ScheduleDurations& durations = costs->durations;
  durations.uniform.resize(num_ops);
  durations.row.assign(num_ops, -1);
  costs->ops.resize(num_ops);
  // Appends a row of per-device durations for op i.
  auto add_row = [&](int64_t i) {
    durations.row[i] = static_cast<int32_t>(durations.per_device.size() / n);
    durations.per_device.resize(durations.per_device.size() + n, 0.0);
    return &durations.per_device[durations.per_device.size() - n];
  };
  for (int64_t i = 0; i < num_ops; ++i) {
    const PreparedOp& prepared_op = data.ops[i];
    durations.uniform[i] = prepared_op.base_seconds;
    RoutedOp& routed = costs->ops[i];
    switch (prepared_op.kind) {
      case PreparedOp::Kind::kPlain:
        break;
      case PreparedOp::Kind::kGroupedMatmul: {
        if (!prepared_op.grouped.has_value() || !prepared_op.ragged.has_value()) break;
        const std::vector<int64_t>& ids = evaluator.DeviceSizes(*prepared_op.ragged, n);
        if (std::any_of(ids.begin(), ids.end(), [](int64_t id) { return id < 0; })) break;
        // Costs by sizes index: devices with equal group sizes cost the same.
        std::vector<int32_t> entry_of_sizes;
        routed.grouped_of.resize(n);
        for (int64_t d = 0; d < n; ++d) {
          const int64_t id = ids[d];
          if (id >= static_cast<int64_t>(entry_of_sizes.size())) entry_of_sizes.resize(id + 1, -1);
          if (entry_of_sizes[id] < 0) {
            PERFSIM_ASSIGN_OR_RETURN(GroupedEntry entry,
                                     evaluator.Grouped(prepared_op, evaluator.sizes(id)));
            entry_of_sizes[id] = static_cast<int32_t>(routed.grouped.size());
            routed.grouped.push_back(entry);
          }
          routed.grouped_of[d] = entry_of_sizes[id];
        }
        double* row = add_row(i);
        for (int64_t d = 0; d < n; ++d) row[d] = routed.grouped[routed.grouped_of[d]].seconds;
        break;
      }
      case PreparedOp::Kind::kRaggedAllToAll: {
        routed.ragged.assign(n, nullptr);
        routed.member.assign(n, 0);
        const int32_t row_index = static_cast<int32_t>(durations.per_device.size() / n);
        add_row(i);
        for (const auto& group : prepared_op.groups()) {
          if (group.empty() || group.front() >= n) continue;
          PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<const RaggedEntry> entry,
                                   evaluator.Ragged(prepared_op, group));
          double* row = &durations.per_device[static_cast<size_t>(row_index) * n];
          for (size_t k = 0; k < group.size(); ++k) {
            const int64_t d = group[k];
            if (d >= n) continue;
            row[d] = entry->seconds;
            routed.ragged[d] = entry;
            routed.member[d] = static_cast<int32_t>(k);
          }
        }
        break;
      }
    }
  }
  return std::shared_ptr<const RoutedCosts>(std::move(costs));
}

// The routing's costs on `data`, from the cache when it has them.
absl::StatusOr<std::shared_ptr<const RoutedCosts>> RoutedCostsFor(const PreparedStepData& data,
                                                                  const RoutingSpec& routing,
                                                                  PredictCache::Impl& cache) {
  if (cache.context != data.cost_context) {
    cache.grouped.clear();
    cache.ragged.clear();
    cache.context = data.cost_context;
  }
  for (auto it = cache.routed.rbegin(); it != cache.routed.rend(); ++it) {
    if ((*it)->step_id == data.id && SameRouting((*it)->routing, routing)) {
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

}  // namespace

absl::StatusOr<Prediction> PredictWithRouting(const PreparedStep& prepared,
                                              const RoutingSpec& routing_spec,
                                              const EvaluateOptions& options) {
  const PreparedStepData& data = prepared.data();
  const StepSpec& spec = data.options.spec;
  PredictCache local_cache;
  PredictCache::Impl& cache = options.cache != nullptr ? options.cache->impl() : local_cache.impl();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<const RoutedCosts> costs,
                           RoutedCostsFor(data, routing_spec, cache));
  const std::vector<RoutedOp>& routed = costs->ops;
  const int64_t num_ops = static_cast<int64_t>(data.ops.size());
  PERFSIM_ASSIGN_OR_RETURN(Schedule schedule, SimulateSchedule(*costs->graph, costs->durations,
                                                               {.every_class = options.detail}));
  const int64_t slow = schedule.slowest_device;
  const DeviceSchedule& ds = schedule.device(slow);

  Prediction result{.options = data.options};
  result.options.routing = routing_spec;
  result.chip = data.chip->name();
  result.mesh = data.mesh;
  result.num_devices = spec.num_devices();
  result.slowest_device = slow;
  result.step_seconds = schedule.makespan;
  result.compute_busy = ds.compute_busy;
  result.communication_busy = ds.communication_busy;
  result.exposed_communication = ds.exposed_communication;
  result.unknown_rates = data.unknown_rates;

  // The rows of `device`: routing-dependent flops, bytes and bound filled in.
  auto row_of = [&](int64_t i, int64_t device) {
    OpRow row = data.ops[i].info;
    const RoutedOp& r = routed[i];
    if (!r.grouped_of.empty()) {
      const GroupedEntry& g = r.grouped[r.grouped_of[device]];
      row.flops = g.flops;
      row.bytes = g.bytes;
      row.bound = g.bound;
    } else if (!r.ragged.empty() && r.ragged[device] != nullptr) {
      row.sent_bytes = r.ragged[device]->sent[r.member[device]];
      row.bytes = r.ragged[device]->hbm[r.member[device]];
      const RaggedEntry* previous = nullptr;
      for (const auto& entry : r.ragged) {
        if (entry == nullptr || entry.get() == previous) continue;
        previous = entry.get();
        row.max_sent_bytes = std::max(row.max_sent_bytes, entry->max_sent);
      }
    }
    return row;
  };
  // Phase subtotals in issue order; the rows by start time (ties in issue order).
  PhaseTotal phases[kNumPredictPhases];
  bool present[kNumPredictPhases] = {};
  std::vector<int64_t> shown;
  if (options.detail) shown.reserve(num_ops);
  for (int64_t i : schedule.order) {
    if (data.ops[i].stream == Stream::kNone) continue;
    if (options.detail) shown.push_back(i);
    const int p = data.phase[i];
    if (p < 0) continue;
    const RoutedOp& r = routed[i];
    const OpRow& info = data.ops[i].info;
    double flops = info.flops, bytes = info.bytes;
    if (!r.grouped_of.empty()) {
      const GroupedEntry& g = r.grouped[r.grouped_of[slow]];
      flops = g.flops;
      bytes = g.bytes;
    } else if (!r.ragged.empty() && r.ragged[slow] != nullptr) {
      bytes = r.ragged[slow]->hbm[r.member[slow]];
    }
    PhaseTotal& t = phases[p];
    present[p] = true;
    t.seconds += ds.finish[i] - ds.start[i];
    t.flops += flops;
    t.bytes += bytes;
  }
  if (options.detail) {
    std::stable_sort(shown.begin(), shown.end(),
                     [&](int64_t a, int64_t b) { return ds.start[a] < ds.start[b]; });
    result.ops.reserve(shown.size());
    for (int64_t i : shown) {
      OpRow& row = result.ops.emplace_back(row_of(i, slow));
      row.start = ds.start[i];
      row.seconds = ds.finish[i] - ds.start[i];
    }
  }
  for (int p = 0; p < kNumPredictPhases; ++p) {
    if (!present[p]) continue;
    phases[p].phase = kPredictPhaseNames[p];
    result.phases.push_back(phases[p]);
  }

  result.model_flops_per_device = data.model_flops_per_device;
  result.peak_flops_per_device = data.peak_flops_per_device;
  if (result.peak_flops_per_device > 0 && result.step_seconds > 0) {
    result.mfu =
        result.model_flops_per_device / (result.step_seconds * result.peak_flops_per_device);
  }

  // HBM: the static terms, and the peak of everything else live over the issue order: a value
  // lives from its op to its last user.
  MemoryUse& mem = result.memory;
  mem.parameters = data.parameters;
  mem.gradients = data.gradients;
  mem.optimizer = data.optimizer;
  mem.activations = data.input_activations;
  {
    std::vector<int64_t> position(num_ops);
    for (size_t k = 0; k < schedule.order.size(); ++k) position[schedule.order[k]] = k;
    std::vector<int64_t> last_use(num_ops, -1);
    for (int64_t i = 0; i < num_ops; ++i) {
      for (int64_t o : data.ops[i].operands) last_use[o] = std::max(last_use[o], position[i]);
    }
    std::vector<double> delta(schedule.order.size() + 1, 0);
    for (int64_t i = 0; i < num_ops; ++i) {
      const PreparedOp& op = data.ops[i];
      if (!op.in_memory) continue;
      const int64_t from = position[i];
      const int64_t to = std::max<int64_t>(from, last_use[i]);
      delta[from] += op.result_bytes;
      delta[to + 1] -= op.result_bytes;
    }
    double live = 0, peak = 0;
    for (double d : delta) {
      live += d;
      peak = std::max(peak, live);
    }
    mem.activations += peak;
  }
  mem.total = mem.parameters + mem.gradients + mem.optimizer + mem.activations;
  mem.capacity = data.capacity;
  mem.fits = mem.total <= mem.capacity;

  if (options.detail) {
    result.op_info.reserve(num_ops);
    for (int64_t i = 0; i < num_ops; ++i) result.op_info.push_back(data.ops[i].info);
    result.schedule = std::move(schedule);
  }
  // Never output a number that is not one: each op's time is checked as it is costed, so a
  // non-finite total means sums past the range of a double, from sizes or rates the input set.
  for (const auto& [what, value] :
       {std::pair<const char*, double>{"step time", result.step_seconds},
        {"HBM per device", result.memory.total},
        {"model flops per device", result.model_flops_per_device}}) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "predict: expected a finite ", what, "; got ", value,
          " (the scenario's sizes or the chip's rates are out of range)"));
    }
  }
  return result;
}

absl::StatusOr<Prediction> Predict(const PredictOptions& options) {
  PERFSIM_ASSIGN_OR_RETURN(PreparedStep step, PrepareStep(options));
  return PredictWithRouting(step, options.routing);
}

}  // namespace perfsim
