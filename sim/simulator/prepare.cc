// PrepareModule (simulator.h): everything about a module that does not depend on the routing.
#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/cost/module_cost.h"
#include "sim/cost/op_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/trip_count.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/verifier.h"
#include "sim/simulator/computation_time.h"
#include "sim/simulator/cotangent.h"
#include "sim/simulator/fusion.h"
#include "sim/simulator/groups.h"
#include "sim/simulator/prepared.h"
#include "sim/simulator/simulator.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The op_name of an instruction's metadata ({op_name="jit(f)/dot_general" ...}), "" for none.
std::string OpNameOf(const Instruction& instruction) {
  const std::string& m = instruction.attributes().metadata;
  const size_t at = m.find("op_name=\"");
  if (at == std::string::npos) return "";
  std::string out;
  for (size_t k = at + 9; k < m.size() && m[k] != '"'; ++k) {
    if (m[k] == '\\' && k + 1 < m.size()) ++k;
    out += m[k];
  }
  return out;
}

// Whether a computation (and what it calls) holds work whose time is not fully known: a
// custom-call of an unmodelled target, or a while loop of unknown trip count (one trip is
// counted).
class UnknownWork {
 public:
  bool In(const Computation* computation) {
    if (computation == nullptr) return false;
    auto [it, inserted] = memo_.try_emplace(computation, false);
    if (!inserted) return it->second;
    bool unknown = false;
    for (const auto& inner : computation->instructions()) {
      if (Of(*inner)) {
        unknown = true;
        break;
      }
    }
    memo_[computation] = unknown;
    return unknown;
  }
  // The instruction itself, and what it calls.
  bool Of(const Instruction& instruction) {
    if (instruction.opcode() == Opcode::kCustomCall && !CustomCallWorkKnown(instruction)) {
      return true;
    }
    if (instruction.opcode() == Opcode::kWhile && !StaticTripCount(instruction).has_value()) {
      return true;
    }
    // Only ops that run other computations as code can hold such work (a reduce's scalar
    // computation cannot); checked first, as most instructions call nothing.
    const Opcode op = instruction.opcode();
    if (op != Opcode::kCall && op != Opcode::kWhile && op != Opcode::kConditional &&
        op != Opcode::kAsyncStart && op != Opcode::kFusion) {
      return false;
    }
    for (const Computation* called : instruction.called_computations()) {
      if (In(called)) return true;
    }
    return false;
  }

 private:
  absl::flat_hash_map<const Computation*, bool> memo_;
};

absl::Status Located(const Instruction& instruction, const absl::Status& status) {
  const SourceLocation& at = instruction.location();
  if (at.line <= 0) return status;
  return absl::Status(status.code(),
                      absl::StrCat(at.line, ":", at.column, ": ", status.message()));
}

// One schedule op before costing: an instruction of the entry, or of a call inlined into it.
struct FlatOp {
  const Instruction* instruction = nullptr;
  std::string name;          // "call.3/all-reduce.1" inside call.3
  bool interior = false;     // fusion.h, in its computation's plan
  bool inlined_call = false;  // a call whose computation precedes it: costs nothing itself
  bool fusion_applied = false;  // its computation was loop-fused (PlanFusion applied)
  std::vector<int64_t> operands;           // schedule ops: operands, then control predecessors
  std::vector<bool> operand_interior;      // per instruction operand
};

// Appends the ops of `computation` in text order, each call's computation inlined in front of
// the call (its parameters read the call's operands, the call reads its root), and returns the
// root's op. `arguments`: the ops a called computation's parameters stand for (empty for the
// entry); `after`: ops every op waits for (the call's control predecessors). The nesting is
// bounded by kMaxCallDepth (checked first).
int64_t Flatten(const Computation& computation, const std::string& prefix,
                const std::vector<int64_t>& arguments, const std::vector<int64_t>& after,
                std::vector<FlatOp>& out, bool* fusion_applied = nullptr) {
  const auto& instructions = computation.instructions();
  const FusionPlan plan = PlanFusion(computation);
  if (fusion_applied != nullptr) *fusion_applied = plan.applied;
  // Each instruction's op; an operand's op says whether it is interior (the same plan).
  absl::flat_hash_map<const Instruction*, int64_t> op_of;
  op_of.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    std::vector<int64_t> operands;
    std::vector<bool> operand_interior;
    operands.reserve(instruction.operand_count());
    operand_interior.reserve(instruction.operand_count());
    for (const Instruction* operand : instruction.operands()) {
      const int64_t op = op_of.at(operand);
      operands.push_back(op);
      operand_interior.push_back(out[op].interior);
    }
    for (const Instruction* predecessor : instruction.control_predecessors()) {
      operands.push_back(op_of.at(predecessor));
    }
    operands.insert(operands.end(), after.begin(), after.end());
    if (instruction.opcode() == Opcode::kParameter && !arguments.empty()) {
      // A called computation's parameter N is the call's operand N (the verifier checked N).
      const int64_t p = instruction.attributes().parameter_number.value_or(-1);
      if (p >= 0 && p < static_cast<int64_t>(arguments.size())) operands.push_back(arguments[p]);
    }
    if (instruction.opcode() == Opcode::kCall && instruction.to_apply() != nullptr) {
      std::vector<int64_t> call_after(operands.begin() + instruction.operand_count(),
                                      operands.end());
      std::vector<int64_t> call_arguments(operands.begin(),
                                          operands.begin() + instruction.operand_count());
      const int64_t root =
          Flatten(*instruction.to_apply(), absl::StrCat(prefix, instruction.name(), "/"),
                  call_arguments, call_after, out);
      operands = {root};
      out.push_back(FlatOp{.instruction = &instruction,
                           .name = absl::StrCat(prefix, instruction.name()),
                           .inlined_call = true,
                           .operands = std::move(operands),
                           .operand_interior = {}});
    } else {
      out.push_back(FlatOp{.instruction = &instruction,
                           .name = absl::StrCat(prefix, instruction.name()),
                           .interior = plan.applied && plan.interior[i],
                           .fusion_applied = plan.applied,
                           .operands = std::move(operands),
                           .operand_interior = std::move(operand_interior)});
    }
    op_of[&instruction] = static_cast<int64_t>(out.size()) - 1;
  }
  return op_of.at(computation.root());
}

