// The two stages of staged_predict.h. Every rule here is Predict's (sim/predict/predict.cc):
// keep them in step (tests/sweep/staged_predict_test.cc compares the two bit for bit).
#include "sim/sweep/staged_predict.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/comm/traffic.h"
#include "sim/cost/op_cost.h"
#include "sim/fit/module_fit.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/moe/step_graph.h"
#include "sim/sweep/class_schedule.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The stage an instruction was lowered in, from its metadata op_name "moe/<stage>".
std::string StageOf(const Instruction& instruction) {
  const std::string& m = instruction.attributes().metadata;
  const size_t at = m.find("op_name=\"moe/");
  if (at == std::string::npos) return "";
  const size_t begin = at + 13, end = m.find('"', begin);
  return m.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

int8_t PhaseIndex(const std::string& stage) {
  std::string phase = "other";
  for (int s = 0; s <= static_cast<int>(Stage::kGradSync); ++s) {
    if (StageName(static_cast<Stage>(s)) == stage) {
      phase = std::string(StagePhase(static_cast<Stage>(s)));
      break;
    }
  }
  for (int8_t p = 0; p < kNumSweepPhases; ++p) {
    if (phase == kSweepPhaseNames[p]) return p;
  }
  return kNumSweepPhases - 1;
}

bool IsGroupedMatmul(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kRaggedDot) return true;
  return instruction.opcode() == Opcode::kCustomCall &&
         (instruction.attributes().custom_call_target == kGmmTarget ||
          instruction.attributes().custom_call_target == kTgmmTarget);
}

bool LoopFusible(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
         op == Opcode::kCompare || op == Opcode::kConvert || op == Opcode::kClamp ||
         op == Opcode::kBroadcast || op == Opcode::kIota || op == Opcode::kConstant;
}

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

// The grouped-matmul spec of an instruction without its group sizes (Predict's GroupedCost up
// to the sizes); nullopt where Predict gives up (a ragged-dot of other ranks).
absl::StatusOr<std::optional<GroupedMatmulSpec>> GroupedSpec(const Instruction& instruction) {
  GroupedMatmulSpec spec;
  if (instruction.opcode() == Opcode::kCustomCall) {
    PERFSIM_ASSIGN_OR_RETURN(spec, GroupedMatmulSpecFromInstruction(instruction));
    return spec;
  }
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
  return spec;
}

struct DeviceCoords {
  int64_t dp, ep, tp;
};

DeviceCoords Coords(const Parallelism& p, int64_t device) {
  return {device / (p.tp * p.ep), (device / p.tp) % p.ep, device % p.tp};
}

uint64_t HashDoubles(const std::vector<double>& values) {
  uint64_t h = 1469598103934665603ull;
  for (double v : values) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
    h ^= h >> 31;
  }
  return h;
}

void AppendRaw(std::string& key, const void* data, size_t bytes) {
  key.append(static_cast<const char*>(data), bytes);
}

std::string GroupedKey(const GroupedMatmulSpec& s, const std::vector<int64_t>& sizes) {
  std::string key;
  key.reserve(96 + sizes.size() * 8);
  const int64_t fields[] = {static_cast<int64_t>(s.kind),
                            s.m,
                            s.k,
                            s.n,
                            s.num_groups,
                            s.group_offset,
                            s.tm,
                            s.tk,
                            s.tn,
                            static_cast<int64_t>(s.lhs_type),
                            static_cast<int64_t>(s.rhs_type),
                            static_cast<int64_t>(s.out_type)};
  AppendRaw(key, fields, sizeof fields);
  AppendRaw(key, sizes.data(), sizes.size() * sizeof(int64_t));
  return key;
}

// Rows every source shard of dp replica `dp` sends to each expert: the sums GroupSizes takes
// over the EP group.
std::vector<int64_t> ReceivedPerExpert(const RoutingMatrix& m, int64_t dp, int64_t ep) {
  std::vector<int64_t> recv(m.experts(), 0);
  for (int64_t j = 0; j < ep; ++j) {
    for (int64_t e = 0; e < m.experts(); ++e) recv[e] += m.at(dp * ep + j, e);
  }
  return recv;
}

