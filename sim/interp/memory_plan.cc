// The static liveness pass (see memory_plan.h). Buffers are numbered per computation: its
// parameters' array leaves first (owned by the caller, so 0 bytes here), then every buffer an
// instruction makes. A value is the list of buffer numbers of its array leaves in depth-first
// order of its declared shape; a reference count per buffer gives the live bytes.
//
// Every sum of bytes saturates at kInt64Max (SaturatingAdd): each buffer's size fits int64
// (ValidateShape), but a program can hold more of them at once than int64 counts, and a
// wrapped sum would be small and pass the budget. A saturated sum is a real lower bound of
// the need, so reporting kInt64Max is exact enough to refuse it.
#include "sim/interp/memory_plan.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/custom_calls.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

using Leaves = std::vector<int32_t>;

int64_t LeafCount(const Shape& shape) {
  if (shape.IsArray()) return 1;
  if (!shape.IsTuple()) return 0;  // token, opaque
  int64_t count = 0;
  for (const Shape& s : shape.tuple_shapes()) count += LeafCount(s);  // leaves, not bytes
  return count;
}

void AppendLeafBytes(const Shape& shape, std::vector<int64_t>* out) {
  if (shape.IsArray()) {
    out->push_back(shape.ByteSize());
  } else if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) AppendLeafBytes(s, out);
  }
}

std::vector<int64_t> LeafBytes(const Shape& shape) {
  std::vector<int64_t> out;
  AppendLeafBytes(shape, &out);
  return out;
}

// What one computation does to memory, independent of its call site.
struct Summary {
  // The most bytes of buffers made inside it alive at once (its root's among them).
  int64_t peak_bytes = 0;
  std::vector<const Instruction*> peak_path;
  // Per root leaf: the flat parameter leaf it hands back, or -1 for a buffer made inside.
  std::vector<int64_t> root_param_leaf;
  // Bytes of the declared root leaves, and of all parameter leaves.
  int64_t root_bytes = 0;
  int64_t parameter_bytes = 0;
};

// How one instruction changes the live set: the buffers of its value, and the bytes it adds
// while it runs (its new buffers, a callee's peak, scratch) on top of what is live before it.
struct Step {
  Leaves leaves;
  int64_t running_bytes = 0;
  std::vector<const Instruction*> inner_path;
};

class Planner {
 public:
  Planner(const absl::flat_hash_map<const Computation*, ComputationPlan>& plans,
          int64_t num_devices)
      : plans_(plans), num_devices_(num_devices) {}

  absl::StatusOr<const Summary*> Summarize(const Computation& computation);

  int64_t constant_bytes() const { return constant_bytes_; }
  std::vector<const Instruction*> TakeConstants() { return std::move(constants_); }

 private:
  // The state of one computation's walk.
  struct Walk {
    std::vector<int64_t> buffer_bytes;
    std::vector<int32_t> refs;
    int64_t live = 0;

    int32_t NewBuffer(int64_t bytes) {
      buffer_bytes.push_back(bytes);
      refs.push_back(0);
      return static_cast<int32_t>(buffer_bytes.size() - 1);
    }
    void Hold(const Leaves& leaves) {
      for (int32_t id : leaves) {
        if (refs[id]++ == 0) live = SaturatingAdd(live, buffer_bytes[id]);
      }
    }
    void Drop(const Leaves& leaves) {
      for (int32_t id : leaves) {
        // Never below 0, also after a saturated Hold (live >= 0, so no overflow).
        if (--refs[id] == 0) live = std::max<int64_t>(0, live - buffer_bytes[id]);
      }
    }
  };

  absl::StatusOr<Step> Model(const Instruction& instruction, const std::vector<const Leaves*>& ops,
                             const std::vector<Leaves>& parameter_leaves, Walk& walk);

  // New buffers for every leaf of `shape`.
  Step Fresh(const Shape& shape, Walk& walk) {
    Step step;
    for (int64_t bytes : LeafBytes(shape)) {
      step.leaves.push_back(walk.NewBuffer(bytes));
      step.running_bytes = SaturatingAdd(step.running_bytes, bytes);
    }
    return step;
  }

