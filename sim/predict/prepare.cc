// PrepareStep (predict.h): everything about a scenario that does not depend on its routing.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_cost.h"
#include "sim/fit/module_fit.h"
#include "sim/hw/chip_registry.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/moe/step_graph.h"
#include "sim/predict/predict.h"
#include "sim/predict/predict_internal.h"
#include "sim/simulator/fusion.h"
#include "sim/simulator/routed.h"
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

const PredictOptions& PreparedStep::options() const { return data_->options; }
int64_t PreparedStep::num_instructions() const { return static_cast<int64_t>(data_->ops.size()); }

namespace {

// The replica groups of a collective (PreparedOp::groups()).
void SetGroups(const Instruction& instruction, int64_t devices, PreparedOp& op) {
  const auto& rg = instruction.attributes().replica_groups;
  if (rg.has_value() && rg->iota.has_value()) {
    op.owned_groups = ExpandIotaReplicaGroups(*rg->iota);
  } else if (rg.has_value() && !rg->groups.empty()) {
    op.listed_groups = &rg->groups;
    return;
  }
  if (op.owned_groups.empty()) {
    op.owned_groups.emplace_back(devices);
    std::iota(op.owned_groups[0].begin(), op.owned_groups[0].end(), 0);
  }
}

bool IsGroupedMatmul(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kRaggedDot) return true;
  return instruction.opcode() == Opcode::kCustomCall &&
         (instruction.attributes().custom_call_target == kGmmTarget ||
          instruction.attributes().custom_call_target == kTgmmTarget);
}

// ResolveChip, with the built-in chips parsed once per process (a file is read every time: it
// may change).
absl::StatusOr<Chip> ResolveChipOnce(const std::string& name) {
  if (absl::StrContains(name, "/") || absl::EndsWith(name, ".textproto")) return ResolveChip(name);
  static std::mutex mutex;
  static auto* chips = new std::map<std::string, Chip>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = chips->find(name);
  if (it != chips->end()) return it->second;
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip(name));
  return chips->emplace(name, std::move(chip)).first->second;
}

// The routing-independent cost of one instruction, fusion applied.
absl::Status CostOp(const Instruction& instruction, const Chip& chip,
                    const CostOptions& cost_options, bool interior,
                    const std::vector<bool>& operand_interior, PreparedOp& op,
                    std::map<std::string, bool>& unknown) {
  // A ragged-all-to-all is timed from the routing's traffic, group by group; its generic cost
  // (every group's flows routed at once) is skipped: at 16k devices that alone routes millions
  // of flows.
  absl::StatusOr<OpCost> cost = instruction.opcode() == Opcode::kRaggedAllToAll
                                    ? absl::StatusOr<OpCost>(OpCost{.bound = Bound::kCommunication})
                                    : CostInstruction(instruction, chip, cost_options);
  if (!cost.ok()) return Annotate(cost.status(), "cost");
  for (const std::string& rate : cost->unknown_rates) unknown[rate] = true;
  // Fusion (sim/simulator/fusion.h): an interior op writes nothing and launches nothing; a
  // consumer does not read its interior operands.
  const OpCost fused = FusedCost(instruction, *cost, interior, operand_interior);
  OpRow& info = op.info;
  info.bound = fused.bound;
  info.flops = fused.counts.flops;
  info.bytes = fused.counts.bytes_accessed;
  info.lower_bound = !cost->unknown_rates.empty();
  op.base_seconds = fused.seconds.value_or(0);
  return absl::OkStatus();
}


bool InForward(const Instruction& instruction) {
  const Annotation* annotation = instruction.annotation();
  return annotation != nullptr && annotation->phase() == Annotation::PHASE_FORWARD;
}

// The instructions that hold the forward's result (predict.h, "The incoming cotangent"): the
// root's elements, through tuples, annotated forward; when the root holds none (a module that
// returns only gradients), every forward instruction no other forward instruction reads.
std::vector<const Instruction*> ForwardOutputs(const Computation& entry) {
  std::vector<const Instruction*> outputs;
  std::vector<const Instruction*> pending = {entry.root()};
  while (!pending.empty()) {
    const Instruction* value = pending.back();
    pending.pop_back();
    if (value->opcode() == Opcode::kTuple) {
      pending.insert(pending.end(), value->operands().rbegin(), value->operands().rend());
    } else if (InForward(*value)) {
      outputs.push_back(value);
    }
  }
  if (!outputs.empty()) return outputs;
  absl::flat_hash_set<const Instruction*> read_by_forward;
  for (const auto& instruction : entry.instructions()) {
    if (!InForward(*instruction)) continue;
    for (const Instruction* operand : instruction->operands()) read_by_forward.insert(operand);
  }
  for (const auto& instruction : entry.instructions()) {
    if (InForward(*instruction) && !read_by_forward.contains(instruction.get())) {
      outputs.push_back(instruction.get());
    }
  }
  return outputs;
}