// Predict's schedule groups: each collective's replica groups restricted to the simulated
// devices (ids below n), empty ones dropped.
std::vector<std::vector<std::vector<int64_t>>> SimulatedGroups(const std::vector<StagedOp>& ops,
                                                               int64_t n) {
  std::vector<std::vector<std::vector<int64_t>>> out(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].collective) continue;
    for (const auto& group : ops[i].groups) {
      std::vector<int64_t> simulated;
      for (int64_t d : group) {
        if (d < n) simulated.push_back(d);
      }
      if (!simulated.empty()) out[i].push_back(std::move(simulated));
    }
  }
  return out;
}

class PointEvaluator {
 public:
  PointEvaluator(const StagedStep& step, const RoutingMatrix& routing,
                 const std::string& routing_key, const std::string& matrix_key,
                 StagedCaches& caches)
      : step_(step),
        spec_(step.spec),
        p_(spec_.parallelism),
        routing_(routing),
        routing_key_(routing_key),
        caches_(caches),
        ring_(spec_.backend == "ring_of_experts"),
        align_(spec_.backend == "grouped_gemm_aligned" && spec_.knobs.align_size > 1
                   ? spec_.knobs.align_size
                   : 1),
        matrix_key_(matrix_key) {}

  // How Predict's GroupSizes reads the routing for an op with `groups` groups.
  enum class SizesFrom { kRing, kLocalExperts, kSourceRow, kUnknown };
  SizesFrom Mode(int64_t groups) const {
    const int64_t e = spec_.model.num_experts();
    const int64_t el = e / p_.ep;
    if (ring_ && groups == e) return SizesFrom::kRing;
    if (groups == e && p_.ep == 1) return SizesFrom::kSourceRow;
    if (groups == el && p_.ep > 1) return SizesFrom::kLocalExperts;
    if (groups == e) return SizesFrom::kSourceRow;
    return SizesFrom::kUnknown;
  }