  // Leaves [offset, offset + count) of `value`, or nullopt when the declared shapes disagree
  // with the value's leaves (the evaluator reports that; the plan just counts new buffers).
  static std::optional<Leaves> SubLeaves(const Leaves& value, int64_t offset, int64_t count) {
    if (offset < 0 || count < 0 || offset + count > static_cast<int64_t>(value.size())) {
      return std::nullopt;
    }
    return Leaves(value.begin() + offset, value.begin() + offset + count);
  }

  // The leaves of tuple element `index` of a value of declared shape `shape`.
  static std::optional<Leaves> ElementLeaves(const Leaves& value, const Shape& shape,
                                             int64_t index) {
    if (!shape.IsTuple() || index < 0 || index >= shape.tuple_size() ||
        static_cast<int64_t>(value.size()) != LeafCount(shape)) {
      return std::nullopt;
    }
    int64_t offset = 0;
    for (int64_t j = 0; j < index; ++j) offset += LeafCount(shape.tuple_shapes(j));
    return SubLeaves(value, offset, LeafCount(shape.tuple_shapes(index)));
  }

  // The value a call of `summary` with argument leaves `args` returns.
  static Leaves CallResult(const Summary& summary, const Leaves& args, const Shape& result,
                           Walk& walk) {
    Leaves leaves;
    const std::vector<int64_t> bytes = LeafBytes(result);
    for (size_t l = 0; l < summary.root_param_leaf.size(); ++l) {
      const int64_t p = summary.root_param_leaf[l];
      if (p >= 0 && p < static_cast<int64_t>(args.size())) {
        leaves.push_back(args[p]);
      } else {
        leaves.push_back(walk.NewBuffer(l < bytes.size() ? bytes[l] : 0));
      }
    }
    return leaves;
  }

  // Scalar arguments, result and peak of the per-element computations of `instruction`.
  absl::StatusOr<int64_t> PerElementCallBytes(const Instruction& instruction) {
    int64_t bytes = 0;
    for (const Computation* c : instruction.called_computations()) {
      PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*c));
      bytes = SaturatingAdd(
          bytes, SaturatingAdd(s->parameter_bytes, SaturatingAdd(s->root_bytes, s->peak_bytes)));
    }
    return bytes;
  }

  const absl::flat_hash_map<const Computation*, ComputationPlan>& plans_;
  const int64_t num_devices_;
  absl::flat_hash_map<const Computation*, std::unique_ptr<Summary>> summaries_;
  absl::flat_hash_set<const Instruction*> constants_seen_;
  std::vector<const Instruction*> constants_;
  int64_t constant_bytes_ = 0;
};

absl::StatusOr<const Summary*> Planner::Summarize(const Computation& computation) {
  auto done = summaries_.find(&computation);
  if (done != summaries_.end()) return done->second.get();
  auto it = plans_.find(&computation);
  if (it == plans_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(computation.name(), ": expected a root instruction; got none"));
  }
  const ComputationPlan& plan = it->second;
  auto summary = std::make_unique<Summary>();
  Walk walk;
  std::vector<Leaves> parameter_leaves(computation.parameter_count());
  for (int64_t p = 0; p < computation.parameter_count(); ++p) {
    const Instruction* parameter = computation.parameter(p);
    if (parameter == nullptr) continue;
    for (int64_t bytes : LeafBytes(parameter->shape())) {
      parameter_leaves[p].push_back(walk.NewBuffer(0));
      summary->parameter_bytes = SaturatingAdd(summary->parameter_bytes, bytes);
    }
  }
  const int32_t parameter_buffers = static_cast<int32_t>(walk.buffer_bytes.size());

  const int64_t n = static_cast<int64_t>(plan.order.size());
  std::vector<Leaves> slots(n);
  std::vector<const Leaves*> ops;
  for (int64_t i = 0; i < n; ++i) {
    const Instruction& instruction = *plan.order[i];
    ops.clear();
    for (int32_t s : plan.operand_slots[i]) ops.push_back(&slots[s]);
    absl::StatusOr<Step> step = Model(instruction, ops, parameter_leaves, walk);
    if (!step.ok()) return Annotate(step.status(), instruction.name());
    const int64_t running = SaturatingAdd(walk.live, step->running_bytes);
    if (running > summary->peak_bytes) {
      summary->peak_bytes = running;
      summary->peak_path = {&instruction};
      summary->peak_path.insert(summary->peak_path.end(), step->inner_path.begin(),
                                step->inner_path.end());
    }
    slots[i] = std::move(step->leaves);
    walk.Hold(slots[i]);
    if (walk.live > summary->peak_bytes) {
      summary->peak_bytes = walk.live;
      summary->peak_path = {&instruction};
    }
    for (int32_t s : plan.release_after[i]) {
      walk.Drop(slots[s]);
      slots[s].clear();
    }
  }
  for (int32_t id : slots[plan.root_slot]) {
    summary->root_param_leaf.push_back(id < parameter_buffers ? id : -1);
  }
  for (int64_t bytes : LeafBytes(computation.root()->shape())) {
    summary->root_bytes = SaturatingAdd(summary->root_bytes, bytes);
  }
  const Summary* result = summary.get();
  summaries_.emplace(&computation, std::move(summary));
  return result;
}