// Makes every cotangent parameter of the entry wait for the forward's outputs (step 7) and
// puts the ops in an order that respects it; true when there was a cotangent to wait.
absl::StatusOr<bool> WaitForTheForward(const Computation& entry, std::vector<FlatOp>& ops) {
  const std::vector<const Instruction*> cotangents = CotangentParameters(entry);
  if (cotangents.empty()) return false;
  const std::vector<const Instruction*> outputs = ForwardOutputs(entry);
  if (outputs.empty()) return false;
  // The entry's own ops (an inlined call's op is the call's: it waits for its root).
  absl::flat_hash_map<const Instruction*, int64_t> op_of;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].instruction->parent() == &entry) op_of[ops[i].instruction] = static_cast<int64_t>(i);
  }
  std::vector<std::vector<int64_t>> edges(ops.size());
  std::vector<std::string> names(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    edges[i] = ops[i].operands;
    names[i] = ops[i].name;
  }
  for (const Instruction* cotangent : cotangents) {
    for (const Instruction* output : outputs) edges[op_of.at(cotangent)].push_back(op_of.at(output));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> order, OrderAfterEdges(edges, names));
  std::vector<int64_t> position(ops.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<int64_t>(k);
  std::vector<FlatOp> sorted;
  sorted.reserve(ops.size());
  for (int64_t i : order) {
    FlatOp& op = sorted.emplace_back(std::move(ops[i]));
    op.operands = std::move(edges[i]);
    for (int64_t& o : op.operands) o = position[o];
  }
  ops = std::move(sorted);
  return true;
}

}  // namespace

absl::StatusOr<Topology> TopologyForModule(const Module& module, const Chip& chip,
                                           absl::string_view mesh) {
  const int64_t devices = ModuleDeviceCount(module);
  if (mesh.empty()) return TopologyForDevices(chip, devices);
  absl::StatusOr<Topology> topology = Topology::Create(chip, mesh);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("--mesh ", mesh));
  if (topology->num_devices() < devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mesh ", mesh, ": expected at least the ", devices, " devices module ", module.name(),
        " names; got ", topology->num_devices(), " devices (", chip.name(), " ", mesh, ")"));
  }
  return topology;
}

int64_t PreparedModule::num_ops() const { return static_cast<int64_t>(data_->ops.size()); }
const TimelineOp& PreparedModule::op(int64_t i) const { return data_->ops[i]; }
int64_t PreparedModule::num_devices() const { return data_->num_devices; }