  // Predict's GroupSizes for `device` into `sizes` (mode from Mode, not kUnknown).
  absl::Status GroupSizes(SizesFrom mode, int64_t device, std::vector<int64_t>& sizes) {
    const int64_t e = spec_.model.num_experts();
    const int64_t el = e / p_.ep;
    const DeviceCoords c = Coords(p_, device);
    const int64_t src = c.dp * p_.ep + c.ep;
    if (src >= routing_.sources()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "routing: expected a row per token shard dp·ep = ", routing_.sources(), "; got device ",
          device, " at shard ", src, " (fsdp > 1 with per-shard routing rows)"));
    }
    switch (mode) {
      case SizesFrom::kRing: {
        const std::vector<int64_t>& recv = Received(c.dp);
        sizes.resize(e);
        for (int64_t g = 0; g < e; ++g) sizes[g] = recv[(g + el * c.ep) % e];
        break;
      }
      case SizesFrom::kLocalExperts: {
        const int64_t* recv = Received(c.dp).data() + c.ep * el;
        sizes.assign(recv, recv + el);
        break;
      }
      case SizesFrom::kSourceRow:
        sizes.resize(e);
        for (int64_t g = 0; g < e; ++g) sizes[g] = routing_.at(src, g);
        break;
      case SizesFrom::kUnknown:
        sizes.clear();
        break;
    }
    if (align_ > 1) {
      for (int64_t& s : sizes) s = (s + align_ - 1) / align_ * align_;
    }
    return absl::OkStatus();
  }

  // Per-device seconds of a grouped matmul; false where Predict keeps the uniform base. The
  // group sizes depend on a device's (dp, ep) coordinates only, so the tp devices that share
  // them (consecutive ids) share the figure.
  absl::StatusOr<bool> GroupedDurations(const StagedOp& op, int64_t n, std::vector<double>& out) {
    out.assign(n, op.base_seconds);
    const SizesFrom mode = Mode(op.total_groups);
    if (mode == SizesFrom::kUnknown || n == 0) return false;
    bool have_previous = false;
    double previous_seconds = 0;
    for (int64_t d = 0; d < n; ++d) {
      if (d % p_.tp != 0) {
        out[d] = out[d - 1];
        continue;
      }
      PERFSIM_RETURN_IF_ERROR(GroupSizes(mode, d, sizes_));
      if (have_previous && SameSizes(sizes_, previous_)) {
        out[d] = previous_seconds;
        continue;
      }
      if (!op.grouped_status.ok()) return op.grouped_status;
      if (!op.grouped.has_value()) return d > 0;
      key_ = GroupedKey(*op.grouped, sizes_);
      auto it = caches_.grouped.find(key_);
      if (it == caches_.grouped.end()) {
        ++caches_.grouped_misses;
        GroupedMatmulSpec spec = *op.grouped;
        std::vector<int64_t> truncated = sizes_;
        int64_t left = spec.m;
        for (int64_t& s : truncated) {
          s = std::min(s, left);
          left -= s;
        }
        spec.group_sizes = std::move(truncated);
        PERFSIM_ASSIGN_OR_RETURN(GroupedMatmulCost cost, CostGroupedMatmul(spec, *step_.chip));
        it = caches_.grouped.emplace(key_, std::move(cost)).first;
      } else {
        ++caches_.grouped_hits;
      }
      out[d] = it->second.seconds;
      previous_.swap(sizes_);
      have_previous = true;
      previous_seconds = out[d];
    }
    return true;
  }

  // Predict's RaggedA2aSeconds for one group (every member gets the same figure).
  absl::StatusOr<double> RaggedA2aSeconds(const StagedOp& op, const std::vector<int64_t>& group) {
    std::string key =
        absl::StrCat(op.a2a_signature, "|", routing_key_, "|", routing_.sources(), ",",
                     routing_.experts(), ",", spec_.tokens_per_device(), "|", p_.dp, ",", p_.fsdp,
                     ",", p_.ep, ",", p_.tp, "|", op.to_experts ? 1 : 0, "|");
    AppendRaw(key, group.data(), group.size() * sizeof(int64_t));
    auto it = caches_.a2a.find(key);
    if (it != caches_.a2a.end()) {
      ++caches_.a2a_hits;
      return it->second;
    }
    ++caches_.a2a_misses;
    const Instruction& instruction = *op.instruction;
    const int64_t e = spec_.model.num_experts(), el = e / p_.ep;
    TrafficMatrix traffic = TrafficMatrix::Zero(group);
    const int64_t n = static_cast<int64_t>(group.size());
    // Predict sums, for every pair, the rows the sending shard routes to the receiver's local
    // experts; the sums depend on (sending shard, receiving ep coordinate) only, so they are
    // taken once per member here (integers: the same values in any order).
    std::vector<int64_t> ep_of(n);
    std::vector<std::vector<int64_t>> rows_to_ep(n, std::vector<int64_t>(p_.ep, 0));
    for (int64_t i = 0; i < n; ++i) {
      const DeviceCoords c = Coords(p_, group[i]);
      const int64_t shard = c.dp * p_.ep + c.ep;
      if (shard >= routing_.sources()) {
        return absl::InvalidArgumentError(
            absl::StrCat("routing: expected a row per token shard dp·ep = ", routing_.sources(),
                         "; got shard ", shard, " (fsdp > 1 with per-shard rows)"));
      }
      ep_of[i] = c.ep;
      for (int64_t q = 0; q < p_.ep; ++q) {
        int64_t rows = 0;
        for (int64_t g = 0; g < el; ++g) rows += routing_.at(shard, q * el + g);
        rows_to_ep[i][q] = rows;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        // Rows token shard (i) sends to the experts of shard (j), or back.
        const int64_t rows = op.to_experts ? rows_to_ep[i][ep_of[j]] : rows_to_ep[j][ep_of[i]];
        traffic.set(i, j, rows * op.row_bytes);
      }
    }
    // The same exchange (shapes, group, traffic) may come from another block: another dp or
    // fsdp with the same ep, tp and tokens per device routes the very same matrix.
    std::string content = absl::StrCat(op.a2a_signature, "|");
    AppendRaw(content, group.data(), group.size() * sizeof(int64_t));
    const uint64_t traffic_hash = HashDoubles(traffic.bytes);
    AppendRaw(content, &traffic_hash, sizeof traffic_hash);
    auto same = caches_.a2a_by_traffic.find(content);
    if (same != caches_.a2a_by_traffic.end() && same->second.first == traffic.bytes) {
      ++caches_.a2a_hits;
      caches_.a2a.emplace(std::move(key), same->second.second);
      return same->second.second;
    }
    Instruction one_group(instruction.opcode(), instruction.name(), instruction.shape());
    for (Instruction* operand : instruction.operands()) one_group.AppendOperand(operand);
    *one_group.mutable_attributes() = instruction.attributes();
    ReplicaGroups groups;
    groups.groups = {group};
    one_group.mutable_attributes()->replica_groups = std::move(groups);
    CollectiveCostOptions options{.traffic = &traffic};
    PERFSIM_ASSIGN_OR_RETURN(CollectiveCost cost,
                             CostCollectiveInstruction(one_group, *step_.topology, options));
    if (same == caches_.a2a_by_traffic.end()) {
      caches_.a2a_by_traffic.emplace(std::move(content),
                                     std::make_pair(traffic.bytes, cost.seconds));
    }
    caches_.a2a.emplace(std::move(key), cost.seconds);
    return cost.seconds;
  }

 private:
  static bool SameSizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

  // Cached with the routing matrix: per (matrix, ep, dp replica).
  const std::vector<int64_t>& Received(int64_t dp) {
    if (dp >= static_cast<int64_t>(received_.size())) received_.resize(dp + 1, nullptr);
    if (received_[dp] == nullptr) {
      const std::string key = absl::StrCat(matrix_key_, "|", p_.ep, "|", dp);
      auto it = caches_.received.find(key);
      if (it == caches_.received.end()) {
        it = caches_.received.emplace(key, ReceivedPerExpert(routing_, dp, p_.ep)).first;
      }
      received_[dp] = &it->second;
    }
    return *received_[dp];
  }

  const StagedStep& step_;
  const StepSpec& spec_;
  const Parallelism& p_;
  const RoutingMatrix& routing_;
  const std::string& routing_key_;
  StagedCaches& caches_;
  const bool ring_;
  const int64_t align_;
  std::string matrix_key_;
  std::vector<const std::vector<int64_t>*> received_;  // per dp replica; null until needed
  std::vector<int64_t> sizes_, previous_;
  std::string key_;
};

}  // namespace

