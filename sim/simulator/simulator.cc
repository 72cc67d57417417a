// The model-agnostic step simulator (simulator.h).
#include "sim/simulator/simulator.h"

#include <algorithm>
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
#include "sim/simulator/fusion.h"
#include "sim/simulator/groups.h"
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

absl::StatusOr<Timeline> SimulateModule(const Module& module, const Chip& chip,
                                        const Topology& topology,
                                        const SimulatorOptions& options) {
  const Computation* entry = module.entry();
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.name(), ": expected an entry computation; got none"));
  }
  Timeline t;
  t.module = module.name();
  const bool flat = module.replica_count() * module.num_partitions() == 1;
  t.num_devices = options.num_devices > 0 ? options.num_devices
                  : flat                  ? topology.num_devices()
                                          : ModuleDeviceCount(module);
  if (t.num_devices > topology.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "module ", module.name(), ": expected at most the ", topology.num_devices(),
        " devices of ", topology.chip_name(), " ", topology.slice_shape(), "; got ",
        t.num_devices, " devices"));
  }

  // The liveness pass (and the timer's recursion) follow the call nesting: bounded first.
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  const auto& instructions = entry->instructions();
  absl::flat_hash_map<const Instruction*, int64_t> index;
  index.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  const FusionPlan fusion = PlanFusion(*entry);
  t.fused = fusion.applied;

  CostMemo memo;
  const CostOptions cost_options{.mode = CostMode::kTrue,
                                 .num_devices = t.num_devices,
                                 .topology = &topology,
                                 .memo = &memo};
  UnknownWork unknown_work;
  ComputationTimer timer(chip, cost_options);
  ScheduleProblem problem{.num_devices = t.num_devices};
  problem.ops.resize(instructions.size());
  t.ops.resize(instructions.size());
  std::vector<bool> operand_interior;
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    absl::StatusOr<OpCost> cost = CostInstruction(instruction, chip, cost_options);
    if (!cost.ok()) return Located(instruction, cost.status());
    // sim/cost counts a loop's body its trip count times; unknown_work lists it when that count
    // is unknown, or when what it calls holds work of unknown time.
    const bool untimed = !cost->seconds.has_value() || unknown_work.Of(instruction);
    // Calls, loops and conditionals: their computations fused and counted by the same rules.
    absl::StatusOr<std::optional<double>> composite = timer.CompositeSeconds(instruction);
    if (!composite.ok()) return Located(instruction, composite.status());
    if (composite->has_value()) cost->seconds = **composite;
    operand_interior.clear();
    for (const Instruction* operand : instruction.operands()) {
      operand_interior.push_back(fusion.interior[index.at(operand)]);
    }
    const OpCost fused =
        fusion.applied ? FusedCost(instruction, *cost, fusion.interior[i], operand_interior)
                       : *cost;
    TimelineOp& op = t.ops[i];
    op.instruction = &instruction;
    op.name = instruction.name();
    op.opcode = std::string(OpcodeSpelling(instruction.opcode()));
    op.op_name = OpNameOf(instruction);
    op.seconds = fused.seconds.value_or(0);
    op.bound = fused.bound;
    op.flops = fused.counts.flops;
    op.bytes = fused.counts.bytes_accessed;
    op.fused = fusion.interior[i];
    op.lower_bound = untimed || !cost->unknown_rates.empty();
    if (untimed) t.untimed.push_back(op.name);
    for (const std::string& rate : cost->unknown_rates) {
      if (std::find(t.unknown_rates.begin(), t.unknown_rates.end(), rate) ==
          t.unknown_rates.end()) {
        t.unknown_rates.push_back(rate);
      }
    }
    const bool communication = IsCollectiveInstruction(instruction) &&
                               !IsAsyncDone(instruction.opcode()) &&
                               instruction.opcode() != Opcode::kAsyncUpdate;
    op.stream = op.seconds <= 0    ? Stream::kNone
                : communication ? Stream::kCommunication
                                : Stream::kCompute;
    if (communication) {
      absl::StatusOr<std::vector<std::vector<int64_t>>> groups =
          SyncGroups(instruction, t.num_devices);
      if (!groups.ok()) return Located(instruction, groups.status());
      op.groups = *std::move(groups);
    }
    ScheduleOp& s = problem.ops[i];
    for (const Instruction* operand : instruction.operands()) s.operands.push_back(index.at(operand));
    for (const Instruction* predecessor : instruction.control_predecessors()) {
      s.operands.push_back(index.at(predecessor));
    }
    s.stream = op.stream;
    s.duration = {op.seconds};
    if (op.stream == Stream::kCommunication) s.groups = op.groups;
    t.serial_seconds += op.seconds;
    t.flops += op.flops;
  }

  PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph graph, ScheduleGraph::Create(std::move(problem)));
  ScheduleDurations durations;
  durations.uniform.reserve(t.ops.size());
  for (const TimelineOp& op : t.ops) durations.uniform.push_back(op.seconds);
  durations.row.assign(t.ops.size(), -1);
  PERFSIM_ASSIGN_OR_RETURN(t.schedule,
                           SimulateSchedule(graph, durations, {.every_class = options.every_class}));
  t.slowest_device = t.schedule.slowest_device;
  const DeviceSchedule& slowest = t.schedule.device(t.slowest_device);
  t.step_seconds = t.schedule.makespan;
  t.compute_busy = slowest.compute_busy;
  t.communication_busy = slowest.communication_busy;
  t.exposed_communication = slowest.exposed_communication;

  for (const Instruction* parameter : entry->parameters()) {
    t.parameter_bytes = SaturatingAdd(t.parameter_bytes, parameter->shape().ByteSize());
  }
  absl::StatusOr<MemoryNeed> memory = ComputeMemoryNeed(module, t.num_devices, /*input_sets=*/1);
  if (!memory.ok()) return Annotate(memory.status(), "HBM liveness");
  t.peak_buffer_bytes = memory->device_bytes;
  t.peak_at = memory->peak_at;
  return t;
}

}  // namespace perfsim
