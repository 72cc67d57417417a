#include "sim/predict/predict.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_cost.h"
#include "sim/fit/module_fit.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/moe/step_graph.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<PredictOptions> DefaultPredictOptions() {
  PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel("deepseek_v3"));
  PredictOptions o{.spec = StepSpec::Defaults(std::move(model))};
  o.spec.batch = 512;
  o.spec.seq = 4096;
  o.spec.phase = Phase::kForwardBackward;
  o.spec.parallelism = Parallelism{.dp = 2, .ep = 256};
  o.spec.backend = "ep_ragged_a2a";
  o.hw = "tpu_v7x";
  o.mesh = "4x8x8";
  return o;
}

namespace {

// The stage an instruction was lowered in, from its metadata op_name "moe/<stage>".
std::string StageOf(const Instruction& instruction) {
  const std::string& m = instruction.attributes().metadata;
  const size_t at = m.find("op_name=\"moe/");
  if (at == std::string::npos) return "";
  const size_t begin = at + 13, end = m.find('"', begin);
  return m.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string PhaseOfStage(const std::string& stage) {
  for (int s = 0; s <= static_cast<int>(Stage::kGradSync); ++s) {
    if (StageName(static_cast<Stage>(s)) == stage) return std::string(StagePhase(static_cast<Stage>(s)));
  }
  return "other";
}

struct DeviceCoords {
  int64_t dp, ep, tp;
};

DeviceCoords Coords(const Parallelism& p, int64_t device) {
  return {device / (p.tp * p.ep), (device / p.tp) % p.ep, device % p.tp};
}

// The per-device context of one prediction.
class Predictor {
 public:
  Predictor(const PredictOptions& o, const Chip& chip, const Topology& topology,
            const LoweredStep& step, const RoutingMatrix& routing)
      : o_(o), chip_(chip), topology_(topology), step_(step), routing_(routing),
        p_(o.spec.parallelism) {}

  // Group sizes of a grouped matmul with `groups` groups on `device`; nullopt when the routing
  // does not say (an op of another kind of grouping).
  std::optional<std::vector<int64_t>> GroupSizes(int64_t groups, int64_t device) const {
    const int64_t e = o_.spec.model.num_experts();
    const int64_t el = e / p_.ep;
    const DeviceCoords c = Coords(p_, device);
    const int64_t src = c.dp * p_.ep + c.ep;
    std::vector<int64_t> sizes;
    if (o_.spec.backend == "ring_of_experts" && groups == e) {
      // Rolled so the local experts come first; rows from the whole EP group.
      sizes.assign(e, 0);
      for (int64_t j = 0; j < p_.ep; ++j) {
        for (int64_t g = 0; g < e; ++g) {
          sizes[g] += routing_.at(c.dp * p_.ep + j, (g + el * c.ep) % e);
        }
      }
    } else if (groups == e && p_.ep == 1) {
      for (int64_t g = 0; g < e; ++g) sizes.push_back(routing_.at(src, g));
    } else if (groups == el && p_.ep > 1) {
      sizes.assign(el, 0);
      for (int64_t j = 0; j < p_.ep; ++j) {
        for (int64_t g = 0; g < el; ++g) sizes[g] += routing_.at(c.dp * p_.ep + j, c.ep * el + g);
      }
    } else if (groups == e) {
      for (int64_t g = 0; g < e; ++g) sizes.push_back(routing_.at(src, g));
    } else {
      return std::nullopt;
    }
    const int64_t a = o_.spec.knobs.align_size;
    if (o_.spec.backend == "grouped_gemm_aligned" && a > 1) {
      for (int64_t& s : sizes) s = (s + a - 1) / a * a;
    }
    return sizes;
  }

  // Seconds of a grouped matmul (ragged-dot or gmm/tgmm) on `device`.
  absl::StatusOr<std::optional<GroupedMatmulCost>> GroupedCost(const Instruction& instruction,
                                                               int64_t device) const {
    GroupedMatmulSpec spec;
    if (instruction.opcode() == Opcode::kCustomCall) {
      PERFSIM_ASSIGN_OR_RETURN(spec, GroupedMatmulSpecFromInstruction(instruction));
    } else {
      const RaggedDotDimensionNumbers& d = *instruction.attributes().ragged_dot_dimension_numbers;
      const Shape& lhs = instruction.operand(0)->shape();
      const Shape& rhs = instruction.operand(1)->shape();
      const Shape& gs = instruction.operand(2)->shape();
      if (lhs.rank() != 2 || gs.rank() != 1) return std::nullopt;
      spec.num_groups = gs.dimensions(0);
      spec.lhs_type = lhs.element_type();
      spec.rhs_type = rhs.element_type();
      spec.out_type = instruction.shape().element_type();
      if (!d.rhs_group_dimensions.empty()) {
        spec.kind = GroupedMatmulKind::kGmm;
        spec.m = lhs.dimensions(0);
        spec.k = lhs.dimensions(d.dot.lhs_contracting_dimensions.at(0));
        spec.n = instruction.shape().dimensions(1);
      } else {
        spec.kind = GroupedMatmulKind::kTgmm;
        spec.m = lhs.dimensions(0);
        spec.k = lhs.dimensions(1);
        spec.n = rhs.dimensions(1);
      }
    }
    const int64_t total_groups = instruction.operand(2)->shape().dimensions(0);
    std::optional<std::vector<int64_t>> sizes = GroupSizes(total_groups, device);
    if (!sizes.has_value()) return std::nullopt;
    // A buffer smaller than the routing (a dropping ragged_buffer_factor) keeps a prefix, as
    // MaxText's _truncate_matrix does.
    int64_t left = spec.m;
    for (int64_t& s : *sizes) {
      s = std::min(s, left);
      left -= s;
    }
    spec.group_sizes = std::move(sizes);
    PERFSIM_ASSIGN_OR_RETURN(GroupedMatmulCost cost, CostGroupedMatmul(spec, chip_));
    return cost;
  }

  // Seconds of a ragged-all-to-all on `device` from the routing's traffic in its group.
  // Bytes `device` sends to the rest of its group in the last RaggedA2aSeconds call's traffic.
  absl::flat_hash_map<std::string, double> sent_;

  absl::StatusOr<double> RaggedA2aSeconds(const Instruction& instruction, int64_t device,
                                          const std::vector<int64_t>& group) {
    const std::string stage = StageOf(instruction);
    // dispatch and combine_bwd send rows towards the experts; combine and dispatch_bwd back.
    const bool to_experts = stage == "dispatch" || stage == "combine_bwd";
    const DeviceCoords c = Coords(p_, device);
    const std::string key = absl::StrCat(instruction.name(), "/", c.dp, "/", c.tp);
    auto it = a2a_cache_.find(key);
    if (it != a2a_cache_.end()) return it->second;
    const Shape& operand = instruction.operand(0)->shape();
    double row_bytes = static_cast<double>(ByteWidth(operand.element_type()));
    for (int64_t i = 1; i < operand.rank(); ++i) row_bytes *= operand.dimensions(i);
    const int64_t e = o_.spec.model.num_experts(), el = e / p_.ep;
    TrafficMatrix traffic = TrafficMatrix::Zero(group);
    const int64_t n = static_cast<int64_t>(group.size());
    for (int64_t i = 0; i < n; ++i) {
      const DeviceCoords ci = Coords(p_, group[i]);
      for (int64_t j = 0; j < n; ++j) {
        const DeviceCoords cj = Coords(p_, group[j]);
        // Rows token shard (ci) sends to the experts of shard (cj).
        const DeviceCoords& src = to_experts ? ci : cj;
        const DeviceCoords& dst = to_experts ? cj : ci;
        int64_t rows = 0;
        for (int64_t g = 0; g < el; ++g) rows += routing_.at(src.dp * p_.ep + src.ep, dst.ep * el + g);
        traffic.set(i, j, rows * row_bytes);
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      double sent = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (j != i) sent += traffic.get(i, j);
      }
      sent_[absl::StrCat(instruction.name(), "@", group[i])] = sent;
    }
    // Cost this group alone: a copy of the instruction whose only replica group is `group`
    // (the full matrix over every device would be devices² entries: 67M at 8192 devices).
    Instruction one_group(instruction.opcode(), instruction.name(), instruction.shape());
    for (Instruction* operand : instruction.operands()) one_group.AppendOperand(operand);
    *one_group.mutable_attributes() = instruction.attributes();
    ReplicaGroups groups;
    groups.groups = {group};
    one_group.mutable_attributes()->replica_groups = std::move(groups);
    CollectiveCostOptions options{.traffic = &traffic};
    PERFSIM_ASSIGN_OR_RETURN(CollectiveCost cost,
                             CostCollectiveInstruction(one_group, topology_, options));
    a2a_cache_[key] = cost.seconds;
    return cost.seconds;
  }

  const PredictOptions& o_;
  const Chip& chip_;
  const Topology& topology_;
  const LoweredStep& step_;
  const RoutingMatrix& routing_;
  const Parallelism& p_;
  absl::flat_hash_map<std::string, double> a2a_cache_;
};

std::vector<std::vector<int64_t>> GroupsOf(const Instruction& instruction, int64_t devices) {
  const auto& rg = instruction.attributes().replica_groups;
  std::vector<std::vector<int64_t>> groups;
  if (rg.has_value()) {
    groups = rg->iota.has_value() ? ExpandIotaReplicaGroups(*rg->iota) : rg->groups;
  }
  if (groups.empty()) {
    groups.emplace_back(devices);
    std::iota(groups[0].begin(), groups[0].end(), 0);
  }
  return groups;
}

bool IsGroupedMatmul(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kRaggedDot) return true;
  return instruction.opcode() == Opcode::kCustomCall &&
         (instruction.attributes().custom_call_target == kGmmTarget ||
          instruction.attributes().custom_call_target == kTgmmTarget);
}

// Ops XLA's loop fusion puts into one kernel with their elementwise consumers.
bool LoopFusible(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
         op == Opcode::kCompare || op == Opcode::kConvert || op == Opcode::kClamp ||
         op == Opcode::kBroadcast || op == Opcode::kIota || op == Opcode::kConstant;
}

// interior[i]: instruction i is fused into its consumers (loop fusion): every user is itself
// loop-fusible, so its result never goes to HBM.
std::vector<bool> FusedInterior(const Computation& entry) {
  const auto& instructions = entry.instructions();
  absl::flat_hash_map<const Instruction*, int64_t> index;
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  std::vector<int64_t> users(instructions.size(), 0), fusible_users(instructions.size(), 0);
  for (const auto& instruction : instructions) {
    for (const Instruction* operand : instruction->operands()) {
      const int64_t j = index.at(operand);
      ++users[j];
      if (LoopFusible(*instruction)) ++fusible_users[j];
    }
  }
  std::vector<bool> interior(instructions.size(), false);
  for (size_t i = 0; i < instructions.size(); ++i) {
    interior[i] = LoopFusible(*instructions[i]) && users[i] > 0 && users[i] == fusible_users[i] &&
                  instructions[i].get() != entry.root();
  }
  return interior;
}

}  // namespace