absl::StatusOr<StagedStep> PrepareStagedStep(const StepSpec& spec, const Chip& chip,
                                             const Topology& topology, bool adam,
                                             StagedPrepareStage* failed) {
  StagedPrepareStage ignored;
  StagedPrepareStage& stage = failed != nullptr ? *failed : ignored;
  stage = StagedPrepareStage::kLower;
  if (topology.num_devices() != spec.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected the parallelism to use the mesh's ", topology.num_devices(), " devices; got ",
        ParallelismToString(spec.parallelism), " = ", spec.num_devices()));
  }
  StagedStep out{.spec = spec};
  out.chip = &chip;
  out.topology = &topology;
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep lowered, LowerStep(spec));
  out.lowered = std::make_shared<LoweredStep>(std::move(lowered));
  const LoweredStep& step = *out.lowered;
  stage = StagedPrepareStage::kFit;
  PERFSIM_RETURN_IF_ERROR(
      CheckModuleFits(*step.module, chip, std::nullopt,
                      absl::StrCat("backend ", spec.backend, " on ", chip.name())));
  stage = StagedPrepareStage::kCost;

  const Computation& entry = *step.module->entry();
  const auto& instructions = entry.instructions();
  absl::flat_hash_map<const Instruction*, int64_t> index;
  CostOptions cost_options{
      .mode = CostMode::kTrue, .num_devices = spec.num_devices(), .topology = &topology};
  std::map<std::string, bool> unknown;
  const std::vector<bool> interior = FusedInterior(entry);
  out.ops.reserve(instructions.size());
  for (const auto& owned : instructions) {
    const Instruction& instruction = *owned;
    index[&instruction] = static_cast<int64_t>(out.ops.size());
    StagedOp op;
    for (const Instruction* operand : instruction.operands())
      op.operands.push_back(index.at(operand));
    for (const Instruction* pred : instruction.control_predecessors()) {
      op.operands.push_back(index.at(pred));
    }
    absl::StatusOr<OpCost> cost =
        instruction.opcode() == Opcode::kRaggedAllToAll
            ? absl::StatusOr<OpCost>(OpCost{
                  .counts = {.bytes_accessed =
                                 static_cast<double>(instruction.operand(0)->shape().ByteSize() +
                                                     instruction.shape().ByteSize())},
                  .bound = Bound::kCommunication})
            : CostInstruction(instruction, chip, cost_options);
    if (!cost.ok()) return Annotate(cost.status(), "cost");
    for (const std::string& rate : cost->unknown_rates) unknown[rate] = true;
    op.phase = PhaseIndex(StageOf(instruction));
    double base = cost->seconds.value_or(0);
    if (LoopFusible(instruction) && cost->counts.bytes_accessed > 0) {
      const bool is_interior = interior[index.at(&instruction)];
      double bytes = is_interior ? 0 : cost->counts.output_bytes;
      for (int64_t k = 0; k < instruction.operand_count(); ++k) {
        const int64_t j = index.at(instruction.operand(k));
        if (!interior[j] && k < static_cast<int64_t>(cost->counts.operand_bytes.size())) {
          bytes += cost->counts.operand_bytes[k];
        }
      }
      const double memory = cost->memory_seconds * bytes / cost->counts.bytes_accessed;
      base = std::max(cost->compute_seconds, memory) + (is_interior ? 0 : cost->overhead_seconds);
    }
    op.base_seconds = base;
    if (IsCollectiveInstruction(instruction)) {
      op.collective = true;
      op.stream = Stream::kCommunication;
      op.groups = GroupsOf(instruction, spec.num_devices());
      if (instruction.opcode() == Opcode::kRaggedAllToAll) {
        op.kind = StagedOp::Kind::kRaggedA2a;
        op.instruction = &instruction;
        const std::string stage = StageOf(instruction);
        op.to_experts = stage == "dispatch" || stage == "combine_bwd";
        const Shape& operand = instruction.operand(0)->shape();
        double row_bytes = static_cast<double>(ByteWidth(operand.element_type()));
        for (int64_t i = 1; i < operand.rank(); ++i) row_bytes *= operand.dimensions(i);
        op.row_bytes = row_bytes;
        for (const Instruction* o : instruction.operands()) {
          absl::StrAppend(&op.a2a_signature, o->shape().ToString(false), ";");
        }
        absl::StrAppend(&op.a2a_signature, instruction.shape().ToString(false));
      }
    } else if (IsGroupedMatmul(instruction)) {
      op.kind = StagedOp::Kind::kGroupedMatmul;
      op.stream = Stream::kCompute;
      op.total_groups = instruction.operand(2)->shape().dimensions(0);
      absl::StatusOr<std::optional<GroupedMatmulSpec>> grouped = GroupedSpec(instruction);
      if (grouped.ok()) {
        op.grouped = *grouped;
      } else {
        op.grouped_status = grouped.status();
      }
    } else {
      op.stream = base > 0 ? Stream::kCompute : Stream::kNone;
    }
    const Opcode opcode = instruction.opcode();
    op.in_memory = !(opcode == Opcode::kParameter || opcode == Opcode::kTuple ||
                     opcode == Opcode::kGetTupleElement || opcode == Opcode::kBitcast);
    op.live_bytes =
        instruction.shape().IsArray() ? static_cast<double>(instruction.shape().ByteSize()) : 0;
    out.ops.push_back(std::move(op));
  }
  out.num_instructions = static_cast<int64_t>(out.ops.size());
  // Users, in SimulateSchedule's order (op ascending, then operand order; duplicates kept).
  const int64_t n_ops = static_cast<int64_t>(out.ops.size());
  std::vector<int64_t> count(n_ops + 1, 0);
  for (const StagedOp& op : out.ops) {
    for (int64_t o : op.operands) ++count[o + 1];
  }
  out.user_begin.assign(n_ops + 1, 0);
  for (int64_t i = 0; i < n_ops; ++i) out.user_begin[i + 1] = out.user_begin[i] + count[i + 1];
  out.users.assign(out.user_begin[n_ops], 0);
  std::vector<int64_t> fill(out.user_begin.begin(), out.user_begin.end() - 1);
  for (int64_t i = 0; i < n_ops; ++i) {
    for (int64_t o : out.ops[i].operands) out.users[fill[o]++] = i;
  }
  for (const auto& [rate, unused] : unknown) out.unknown_rates.push_back(rate);
  out.simulated_devices = spec.parallelism.ep * spec.parallelism.tp;
  out.simulated_groups = SimulatedGroups(out.ops, out.simulated_devices);

  // MFU terms.
  const ModelConfig& model = spec.model;
  const double per_token = static_cast<double>(
      model.RoutedFlopsPerToken() + model.SharedFlopsPerToken() + model.RouterFlopsPerToken());
  out.model_flops_per_device = per_token * static_cast<double>(spec.tokens()) *
                               (spec.phase == Phase::kForwardBackward ? 3 : 1) /
                               static_cast<double>(spec.num_devices());
  const int64_t devices_per_chip = topology.num_devices() / topology.num_chips();
  const bool f32 = model.proto().param_dtype() == DTYPE_F32;
  out.peak_flops_per_device =
      chip.PeakMatmulFlopsPerSecond(f32 ? MatmulDtype::kF32 : MatmulDtype::kBf16) /
      static_cast<double>(devices_per_chip);
  // Static HBM terms, in Predict's order of accumulation.
  for (size_t p = 0; p < step.parameters.size(); ++p) {
    const double bytes = static_cast<double>(entry.parameter(p)->shape().ByteSize());
    const std::string& name = step.parameters[p].name;
    if (name == "x" || name == "dy") {
      out.input_activations += bytes;
      continue;
    }
    out.parameters += bytes;
    if (spec.phase == Phase::kForwardBackward && name != "router_bias") out.gradients += bytes;
    if (adam) {
      out.optimizer += 8.0 * static_cast<double>(entry.parameter(p)->shape().ElementCount());
    }
  }
  out.capacity =
      static_cast<double>(chip.hbm_capacity_bytes()) / static_cast<double>(devices_per_chip);
  return out;
}