absl::StatusOr<PreparedModule> PrepareModule(const Module& module, const Chip& chip,
                                             const Topology& topology, int64_t num_devices) {
  const Computation* entry = module.entry();
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.name(), ": expected an entry computation; got none"));
  }
  auto data = std::make_shared<PreparedModuleData>();
  static std::atomic<uint64_t> next_id{1};
  data->id = next_id.fetch_add(1, std::memory_order_relaxed);
  data->module = &module;
  data->chip = &chip;
  data->topology = &topology;
  data->cost_context = absl::StrCat(chip.proto().SerializeAsString(), "|",
                                    topology.slice_shape(), "|", topology.num_devices());
  const bool flat = module.replica_count() * module.num_partitions() == 1;
  data->num_devices = num_devices > 0 ? num_devices
                      : flat          ? topology.num_devices()
                                      : ModuleDeviceCount(module);
  if (data->num_devices > topology.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "module ", module.name(), ": expected at most the ", topology.num_devices(),
        " devices of ", topology.chip_name(), " ", topology.slice_shape(), "; got ",
        data->num_devices, " devices"));
  }

  // The liveness pass, the timer's recursion and the inlining follow the call nesting:
  // bounded first.
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  std::vector<FlatOp> flat_ops;
  flat_ops.reserve(entry->instructions().size());
  Flatten(*entry, "", {}, {}, flat_ops, &data->fused);
  PERFSIM_RETURN_IF_ERROR(WaitForTheForward(*entry, flat_ops).status());

  CostMemo memo;
  const CostOptions cost_options{.mode = CostMode::kTrue,
                                 .num_devices = data->num_devices,
                                 .topology = &topology,
                                 .memo = &memo};
  UnknownWork unknown_work;
  ComputationTimer timer(chip, cost_options);
  const int64_t n = static_cast<int64_t>(flat_ops.size());
  ScheduleProblem& problem = data->problem;
  problem.num_devices = data->num_devices;
  problem.ops.resize(n);
  data->ops.resize(n);
  data->routed_of.assign(n, -1);
  auto add_rate = [&](const std::string& rate) {
    std::vector<std::string>& rates = data->unknown_rates;
    if (std::find(rates.begin(), rates.end(), rate) == rates.end()) rates.push_back(rate);
  };
  for (int64_t i = 0; i < n; ++i) {
    FlatOp& flat_op = flat_ops[i];
    const Instruction& instruction = *flat_op.instruction;
    TimelineOp& op = data->ops[i];
    op.instruction = &instruction;
    op.name = std::move(flat_op.name);
    op.opcode = std::string(OpcodeSpelling(instruction.opcode()));
    op.op_name = OpNameOf(instruction);
    op.fused = flat_op.interior;
    ScheduleOp& s = problem.ops[i];
    s.operands = std::move(flat_op.operands);
    if (flat_op.inlined_call) {
      // Its instructions are ops of their own: the call only hands on its root's value.
      s.stream = Stream::kNone;
      continue;
    }
    PERFSIM_ASSIGN_OR_RETURN(std::optional<RoutedOpSpec> routed,
                             DescribeRoutedOp(instruction, i, *data));
    OpCost fused;
    bool untimed = false;
    if (routed.has_value() && instruction.opcode() == Opcode::kRaggedAllToAll) {
      // Timed from the routing's traffic alone: sim/cost's generic time (the operand's rows
      // spread evenly) would route every flow of every group once more for nothing.
      fused = OpCost{.seconds = 0.0, .bound = Bound::kCommunication};
    } else {
      absl::StatusOr<OpCost> cost = CostInstruction(instruction, chip, cost_options);
      if (!cost.ok()) return Located(instruction, cost.status());
      // sim/cost counts a loop's body its trip count times; unknown_work lists it when that
      // count is unknown, or when what it calls holds work of unknown time.
      untimed = !cost->seconds.has_value() || unknown_work.Of(instruction);
      // Calls, loops and conditionals: their computations fused and counted by the same rules.
      absl::StatusOr<std::optional<double>> composite = timer.CompositeSeconds(instruction);
      if (!composite.ok()) return Located(instruction, composite.status());
      if (composite->has_value()) cost->seconds = **composite;
      fused = flat_op.fusion_applied
                  ? FusedCost(instruction, *cost, flat_op.interior, flat_op.operand_interior)
                  : *cost;
    }
    op.seconds = fused.seconds.value_or(0);
    op.bound = fused.bound;
    op.flops = fused.counts.flops;
    op.bytes = fused.counts.bytes_accessed;
    op.lower_bound = untimed || !fused.unknown_rates.empty();
    if (untimed) data->untimed.push_back(op.name);
    for (const std::string& rate : fused.unknown_rates) add_rate(rate);
    const bool communication = IsCollectiveInstruction(instruction) &&
                               !IsAsyncDone(instruction.opcode()) &&
                               instruction.opcode() != Opcode::kAsyncUpdate;
    // A routed op is on its stream whatever the routing gives it (the graph does not depend
    // on the routing); its static time here is a placeholder Simulate replaces.
    const bool takes_time = op.seconds > 0 || routed.has_value();
    op.stream = !takes_time      ? Stream::kNone
                : communication ? Stream::kCommunication
                                : Stream::kCompute;
    if (communication) {
      absl::StatusOr<std::vector<std::vector<int64_t>>> groups =
          SyncGroups(instruction, data->num_devices);
      if (!groups.ok()) return Located(instruction, groups.status());
      op.groups = *std::move(groups);
    }
    s.stream = op.stream;
    if (op.stream == Stream::kCommunication) s.groups = op.groups;
    if (routed.has_value()) {
      data->routed_of[i] = static_cast<int32_t>(data->routed.size());
      data->routed.push_back(*std::move(routed));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph graph, ScheduleGraph::Create(problem));
  data->graph = std::make_shared<const ScheduleGraph>(std::move(graph));

  for (const Instruction* parameter : entry->parameters()) {
    data->parameter_bytes = SaturatingAdd(data->parameter_bytes, parameter->shape().ByteSize());
  }
  absl::StatusOr<MemoryNeed> memory =
      ComputeMemoryNeed(module, data->num_devices, /*input_sets=*/1);
  if (!memory.ok()) return Annotate(memory.status(), "HBM liveness");
  data->peak_buffer_bytes = memory->device_bytes;
  data->peak_at = memory->peak_at;
  PreparedModule prepared;
  prepared.data_ = std::move(data);
  return prepared;
}

}  // namespace perfsim