absl::StatusOr<Prediction> Predict(const PredictOptions& o) {
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip(o.hw));
  const std::string mesh = o.mesh.empty() ? chip.DefaultSliceShape() : o.mesh;
  absl::StatusOr<Topology> topology = Topology::Create(chip, mesh);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("--mesh ", mesh));
  const StepSpec& spec = o.spec;
  if (topology->num_devices() != spec.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected the parallelism to use the mesh's ", topology->num_devices(), " devices (",
        mesh, " ", chip.name(), " chips × ", topology->num_devices() / topology->num_chips(),
        " per chip); got ", ParallelismToString(spec.parallelism), " = ", spec.num_devices()));
  }
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(spec));
  // A kernel tiling that does not fit VMEM is a lowering failure (DESIGN.md "Fit"), a failed
  // check (exit 1). The context goes in as an argument: Annotate would drop the misfit mark.
  PERFSIM_RETURN_IF_ERROR(
      CheckModuleFits(*step.module, chip, std::nullopt,
                      absl::StrCat("backend ", spec.backend, " on ", chip.name())));
  const Parallelism& par = spec.parallelism;
  PERFSIM_ASSIGN_OR_RETURN(
      RoutingMatrix routing,
      BuildRoutingMatrix(o.routing, par.dp * par.ep, spec.tokens_per_device(),
                         spec.model.experts_per_token(), spec.model.num_experts()));
  Predictor predictor(o, chip, *topology, step, routing);
  // Every data-parallel replica of the (ep, tp) grid sees the same routing unless a file gives
  // per-shard rows, and then every replica runs the same timeline: simulate the devices of
  // replica dp = 0 (ids 0 .. EP·TP − 1, step_spec.h's numbering) and let collectives over dp
  // act within it. Collective times still come from the full groups on the full topology.
  const bool replicas_identical = o.routing.kind != RoutingSpec::Kind::kFile ||
                                  o.routing.file_weights.size() == 1;
  const int64_t n = replicas_identical ? par.ep * par.tp : spec.num_devices();

  Prediction result{.options = o};
  result.chip = chip.name();
  result.mesh = mesh;
  result.num_devices = spec.num_devices();

  const Computation& entry = *step.module->entry();
  absl::flat_hash_map<const Instruction*, int64_t> index;
  ScheduleProblem problem{.num_devices = n};
  CostOptions cost_options{.mode = CostMode::kTrue, .num_devices = spec.num_devices(),
                           .topology = &*topology};
  std::map<std::string, bool> unknown;
  const std::vector<bool> interior = FusedInterior(entry);
  for (const auto& owned : entry.instructions()) {
    const Instruction& instruction = *owned;
    index[&instruction] = static_cast<int64_t>(problem.ops.size());
    ScheduleOp op;
    for (const Instruction* operand : instruction.operands()) op.operands.push_back(index.at(operand));
    for (const Instruction* pred : instruction.control_predecessors()) op.operands.push_back(index.at(pred));
    // A ragged-all-to-all is timed below from the routing's traffic, group by group; its
    // generic cost (every group's flows routed at once) is skipped: at 16k devices that alone
    // routes millions of flows.
    absl::StatusOr<OpCost> cost =
        instruction.opcode() == Opcode::kRaggedAllToAll
            ? absl::StatusOr<OpCost>(OpCost{.counts = {.bytes_accessed = static_cast<double>(
                                                 instruction.operand(0)->shape().ByteSize() +
                                                 instruction.shape().ByteSize())},
                                            .bound = Bound::kCommunication})
            : CostInstruction(instruction, chip, cost_options);
    if (!cost.ok()) return Annotate(cost.status(), "cost");
    for (const std::string& rate : cost->unknown_rates) unknown[rate] = true;
    OpRow info{.name = instruction.name(),
               .opcode = std::string(OpcodeSpelling(instruction.opcode())),
               .stage = StageOf(instruction),
               .bound = cost->bound,
               .flops = cost->counts.flops,
               .bytes = cost->counts.bytes_accessed};
    info.phase = PhaseOfStage(info.stage);
    double base = cost->seconds.value_or(0);
    if (LoopFusible(instruction) && cost->counts.bytes_accessed > 0) {
      // Loop fusion: reads from fused producers and the write of a fused result stay on chip;
      // only the fusion's root pays the kernel overhead.
      double bytes = interior[index.at(&instruction)] ? 0 : cost->counts.output_bytes;
      for (int64_t k = 0; k < instruction.operand_count(); ++k) {
        const int64_t j = index.at(instruction.operand(k));
        if (!interior[j] && k < static_cast<int64_t>(cost->counts.operand_bytes.size())) {
          bytes += cost->counts.operand_bytes[k];
        }
      }
      const double memory = cost->memory_seconds * bytes / cost->counts.bytes_accessed;
      const bool is_interior = interior[index.at(&instruction)];
      base = std::max(cost->compute_seconds, memory) + (is_interior ? 0 : cost->overhead_seconds);
      info.bytes = bytes;
      info.bound = base == 0                                  ? Bound::kNone
                   : cost->compute_seconds >= memory          ? Bound::kCompute
                                                              : Bound::kMemory;
      if (!is_interior && cost->overhead_seconds > std::max(cost->compute_seconds, memory)) {
        info.bound = Bound::kOverhead;
      }
    }
    if (IsCollectiveInstruction(instruction)) {
      op.stream = Stream::kCommunication;
      const std::vector<std::vector<int64_t>> groups = GroupsOf(instruction, spec.num_devices());
      for (const auto& group : groups) {
        std::vector<int64_t> simulated;
        for (int64_t d : group) {
          if (d < n) simulated.push_back(d);
        }
        if (!simulated.empty()) op.groups.push_back(std::move(simulated));
      }
      if (instruction.opcode() == Opcode::kRaggedAllToAll) {
        op.duration.assign(n, 0);
        for (const auto& group : groups) {
          if (group.empty() || group.front() >= n) continue;
          for (int64_t d : group) {
            if (d >= n) continue;
            PERFSIM_ASSIGN_OR_RETURN(op.duration[d],
                                     predictor.RaggedA2aSeconds(instruction, d, group));
          }
        }
      } else {
        op.duration = {base};
      }
    } else if (IsGroupedMatmul(instruction)) {
      op.stream = Stream::kCompute;
      op.duration.assign(n, base);
      bool varies = false;
      // Devices with the same group sizes cost the same: cache by the sizes.
      std::map<std::vector<int64_t>, GroupedMatmulCost> by_sizes;
      for (int64_t d = 0; d < n; ++d) {
        std::optional<std::vector<int64_t>> sizes =
            predictor.GroupSizes(instruction.operand(2)->shape().dimensions(0), d);
        if (!sizes.has_value()) break;
        auto it = by_sizes.find(*sizes);
        if (it == by_sizes.end()) {
          PERFSIM_ASSIGN_OR_RETURN(std::optional<GroupedMatmulCost> c,
                                   predictor.GroupedCost(instruction, d));
          if (!c.has_value()) break;
          it = by_sizes.emplace(*sizes, *c).first;
        }
        op.duration[d] = it->second.seconds;
        varies = true;
        if (d == 0) {
          info.flops = it->second.work.flops;
          info.bytes = it->second.work.bytes_accessed;
          info.bound = it->second.bound;
        }
      }
      if (!varies) op.duration = {base};
    } else {
      op.stream = base > 0 ? Stream::kCompute : Stream::kNone;
      op.duration = {base};
    }
    info.stream = op.stream == Stream::kCommunication ? "comm" : "compute";
    problem.ops.push_back(std::move(op));
    result.op_info.push_back(std::move(info));
  }
  PERFSIM_ASSIGN_OR_RETURN(Schedule schedule, SimulateSchedule(problem));
  const int64_t slow = schedule.slowest_device;
  const DeviceSchedule& ds = schedule.devices[slow];
  result.slowest_device = slow;
  result.step_seconds = schedule.makespan;
  result.compute_busy = ds.compute_busy;
  result.communication_busy = ds.communication_busy;
  result.exposed_communication = ds.exposed_communication;

  std::map<std::string, PhaseTotal> phases;
  for (int64_t i : schedule.order) {
    const ScheduleOp& op = problem.ops[i];
    if (op.stream == Stream::kNone) continue;
    OpRow row = result.op_info[i];
    auto sent = predictor.sent_.find(absl::StrCat(row.name, "@", slow));
    if (sent != predictor.sent_.end()) row.sent_bytes = sent->second;
    row.start = ds.start[i];
    row.seconds = ds.finish[i] - ds.start[i];
    PhaseTotal& t = phases[row.phase];
    t.phase = row.phase;
    t.seconds += row.seconds;
    t.flops += row.flops;
    t.bytes += row.bytes;
    result.ops.push_back(std::move(row));
  }
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const OpRow& a, const OpRow& b) { return a.start < b.start; });
  for (const char* phase : {"router", "permute", "dispatch", "experts", "combine", "shared",
                            "backward", "other"}) {
    auto it = phases.find(phase);
    if (it != phases.end()) result.phases.push_back(it->second);
  }

  // MFU.
  const ModelConfig& model = spec.model;
  const double per_token = static_cast<double>(model.RoutedFlopsPerToken() +
                                               model.SharedFlopsPerToken() +
                                               model.RouterFlopsPerToken());
  result.model_flops_per_device = per_token * static_cast<double>(spec.tokens()) *
                                  (spec.phase == Phase::kForwardBackward ? 3 : 1) /
                                  static_cast<double>(spec.num_devices());
  const int64_t devices_per_chip = topology->num_devices() / topology->num_chips();
  const bool f32 = model.proto().param_dtype() == DTYPE_F32;
  result.peak_flops_per_device =
      chip.PeakMatmulFlopsPerSecond(f32 ? MatmulDtype::kF32 : MatmulDtype::kBf16) /
      static_cast<double>(devices_per_chip);
  if (result.peak_flops_per_device > 0 && result.step_seconds > 0) {
    result.mfu = result.model_flops_per_device / (result.step_seconds * result.peak_flops_per_device);
  }

  // HBM: parameters (entry parameters except activations x and dy), gradients (their outputs),
  // optimizer, and the peak of everything else live over the issue order.
  MemoryUse& mem = result.memory;
  for (size_t p = 0; p < step.parameters.size(); ++p) {
    const double bytes = static_cast<double>(entry.parameter(p)->shape().ByteSize());
    const std::string& name = step.parameters[p].name;
    if (name == "x" || name == "dy") {
      mem.activations += bytes;
      continue;
    }
    mem.parameters += bytes;
    if (spec.phase == Phase::kForwardBackward && name != "router_bias") mem.gradients += bytes;
    if (o.adam) {
      mem.optimizer += 8.0 * static_cast<double>(entry.parameter(p)->shape().ElementCount());
    }
  }
  {
    // Live ranges over the issue order: a value lives from its op to its last user.
    std::vector<int64_t> position(problem.ops.size());
    for (size_t k = 0; k < schedule.order.size(); ++k) position[schedule.order[k]] = k;
    std::vector<int64_t> last_use(problem.ops.size(), -1);
    for (size_t i = 0; i < problem.ops.size(); ++i) {
      for (int64_t o2 : problem.ops[i].operands) {
        last_use[o2] = std::max(last_use[o2], position[i]);
      }
    }
    std::vector<double> delta(schedule.order.size() + 1, 0);
    const auto& instructions = entry.instructions();
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& instruction = *instructions[i];
      if (instruction.opcode() == Opcode::kParameter || instruction.opcode() == Opcode::kTuple ||
          instruction.opcode() == Opcode::kGetTupleElement ||
          instruction.opcode() == Opcode::kBitcast) {
        continue;
      }
      const double bytes = instruction.shape().IsArray()
                               ? static_cast<double>(instruction.shape().ByteSize())
                               : 0;
      const int64_t from = position[i];
      const int64_t to = std::max<int64_t>(from, last_use[i]);
      delta[from] += bytes;
      delta[to + 1] -= bytes;
    }
    double live = 0, peak = 0;
    for (double d : delta) {
      live += d;
      peak = std::max(peak, live);
    }
    mem.activations += peak;
  }
  mem.total = mem.parameters + mem.gradients + mem.optimizer + mem.activations;
  mem.capacity = static_cast<double>(chip.hbm_capacity_bytes()) / static_cast<double>(devices_per_chip);
  mem.fits = mem.total <= mem.capacity;
  for (const auto& [rate, unused] : unknown) result.unknown_rates.push_back(rate);
  result.schedule = std::move(schedule);
  return result;
}

}  // namespace perfsim