absl::StatusOr<StagedResult> EvaluateStagedRouting(const StagedStep& step,
                                                   const RoutingSpec& routing,
                                                   const std::string& routing_key,
                                                   StagedCaches& caches) {
  const StepSpec& spec = step.spec;
  const Parallelism& par = spec.parallelism;
  const int64_t sources = par.dp * par.ep;
  const std::string matrix_key =
      absl::StrCat(routing_key, "|", sources, ",", spec.tokens_per_device(), ",",
                   spec.model.experts_per_token(), ",", spec.model.num_experts());
  auto found = caches.matrices.find(matrix_key);
  if (found == caches.matrices.end()) {
    PERFSIM_ASSIGN_OR_RETURN(
        RoutingMatrix m,
        BuildRoutingMatrix(routing, sources, spec.tokens_per_device(),
                           spec.model.experts_per_token(), spec.model.num_experts()));
    found = caches.matrices.emplace(matrix_key, std::make_shared<const RoutingMatrix>(std::move(m)))
                .first;
  }
  const RoutingMatrix& matrix = *found->second;
  const bool replicas_identical =
      routing.kind != RoutingSpec::Kind::kFile || routing.file_weights.size() == 1;
  const int64_t n = replicas_identical ? par.ep * par.tp : spec.num_devices();

  PointEvaluator evaluator(step, matrix, routing_key, matrix_key, caches);
  const int64_t n_ops = static_cast<int64_t>(step.ops.size());
  DurationTable durations{.num_devices = n};
  durations.uniform.resize(n_ops);
  durations.row.assign(n_ops, -1);
  std::vector<std::vector<std::vector<int64_t>>> own_groups;
  if (n != step.simulated_devices) own_groups = SimulatedGroups(step.ops, n);
  const std::vector<std::vector<std::vector<int64_t>>>& groups =
      n == step.simulated_devices ? step.simulated_groups : own_groups;
  std::vector<double> row;
  for (int64_t i = 0; i < n_ops; ++i) {
    const StagedOp& op = step.ops[i];
    durations.uniform[i] = op.base_seconds;
    switch (op.kind) {
      case StagedOp::Kind::kPlain:
        break;
      case StagedOp::Kind::kRaggedA2a: {
        row.assign(n, 0);
        for (const auto& group : op.groups) {
          if (group.empty() || group.front() >= n) continue;
          PERFSIM_ASSIGN_OR_RETURN(double seconds, evaluator.RaggedA2aSeconds(op, group));
          for (int64_t d : group) {
            if (d < n) row[d] = seconds;
          }
        }
        durations.row[i] = static_cast<int32_t>(durations.per_device.size());
        durations.per_device.push_back(row);
        break;
      }
      case StagedOp::Kind::kGroupedMatmul: {
        PERFSIM_ASSIGN_OR_RETURN(bool varies, evaluator.GroupedDurations(op, n, row));
        if (varies) {
          durations.row[i] = static_cast<int32_t>(durations.per_device.size());
          durations.per_device.push_back(row);
        }
        break;
      }
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(ClassSchedule schedule, ScheduleOnClasses(step, durations, groups));

  StagedResult r;
  r.step_seconds = schedule.makespan;
  r.slowest_device = schedule.slowest_device;
  r.compute_busy = schedule.compute_busy;
  r.communication_busy = schedule.communication_busy;
  r.exposed_communication = schedule.exposed_communication;
  r.device_classes = schedule.classes;
  for (int64_t i : schedule.order) {
    const StagedOp& op = step.ops[i];
    if (op.stream == Stream::kNone) continue;
    r.phase_seconds[op.phase] += schedule.finish[i] - schedule.start[i];
    r.phase_present[op.phase] = true;
  }
  if (step.peak_flops_per_device > 0 && r.step_seconds > 0) {
    r.mfu = step.model_flops_per_device / (r.step_seconds * step.peak_flops_per_device);
  }
  // HBM: the static terms and the live-buffer peak over the issue order.
  r.parameters = step.parameters;
  r.gradients = step.gradients;
  r.optimizer = step.optimizer;
  r.activations = step.input_activations;
  {
    std::vector<int64_t> position(n_ops);
    for (size_t k = 0; k < schedule.order.size(); ++k) position[schedule.order[k]] = k;
    std::vector<int64_t> last_use(n_ops, -1);
    for (int64_t i = 0; i < n_ops; ++i) {
      for (int64_t o : step.ops[i].operands) last_use[o] = std::max(last_use[o], position[i]);
    }
    std::vector<double> delta(schedule.order.size() + 1, 0);
    for (int64_t i = 0; i < n_ops; ++i) {
      const StagedOp& op = step.ops[i];
      if (!op.in_memory) continue;
      const int64_t from = position[i];
      const int64_t to = std::max<int64_t>(from, last_use[i]);
      delta[from] += op.live_bytes;
      delta[to + 1] -= op.live_bytes;
    }
    double live = 0, peak = 0;
    for (double d : delta) {
      live += d;
      peak = std::max(peak, live);
    }
    r.activations += peak;
  }
  r.hbm_total = r.parameters + r.gradients + r.optimizer + r.activations;
  r.hbm_capacity = step.capacity;
  return r;
}

}  // namespace perfsim