absl::StatusOr<Step> Planner::Model(const Instruction& instruction,
                                    const std::vector<const Leaves*>& ops,
                                    const std::vector<Leaves>& parameter_leaves, Walk& walk) {
  const Shape& shape = instruction.shape();
  const InstructionAttributes& attrs = instruction.attributes();
  // The operand's value, handed on unchanged.
  auto pass_operand = [&]() -> Step {
    if (ops.empty() || static_cast<int64_t>(ops[0]->size()) != LeafCount(shape)) {
      return Fresh(shape, walk);
    }
    return Step{*ops[0], 0, {}};
  };
  // Tuple element `index` of operand 0, handed on.
  auto pass_element = [&](int64_t index) -> Step {
    std::optional<Leaves> leaves;
    if (!ops.empty()) leaves = ElementLeaves(*ops[0], instruction.operand(0)->shape(), index);
    if (!leaves.has_value() || static_cast<int64_t>(leaves->size()) != LeafCount(shape)) {
      return Fresh(shape, walk);
    }
    return Step{*std::move(leaves), 0, {}};
  };
  auto all_operands = [&]() {
    Leaves args;
    for (const Leaves* o : ops) args.insert(args.end(), o->begin(), o->end());
    return args;
  };
  // A fresh result plus the scratch of per-element computation calls.
  auto fresh_with_calls = [&](int64_t extra_bytes) -> absl::StatusOr<Step> {
    Step step = Fresh(shape, walk);
    PERFSIM_ASSIGN_OR_RETURN(const int64_t call_bytes, PerElementCallBytes(instruction));
    step.running_bytes = SaturatingAdd(step.running_bytes, SaturatingAdd(call_bytes, extra_bytes));
    return step;
  };

  switch (instruction.opcode()) {
    case Opcode::kParameter: {
      const int64_t p = attrs.parameter_number.value_or(-1);
      if (p < 0 || p >= static_cast<int64_t>(parameter_leaves.size())) return Fresh(shape, walk);
      return Step{parameter_leaves[p], 0, {}};
    }
    case Opcode::kConstant: {
      // Alive for the whole run, counted once per device in constant_bytes.
      if (constants_seen_.insert(&instruction).second) {
        constants_.push_back(&instruction);
        constant_bytes_ = SaturatingAdd(constant_bytes_, shape.ByteSize());
      }
      Step step;
      for (int64_t l = 0; l < LeafCount(shape); ++l) step.leaves.push_back(walk.NewBuffer(0));
      return step;
    }
    case Opcode::kTuple:
      return Step{all_operands(), 0, {}};
    case Opcode::kGetTupleElement:
      return pass_element(attrs.tuple_index.value_or(-1));
    case Opcode::kCopy:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
    case Opcode::kSetDimensionSize:
    case Opcode::kAllReduceDone:
    case Opcode::kAsyncUpdate:
      return pass_operand();
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone:
      return pass_element(1);
    case Opcode::kCopyDone:
      return pass_element(0);
    case Opcode::kCopyStart: {
      // (operand, operand, u32[] context).
      Step step = Fresh(shape, walk);
      const int64_t n = ops.empty() ? 0 : static_cast<int64_t>(ops[0]->size());
      if (shape.IsTuple() && shape.tuple_size() == 3 &&
          static_cast<int64_t>(step.leaves.size()) == 2 * n + 1) {
        std::copy(ops[0]->begin(), ops[0]->end(), step.leaves.begin());
        std::copy(ops[0]->begin(), ops[0]->end(), step.leaves.begin() + n);
        step.running_bytes = walk.buffer_bytes[step.leaves.back()];
      }
      return step;
    }
    case Opcode::kAfterAll:
      return Step{};
    case Opcode::kReal:
      if (!ops.empty() && !IsComplex(instruction.operand(0)->shape().element_type())) {
        return pass_operand();
      }
      return Fresh(shape, walk);
    case Opcode::kCustomCall:
      if (CustomCallPassesOperandThrough(instruction)) return pass_operand();
      return Fresh(shape, walk);

    case Opcode::kCall:
    case Opcode::kFusion: {
      const Computation* callee = instruction.opcode() == Opcode::kCall &&
                                          instruction.to_apply() != nullptr
                                      ? instruction.to_apply()
                                      : (instruction.calls().empty() ? nullptr
                                                                     : instruction.calls()[0]);
      if (callee == nullptr) return Fresh(shape, walk);
      PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*callee));
      return Step{CallResult(*s, all_operands(), shape, walk), s->peak_bytes, s->peak_path};
    }
    case Opcode::kAsyncStart: {
      // ((operands...), callee result, zero contexts...).
      if (instruction.calls().empty() || !shape.IsTuple() || shape.tuple_size() < 2) {
        return Fresh(shape, walk);
      }
      PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*instruction.calls()[0]));
      Step step;
      step.leaves = all_operands();
      const Leaves result = CallResult(*s, step.leaves, shape.tuple_shapes(1), walk);
      step.leaves.insert(step.leaves.end(), result.begin(), result.end());
      step.running_bytes = s->peak_bytes;
      step.inner_path = s->peak_path;
      for (int64_t i = 2; i < shape.tuple_size(); ++i) {
        const Step context = Fresh(shape.tuple_shapes(i), walk);
        step.leaves.insert(step.leaves.end(), context.leaves.begin(), context.leaves.end());
        step.running_bytes = SaturatingAdd(step.running_bytes, context.running_bytes);
      }
      return step;
    }
    case Opcode::kWhile: {
      if (instruction.condition() == nullptr || instruction.body() == nullptr || ops.empty()) {
        return Fresh(shape, walk);
      }
      PERFSIM_ASSIGN_OR_RETURN(const Summary* condition, Summarize(*instruction.condition()));
      PERFSIM_ASSIGN_OR_RETURN(const Summary* body, Summarize(*instruction.body()));
      const std::vector<int64_t> bytes = LeafBytes(shape);
      if (bytes.size() != ops[0]->size() || body->root_param_leaf.size() != bytes.size()) {
        return Fresh(shape, walk);
      }
      // Leaves the body hands back unchanged stay the operand's; every other leaf is a buffer
      // of the previous iteration, alive while the next one runs.
      Step step;
      int64_t carried_bytes = 0;
      for (size_t l = 0; l < bytes.size(); ++l) {
        if (body->root_param_leaf[l] == static_cast<int64_t>(l)) {
          step.leaves.push_back((*ops[0])[l]);
        } else {
          step.leaves.push_back(walk.NewBuffer(bytes[l]));
          carried_bytes = SaturatingAdd(carried_bytes, bytes[l]);
        }
      }
      const Summary* larger = body->peak_bytes >= condition->peak_bytes ? body : condition;
      step.running_bytes = SaturatingAdd(carried_bytes, larger->peak_bytes);
      step.inner_path = larger->peak_path;
      return step;
    }
    case Opcode::kConditional: {
      Step step = Fresh(shape, walk);
      int64_t largest = 0;
      for (const Computation* branch : instruction.branch_computations()) {
        PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*branch));
        if (s->peak_bytes > largest) {
          largest = s->peak_bytes;
          step.inner_path = s->peak_path;
        }
      }
      step.running_bytes = std::max(step.running_bytes, largest);
      return step;
    }

    case Opcode::kAllGatherStart: {
      // (operand(s), result(s)).
      if (!shape.IsTuple() || shape.tuple_size() != 2) return Fresh(shape, walk);
      Step step = Fresh(shape.tuple_shapes(1), walk);
      Leaves leaves = all_operands();
      if (static_cast<int64_t>(leaves.size()) != LeafCount(shape.tuple_shapes(0))) {
        return Fresh(shape, walk);
      }
      leaves.insert(leaves.end(), step.leaves.begin(), step.leaves.end());
      step.leaves = std::move(leaves);
      return step;
    }
    case Opcode::kCollectivePermuteStart: {
      // (operand, result, contexts...).
      Step step = Fresh(shape, walk);
      const int64_t n = ops.empty() ? -1 : static_cast<int64_t>(ops[0]->size());
      if (shape.IsTuple() && shape.tuple_size() >= 2 &&
          n == LeafCount(shape.tuple_shapes(0))) {
        for (int64_t l = 0; l < n; ++l) {
          step.running_bytes =
              std::max<int64_t>(0, step.running_bytes - walk.buffer_bytes[step.leaves[l]]);
          step.leaves[l] = (*ops[0])[l];
        }
      }
      return step;
    }

    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kMap:
    case Opcode::kScatter:
    case Opcode::kSort:
    case Opcode::kSelectAndScatter:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kScan:
      return fresh_with_calls(0);
    case Opcode::kReduceScatter: {
      // The fold of each operand, cut into blocks one operand at a time.
      int64_t fold_bytes = 0;
      for (const Instruction* operand : instruction.operands()) {
        fold_bytes = std::max(fold_bytes, operand->shape().ByteSize());
      }
      return fresh_with_calls(fold_bytes);
    }
    case Opcode::kAllToAll: {
      Step step = Fresh(shape, walk);
      if (attrs.dimensions.has_value() && !attrs.dimensions->empty() && !ops.empty()) {
        // The array form copies one received block at a time.
        int64_t group = num_devices_;
        if (attrs.replica_groups.has_value() && !attrs.replica_groups->groups.empty()) {
          group = static_cast<int64_t>(attrs.replica_groups->groups[0].size());
        }
        step.running_bytes =
            SaturatingAdd(step.running_bytes,
                          instruction.operand(0)->shape().ByteSize() / std::max<int64_t>(1, group));
      }
      return step;
    }

    // Everything else makes its whole result.
    case Opcode::kBatchNormGrad:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormTraining:
    case Opcode::kCholesky:
    case Opcode::kComplex:
    case Opcode::kFft:
    case Opcode::kScaledDot:
    case Opcode::kTriangularSolve:
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAllGather:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kBroadcast:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClamp:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCompare:
    case Opcode::kConcatenate:
    case Opcode::kConvert:
    case Opcode::kConvolution:
    case Opcode::kCos:
    case Opcode::kClz:
    case Opcode::kDivide:
    case Opcode::kDot:
    case Opcode::kDynamicReshape:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kGather:
    case Opcode::kGetDimensionSize:
    case Opcode::kImag:
    case Opcode::kInfeed:
    case Opcode::kIota:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kOutfeed:
    case Opcode::kPad:
    case Opcode::kPartitionId:
    case Opcode::kPopcnt:
    case Opcode::kPower:
    case Opcode::kRaggedAllToAll:
    case Opcode::kRaggedDot:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kReducePrecision:
    case Opcode::kRemainder:
    case Opcode::kReplicaId:
    case Opcode::kReshape:
    case Opcode::kReverse:
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSelect:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSlice:
    case Opcode::kSqrt:
    case Opcode::kStochasticConvert:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kTopK:
    case Opcode::kTranspose:
    case Opcode::kXor:
      return Fresh(shape, walk);
  }
  return absl::InternalError("unknown opcode");
}

}  // namespace

absl::StatusOr<DeviceMemoryPlan> PlanDeviceMemory(
    const Module& module, const absl::flat_hash_map<const Computation*, ComputationPlan>& plans,
    int64_t num_devices) {
  const Computation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("module: expected an ENTRY computation");
  Planner planner(plans, num_devices);
  PERFSIM_ASSIGN_OR_RETURN(const Summary* summary, planner.Summarize(*entry));
  DeviceMemoryPlan plan;
  plan.constant_bytes = planner.constant_bytes();
  plan.peak_bytes = SaturatingAdd(plan.constant_bytes, summary->peak_bytes);
  std::vector<std::string> names;
  for (const Instruction* i : summary->peak_path) names.push_back(i->name());
  plan.peak_at = absl::StrJoin(names, " > ");
  plan.constants = planner.TakeConstants();
  return plan;
}

}  // namespace interp
}  // namespace perfsim