// Makes every entry parameter annotated ROLE_COTANGENT wait for the forward's outputs; true
// when it added an edge. The edges point forwards in the instruction order (parameters come
// first): SortTopologically restores the schedule's operands-first order.
bool AddCotangentEdges(const Computation& entry,
                       const absl::flat_hash_map<const Instruction*, int64_t>& index,
                       std::vector<PreparedOp>& ops) {
  std::vector<const Instruction*> outputs;
  bool added = false;
  for (const Instruction* parameter : entry.parameters()) {
    const Annotation* annotation = parameter->annotation();
    if (annotation == nullptr || annotation->role() != Annotation::ROLE_COTANGENT) continue;
    if (outputs.empty()) outputs = ForwardOutputs(entry);
    for (const Instruction* output : outputs) {
      ops[index.at(parameter)].operands.push_back(index.at(output));
      added = true;
    }
  }
  return added;
}

// Reorders `ops` so that every op comes after its schedule edges (operands, control
// predecessors, cotangent edges), keeping the instruction order wherever the edges allow
// (always the earliest ready op first): only the cotangent and what reads it move.
// InvalidArgument when the edges form a cycle (a forward output that reads the cotangent).
absl::Status SortTopologically(std::vector<PreparedOp>& ops) {
  const int64_t n = static_cast<int64_t>(ops.size());
  std::vector<int64_t> pending(n), user_begin(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    pending[i] = static_cast<int64_t>(ops[i].operands.size());
    for (int64_t o : ops[i].operands) ++user_begin[o + 1];
  }
  for (int64_t i = 0; i < n; ++i) user_begin[i + 1] += user_begin[i];
  std::vector<int64_t> users(user_begin[n]), fill(user_begin.begin(), user_begin.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o : ops[i].operands) users[fill[o]++] = i;
  }
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ready;
  for (int64_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int64_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int64_t k = user_begin[i]; k < user_begin[i + 1]; ++k) {
      if (--pending[users[k]] == 0) ready.push(users[k]);
    }
  }
  if (static_cast<int64_t>(order.size()) != n) {
    for (int64_t i = 0; i < n; ++i) {
      if (pending[i] == 0 || ops[i].instruction->opcode() != Opcode::kParameter) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "cotangent parameter ", ops[i].instruction->name(),
          ": expected the forward's outputs (the root's forward-phase elements) not to depend "
          "on it; got a forward output that reads it"));
    }
    return absl::InvalidArgumentError(
        "cotangent: expected the forward's outputs not to depend on the cotangent; got a cycle");
  }
  std::vector<int64_t> position(n);
  for (int64_t k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<PreparedOp> sorted;
  sorted.reserve(n);
  for (int64_t i : order) {
    PreparedOp& op = sorted.emplace_back(std::move(ops[i]));
    for (int64_t& o : op.operands) o = position[o];
  }
  ops = std::move(sorted);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ScheduleGraph> BuildScheduleGraph(const PreparedStepData& data, int64_t n) {
  ScheduleProblem problem{.num_devices = n};
  problem.ops.resize(data.ops.size());
  for (size_t i = 0; i < data.ops.size(); ++i) {
    const PreparedOp& prepared = data.ops[i];
    ScheduleOp& op = problem.ops[i];
    op.operands = prepared.operands;
    op.stream = prepared.stream;
    for (const auto& group : prepared.groups()) {
      int64_t simulated = 0;
      for (int64_t d : group) simulated += d < n ? 1 : 0;
      if (simulated < 2) continue;
      std::vector<int64_t>& kept = op.groups.emplace_back();
      kept.reserve(simulated);
      for (int64_t d : group) {
        if (d < n) kept.push_back(d);
      }
    }
  }
  return ScheduleGraph::Create(std::move(problem));
}

absl::StatusOr<PreparedStep> PrepareStep(const PredictOptions& o, PrepareStage* failed_stage) {
  PrepareStage ignored;
  PrepareStage& stage = failed_stage != nullptr ? *failed_stage : ignored;
  stage = PrepareStage::kScenario;
  absl::StatusOr<Chip> chip = o.chip.has_value() ? *o.chip : ResolveChipOnce(o.hw);
  if (!chip.ok()) return chip.status();
  auto owned_chip = std::make_unique<Chip>(*std::move(chip));
  const Chip& c = *owned_chip;
  const std::string mesh = o.mesh.empty() ? c.DefaultSliceShape() : o.mesh;
  absl::StatusOr<Topology> topology = Topology::Create(c, mesh);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("--mesh ", mesh));
  auto owned_topology = std::make_unique<Topology>(*std::move(topology));
  const Topology& t = *owned_topology;
  const StepSpec& spec = o.spec;
  if (t.num_devices() != spec.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected the parallelism to use the mesh's ", t.num_devices(), " devices (", mesh, " ",
        c.name(), " chips × ", t.num_devices() / t.num_chips(), " per chip); got ",
        ParallelismToString(spec.parallelism), " = ", spec.num_devices()));
  }
  // Each data-parallel replica (dp, and fsdp, which shards the batch too) takes whole
  // sequences; only the tokens of a sequence may be split further (over ep).
  const int64_t data_parallel = spec.parallelism.dp * spec.parallelism.fsdp;
  if (spec.batch % data_parallel != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch: expected a batch divisible by the data-parallel degree dp·fsdp = ", data_parallel,
        " (", ParallelismToString(spec.parallelism), "); got batch ", spec.batch));
  }
  stage = PrepareStage::kLower;
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep lowered, LowerStep(spec));
  // A kernel tiling that does not fit VMEM is a lowering failure (DESIGN.md "Fit"), a failed
  // check (exit 1). The context goes in as an argument: Annotate would drop the misfit mark.
  stage = PrepareStage::kFit;
  PERFSIM_RETURN_IF_ERROR(CheckModuleFits(
      *lowered.module, c, std::nullopt, absl::StrCat("backend ", spec.backend, " on ", c.name())));
  stage = PrepareStage::kCost;
  auto data = std::make_shared<PreparedStepData>(o, std::move(lowered));
  static std::atomic<uint64_t> next_id{1};
  data->id = next_id.fetch_add(1, std::memory_order_relaxed);
  data->cost_context = absl::StrCat(c.proto().SerializeAsString(), "|", mesh);
  data->chip = std::move(owned_chip);
  data->topology = std::move(owned_topology);
  data->mesh = mesh;

  const Computation& entry = *data->step.module->entry();
  const auto& instructions = entry.instructions();
  absl::flat_hash_map<const Instruction*, int64_t> index;
  index.reserve(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) index[instructions[i].get()] = i;
  const FusionPlan fusion = PlanFusion(entry);
  const CostOptions cost_options{
      .mode = CostMode::kTrue, .num_devices = spec.num_devices(), .topology = &t};
  std::map<std::string, bool> unknown;
  std::vector<bool> operand_interior;
  data->ops.resize(instructions.size());
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    PreparedOp& op = data->ops[i];
    op.instruction = &instruction;
    for (const Instruction* operand : instruction.operands())
      op.operands.push_back(index.at(operand));
    for (const Instruction* pred : instruction.control_predecessors()) {
      op.operands.push_back(index.at(pred));
    }
    op.info.name = instruction.name();
    op.info.opcode = std::string(OpcodeSpelling(instruction.opcode()));
    const std::optional<Stage> lowered_in = StageOfAnnotation(instruction.annotation());
    op.info.stage = lowered_in.has_value() ? std::string(StageName(*lowered_in)) : "";
    op.info.phase = lowered_in.has_value() ? std::string(StagePhase(*lowered_in)) : "other";
    operand_interior.clear();
    for (const Instruction* operand : instruction.operands()) {
      operand_interior.push_back(fusion.interior[index.at(operand)]);
    }
    PERFSIM_RETURN_IF_ERROR(
        CostOp(instruction, c, cost_options, fusion.interior[i], operand_interior, op, unknown));
    if (IsCollectiveInstruction(instruction)) {
      op.stream = Stream::kCommunication;
      SetGroups(instruction, spec.num_devices(), op);
      if (instruction.opcode() == Opcode::kRaggedAllToAll) {
        op.kind = PreparedOp::Kind::kRaggedAllToAll;
        // dispatch and combine_bwd send rows towards the experts; combine and dispatch_bwd back.
        op.to_experts = lowered_in == Stage::kDispatch || lowered_in == Stage::kCombineBwd;
        const Shape& operand = instruction.operand(0)->shape();
        op.row_bytes = static_cast<double>(ByteWidth(operand.element_type()));
        for (int64_t k = 1; k < operand.rank(); ++k) op.row_bytes *= operand.dimensions(k);
      }
    } else if (IsGroupedMatmul(instruction)) {
      op.stream = Stream::kCompute;
      op.kind = PreparedOp::Kind::kGroupedMatmul;
      op.total_groups = instruction.operand(2)->shape().dimensions(0);
      const Annotation* sizes = instruction.operand(2)->annotation();
      if (sizes != nullptr && sizes->has_ragged()) op.ragged = sizes->ragged();
      if (instruction.opcode() == Opcode::kCustomCall) {
        PERFSIM_ASSIGN_OR_RETURN(op.grouped, GroupedMatmulSpecFromInstruction(instruction));
      } else {
        op.grouped = RaggedDotGroupedSpec(instruction, c);
      }
    } else {
      op.stream = op.base_seconds > 0 ? Stream::kCompute : Stream::kNone;
    }
    op.info.stream = op.stream == Stream::kCommunication ? "comm" : "compute";
    const Opcode opcode = instruction.opcode();
    op.in_memory = opcode != Opcode::kParameter && opcode != Opcode::kTuple &&
                   opcode != Opcode::kGetTupleElement && opcode != Opcode::kBitcast;
    op.result_bytes =
        instruction.shape().IsArray() ? static_cast<double>(instruction.shape().ByteSize()) : 0;
  }
  for (const auto& [rate, unused] : unknown) data->unknown_rates.push_back(rate);
  // The incoming cotangent arrives once the forward's output exists (predict.h).
  if (AddCotangentEdges(entry, index, data->ops)) {
    PERFSIM_RETURN_IF_ERROR(SortTopologically(data->ops));
  }
  data->phase.assign(data->ops.size(), -1);
  for (size_t i = 0; i < data->ops.size(); ++i) {
    for (int8_t p = 0; p < kNumPredictPhases; ++p) {
      if (data->ops[i].info.phase == kPredictPhaseNames[p]) data->phase[i] = p;
    }
  }
  data->replica_devices = spec.parallelism.ep * spec.parallelism.tp;
  PERFSIM_ASSIGN_OR_RETURN(ScheduleGraph graph, BuildScheduleGraph(*data, data->replica_devices));
  data->replica_graph = std::make_shared<const ScheduleGraph>(std::move(graph));

  // Static HBM by the entry parameters' annotated roles: activations and cotangents (x, dy) are
  // inputs; weights are parameters, and the trained ones have gradients (fwd_bwd) and optimizer
  // state. A frozen weight (DeepSeek-V3's score-correction bias, which only steers the expert
  // choice) has neither.
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const Instruction& parameter = *entry.parameter(p);
    const double bytes = static_cast<double>(parameter.shape().ByteSize());
    const Annotation::Role role = parameter.annotation() != nullptr
                                      ? parameter.annotation()->role()
                                      : Annotation::ROLE_UNSPECIFIED;
    if (role == Annotation::ROLE_ACTIVATION || role == Annotation::ROLE_COTANGENT ||
        role == Annotation::ROLE_ROUTING_INPUT) {
      data->input_activations += bytes;
      continue;
    }
    data->parameters += bytes;
    const bool trained = role == Annotation::ROLE_TRAINED_WEIGHT;
    if (spec.phase == Phase::kForwardBackward && trained) data->gradients += bytes;
    if (o.adam && trained) {
      data->optimizer += 8.0 * static_cast<double>(entry.parameter(p)->shape().ElementCount());
    }
  }
  const int64_t devices_per_chip = t.num_devices() / t.num_chips();
  data->capacity =
      static_cast<double>(c.hbm_capacity_bytes()) / static_cast<double>(devices_per_chip);

  // MFU terms.
  const ModelConfig& model = spec.model;
  const double per_token = static_cast<double>(
      model.RoutedFlopsPerToken() + model.SharedFlopsPerToken() + model.RouterFlopsPerToken());
  data->model_flops_per_device = per_token * static_cast<double>(spec.tokens()) *
                                 (spec.phase == Phase::kForwardBackward ? 3 : 1) /
                                 static_cast<double>(spec.num_devices());
  const bool f32 = model.proto().param_dtype() == DTYPE_F32;
  data->peak_flops_per_device =
      c.PeakMatmulFlopsPerSecond(f32 ? MatmulDtype::kF32 : MatmulDtype::kBf16) /
      static_cast<double>(devices_per_chip);
  PreparedStep prepared;
  prepared.data_ = std::move(data);
  return prepared;
}

}  // namespace perfsim
