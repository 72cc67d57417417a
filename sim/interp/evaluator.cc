// The per-device evaluator: dependency-ordered walk, the one exhaustive switch over Opcode,
// and the control-flow and pass-through ops that need no data loops.
#include "sim/interp/evaluator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/collectives.h"
#include "sim/interp/compute_plan.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator_linalg.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

absl::StatusOr<ComputationPlan> BuildPlan(const Computation& computation) {
  ComputationPlan plan;
  if (computation.root() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(computation.name(), ": expected a root instruction; got none"));
  }
  // Iterative post-order DFS from the root over operands and control predecessors, so only
  // what the root depends on runs (dead code is skipped, as XLA would remove it).
  // slot[i] >= 0: i's place in plan.order; kOnStack: i is being visited (a cycle if met again).
  constexpr int32_t kOnStack = -1;
  absl::flat_hash_map<const Instruction*, int32_t> slot;
  slot.reserve(computation.instructions().size());
  struct Frame {
    const Instruction* instruction;
    size_t next;
  };
  std::vector<Frame> stack = {{computation.root(), 0}};
  slot[computation.root()] = kOnStack;
  while (!stack.empty()) {
    Frame& top = stack.back();
    const Instruction* inst = top.instruction;
    const size_t n_operands = inst->operands().size();
    const size_t n_edges = n_operands + inst->control_predecessors().size();
    if (top.next == n_edges) {
      slot[inst] = static_cast<int32_t>(plan.order.size());
      plan.order.push_back(inst);
      stack.pop_back();
      continue;
    }
    const Instruction* next = top.next < n_operands
                                  ? inst->operands()[top.next]
                                  : inst->control_predecessors()[top.next - n_operands];
    ++top.next;
    auto [it, inserted] = slot.try_emplace(next, kOnStack);
    if (!inserted) {
      if (it->second != kOnStack) continue;  // done already
      return absl::FailedPreconditionError(absl::StrCat(
          next->name(), ": expected an acyclic computation; got a cycle in ", computation.name()));
    }
    stack.push_back({next, 0});
  }
  const int32_t n = static_cast<int32_t>(plan.order.size());
  plan.operand_slots.resize(n);
  std::vector<int32_t> last_use(n, -1);
  for (int32_t i = 0; i < n; ++i) {
    plan.operand_slots[i].reserve(plan.order[i]->operands().size());
    for (const Instruction* operand : plan.order[i]->operands()) {
      const int32_t s = slot.at(operand);
      plan.operand_slots[i].push_back(s);
      last_use[s] = i;
    }
  }
  plan.root_slot = slot.at(computation.root());
  plan.operand_dies.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    const std::vector<int32_t>& slots = plan.operand_slots[i];
    plan.operand_dies[i].reserve(slots.size());
    for (size_t k = 0; k < slots.size(); ++k) {
      const bool last = last_use[slots[k]] == i && slots[k] != plan.root_slot;
      const bool unique = std::count(slots.begin(), slots.end(), slots[k]) == 1;
      plan.operand_dies[i].push_back(last && unique ? 1 : 0);
    }
  }
  plan.flops.resize(n);
  for (int32_t i = 0; i < n; ++i) plan.flops[i] = ContractionFlops(*plan.order[i]);
  plan.release_after.resize(n);
  for (int32_t s = 0; s < n; ++s) {
    if (s != plan.root_slot && last_use[s] >= 0) plan.release_after[last_use[s]].push_back(s);
  }
  return plan;
}

// Element `index` of a tuple value, checked.
absl::StatusOr<Value> TupleElement(const Value& value, int64_t index) {
  if (!value.is_tuple() || index < 0 || index >= static_cast<int64_t>(value.elements().size())) {
    return absl::InvalidArgumentError(absl::StrCat("expected a tuple with an element ", index,
                                                   "; got ", value.shape().ToString()));
  }
  return value.element(index);
}

// A value of `shape` filled with zeros (the context elements of async start tuples).
absl::StatusOr<Value> ZeroValue(DeviceEvaluator& ev, const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Value> elements;
    for (const Shape& s : shape.tuple_shapes()) {
      PERFSIM_ASSIGN_OR_RETURN(Value v, ZeroValue(ev, s));
      elements.push_back(std::move(v));
    }
    return Value::Tuple(std::move(elements));
  }
  if (shape.IsToken()) return Value::Token();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer, ev.Allocate(shape));
  return Value::Array(std::move(buffer));
}

// async-start's value: ((operands...), result, context...), shaped as the instruction says.
absl::StatusOr<Value> MakeAsyncStartValue(DeviceEvaluator& ev, const Instruction& instruction,
                                          OperandValues operands, Value result) {
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected an async start shape (operands, result, context...); got ", shape.ToString()));
  }
  std::vector<Value> operand_values;
  for (const Value* v : operands) operand_values.push_back(*v);
  std::vector<Value> elements;
  elements.push_back(Value::Tuple(std::move(operand_values)));
  elements.push_back(std::move(result));
  for (int64_t i = 2; i < shape.tuple_size(); ++i) {
    PERFSIM_ASSIGN_OR_RETURN(Value context, ZeroValue(ev, shape.tuple_shapes(i)));
    elements.push_back(std::move(context));
  }
  return Value::Tuple(std::move(elements));
}

absl::Status CheckResultShape(const Instruction& instruction, const Value& value) {
  if (!value.is_array() || !instruction.shape().IsArray()) return absl::OkStatus();
  const Shape& got = value.array_shape();
  const Shape& want = instruction.shape();
  if (got.element_type() == want.element_type() && got.dimensions() == want.dimensions()) {
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("interpreter produced ", got.ToString(false),
                                          " for declared shape ", want.ToString(false)));
}

absl::Status Unsupported(const Instruction& instruction, absl::string_view why) {
  return absl::UnimplementedError(absl::StrCat("the interpreter does not run ",
                                               OpcodeSpelling(instruction.opcode()), ": ", why));
}

}  // namespace

absl::Status BuildPlans(const Module& module, RunContext* run) {
  for (const auto& computation : module.computations()) {
    // Computations without a root are reported if something calls them.
    if (computation->root() == nullptr) continue;
    PERFSIM_ASSIGN_OR_RETURN(ComputationPlan plan, BuildPlan(*computation));
    run->plans.emplace(computation.get(), std::move(plan));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> MakeScalar(DeviceEvaluator& ev, PrimitiveType type, double value) {
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer, ev.Allocate(Shape::Scalar(type)));
  buffer->SetFromDouble(0, value);
  return Value::Array(std::move(buffer));
}

int64_t ScalarAsInt64(const Value& value) { return value.array().GetAsInt64(0); }

absl::StatusOr<std::shared_ptr<Literal>> DeviceEvaluator::AllocatePoisoned(const Shape& shape) {
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer, Allocate(shape));
  uint8_t* data = buffer->mutable_data().data();
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "poison", [&](auto traits) {
    using T = decltype(traits);
    typename T::Compute poison;
    if constexpr (kIsFloat<T>) {
      poison = std::numeric_limits<typename T::Compute>::quiet_NaN();
    } else if constexpr (kIsComplex<T>) {
      const auto nan = std::numeric_limits<typename T::Component>::quiet_NaN();
      poison = typename T::Compute(nan, nan);
    } else if constexpr (kIsPred<T>) {
      poison = true;
    } else {
      poison = T::Round(static_cast<typename T::Compute>(kPoisonInteger));
    }
    for (int64_t i = 0; i < n; ++i) T::Store(data, i, poison);
    return absl::OkStatus();
  }));
  return buffer;
}

absl::Status DeviceEvaluator::MaterializeConstants() {
  for (const Instruction* constant : run_.constants) {
    const auto& literal = constant->attributes().literal;
    if (!literal.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(constant->name(), ": expected a literal; got none"));
    }
    absl::StatusOr<Value> value = ValueFromLiteral(*run_.buffers, *literal);
    if (!value.ok()) return Annotate(value.status(), constant->name());
    constants_.emplace(constant, *std::move(value));
  }
  return absl::OkStatus();
}

uint64_t DeviceEvaluator::NextRandom() {
  // SplitMix64 over (seed, device, counter): a fixed, platform-independent stream.
  uint64_t z = options().seed * 0x9e3779b97f4a7c15ull +
               static_cast<uint64_t>(device_) * 0xbf58476d1ce4e5b9ull +
               (++rng_counter_) * 0x94d049bb133111ebull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

absl::StatusOr<Value> DeviceEvaluator::Evaluate(const Computation& computation,
                                                absl::Span<const Value> args) {
  return EvaluatePlan(computation, args, nullptr);
}

absl::StatusOr<Value> DeviceEvaluator::Evaluate(const Computation& computation,
                                                std::vector<Value>&& args) {
  return EvaluatePlan(computation, args, &args);
}

std::shared_ptr<Literal> DeviceEvaluator::TakeOperandBuffer(int64_t k, const Shape& shape) {
  if (current_dies_ == nullptr || !current_dies_[k]) return nullptr;
  const Value& value = *current_operands_[k];
  // use_count 1: this slot is the only holder, and only this device's thread can reach it.
  if (!value.is_array() || value.array_ptr().use_count() != 1) return nullptr;
  const Shape& have = value.array_shape();
  if (have.element_type() != shape.element_type() || have.dimensions() != shape.dimensions()) {
    return nullptr;
  }
  // Every buffer is made as a mutable Literal (BufferCounter); Value only shares it as const.
  return std::const_pointer_cast<Literal>(value.array_ptr());
}

bool DeviceEvaluator::OperandDies(int64_t k) const {
  return current_dies_ != nullptr && current_dies_[k] != 0;
}

Value DeviceEvaluator::TakeOrCopyOperand(int64_t k) {
  if (OperandDies(k)) return std::move(*current_operands_[k]);
  return *current_operands_[k];
}

absl::StatusOr<Value> DeviceEvaluator::EvaluatePlan(const Computation& computation,
                                                    absl::Span<const Value> args,
                                                    std::vector<Value>* owned) {
  // The caller's instruction context, back in place when this evaluation returns.
  struct RestoreContext {
    DeviceEvaluator* ev;
    Value* const* operands;
    const uint8_t* dies;
    ~RestoreContext() {
      ev->current_operands_ = operands;
      ev->current_dies_ = dies;
    }
  } restore{this, current_operands_, current_dies_};
  auto it = run_.plans.find(&computation);
  if (it == run_.plans.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(computation.name(), ": expected a root instruction; got none"));
  }
  const ComputationPlan& plan = it->second;
  std::vector<Value> values(plan.order.size());
  std::vector<const Value*> operand_ptrs;
  std::vector<Value*> operand_slots;
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const Instruction& instruction = *plan.order[i];
    if (plan.flops[i] > 0) {
      // Each device gets an equal share of the run's budget, so whether a run stops does not
      // depend on how the devices' threads interleave. Only runs whose need the static count
      // could not see (unknown trip counts, data-dependent branches) get here.
      flops_ += plan.flops[i];
      const double share = options().max_flops / static_cast<double>(options().num_devices);
      if (flops_ > share) {
        return Annotate(absl::ResourceExhaustedError(absl::StrCat(
                            "compute budget: expected the matrix ops of device ", device_,
                            " to stay within its share of the interpreter's limit (",
                            options().max_flops, " FLOP / ", options().num_devices, " devices = ",
                            share, " FLOP); got ", flops_, " with this instruction's ",
                            plan.flops[i], " (raise it with --max-flops to run this module)")),
                        instruction.name());
      }
    }
    operand_ptrs.clear();
    operand_slots.clear();
    for (int32_t s : plan.operand_slots[i]) {
      operand_ptrs.push_back(&values[s]);
      operand_slots.push_back(&values[s]);
    }
    current_operands_ = operand_slots.data();
    current_dies_ = plan.operand_dies[i].data();
    absl::StatusOr<Value> result = EvaluateInstruction(instruction, operand_ptrs, args, owned);
    if (result.ok()) {
      absl::Status shape_check = CheckResultShape(instruction, *result);
      if (!shape_check.ok()) result = shape_check;
    }
    if (!result.ok()) return Annotate(result.status(), instruction.name());
    if (options().observer && result->is_array()) {
      options().observer(device_, instruction, result->array());
    }
    values[i] = *std::move(result);
    for (int32_t s : plan.release_after[i]) values[s] = Value();
  }
  return std::move(values[plan.root_slot]);
}

absl::StatusOr<Value> DeviceEvaluator::EvaluateInstruction(const Instruction& instruction,
                                                           OperandValues operands,
                                                           absl::Span<const Value> args,
                                                           std::vector<Value>* owned) {
  const InstructionAttributes& attrs = instruction.attributes();
  switch (instruction.opcode()) {
    // Elementwise.
    case Opcode::kAbs:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClz:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kPopcnt:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh:
      return EvalUnary(*this, instruction, operands);
    case Opcode::kReal:
    case Opcode::kImag:
      return EvalRealImag(*this, instruction, operands);
    case Opcode::kIsFinite:
      return EvalIsFinite(*this, instruction, operands);
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kDivide:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kOr:
    case Opcode::kPower:
    case Opcode::kRemainder:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSubtract:
    case Opcode::kXor:
      return EvalBinary(*this, instruction, operands);
    case Opcode::kCompare:
      return EvalCompare(*this, instruction, operands);
    case Opcode::kSelect:
      return EvalSelect(*this, instruction, operands);
    case Opcode::kClamp:
      return EvalClamp(*this, instruction, operands);
    case Opcode::kConvert:
      return EvalConvert(*this, instruction, operands);
    case Opcode::kBitcastConvert:
      return EvalBitcastConvert(*this, instruction, operands);
    case Opcode::kReducePrecision:
      return EvalReducePrecision(*this, instruction, operands);
    case Opcode::kIota:
      return EvalIota(*this, instruction, operands);
    case Opcode::kMap:
      return EvalMap(*this, instruction, operands);
    case Opcode::kRng:
      return EvalRng(*this, instruction, operands);
    case Opcode::kStochasticConvert:
      return EvalStochasticConvert(*this, instruction, operands);

    // Data movement.
    case Opcode::kBroadcast:
      return EvalBroadcast(*this, instruction, operands);
    case Opcode::kReshape:
      return EvalReshape(*this, instruction, operands);
    case Opcode::kBitcast:
      return EvalBitcast(*this, instruction, operands);
    case Opcode::kTranspose:
      return EvalTranspose(*this, instruction, operands);
    case Opcode::kSlice:
      return EvalSlice(*this, instruction, operands);
    case Opcode::kDynamicSlice:
      return EvalDynamicSlice(*this, instruction, operands);
    case Opcode::kDynamicUpdateSlice:
      return EvalDynamicUpdateSlice(*this, instruction, operands);
    case Opcode::kConcatenate:
      return EvalConcatenate(*this, instruction, operands);
    case Opcode::kPad:
      return EvalPad(*this, instruction, operands);
    case Opcode::kReverse:
      return EvalReverse(*this, instruction, operands);
    case Opcode::kGather:
      return EvalGather(*this, instruction, operands);
    case Opcode::kScatter:
      return EvalScatter(*this, instruction, operands);
    case Opcode::kSort:
      return EvalSort(*this, instruction, operands);
    case Opcode::kTopK:
      return EvalTopK(*this, instruction, operands);

    // Reductions and contractions.
    case Opcode::kReduce:
      return EvalReduce(*this, instruction, operands);
    case Opcode::kReduceWindow:
      return EvalReduceWindow(*this, instruction, operands);
    case Opcode::kSelectAndScatter:
      return EvalSelectAndScatter(*this, instruction, operands);
    case Opcode::kDot:
      return EvalDot(*this, instruction, operands);
    case Opcode::kRaggedDot:
      return EvalRaggedDot(*this, instruction, operands);
    case Opcode::kConvolution:
      return EvalConvolution(*this, instruction, operands);

    // Linear algebra, signal processing and scan (evaluator_linalg.h).
    case Opcode::kComplex:
      return EvalComplex(*this, instruction, operands);
    case Opcode::kTriangularSolve:
      return EvalTriangularSolve(*this, instruction, operands);
    case Opcode::kCholesky:
      return EvalCholesky(*this, instruction, operands);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return EvalBatchNorm(*this, instruction, operands);
    case Opcode::kScaledDot:
      return EvalScaledDot(*this, instruction, operands);
    case Opcode::kFft:
      return EvalFft(*this, instruction, operands);
    case Opcode::kScan:
      return EvalScan(*this, instruction, operands);

    // Collectives.
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllToAll:
    case Opcode::kRaggedAllToAll:
    case Opcode::kReduceScatter:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
      return EvalCollective(*this, instruction, operands);
    case Opcode::kAllReduceDone:
      return *operands[0];
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncDone:
      return TupleElement(*operands[0], 1);
    case Opcode::kReplicaId:
      return EvalReplicaId(*this, instruction, operands);
    case Opcode::kPartitionId:
      return EvalPartitionId(*this, instruction, operands);

    // Control flow and structure.
    case Opcode::kParameter: {
      const int64_t number = attrs.parameter_number.value_or(-1);
      if (number < 0 || number >= static_cast<int64_t>(args.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected parameter number in [0, ", args.size(), "); got ", number));
      }
      if (owned != nullptr) return std::move((*owned)[number]);
      return args[number];
    }
    case Opcode::kConstant: {
      if (!attrs.literal.has_value()) {
        return absl::InvalidArgumentError("expected a literal; got none");
      }
      auto cached = constants_.find(&instruction);
      if (cached != constants_.end()) return cached->second;
      // Not among run().constants (a module evaluated without MaterializeConstants).
      PERFSIM_ASSIGN_OR_RETURN(Value value, ValueFromLiteral(*run_.buffers, *attrs.literal));
      constants_.emplace(&instruction, value);
      return value;
    }
    case Opcode::kTuple: {
      std::vector<Value> elements;
      elements.reserve(operands.size());
      for (const Value* v : operands) elements.push_back(*v);
      return Value::Tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement:
      return TupleElement(*operands[0], attrs.tuple_index.value_or(-1));
    case Opcode::kCall: {
      const Computation* callee =
          instruction.to_apply() != nullptr
              ? instruction.to_apply()
              : (instruction.calls().empty() ? nullptr : instruction.calls()[0]);
      if (callee == nullptr) return absl::InvalidArgumentError("expected to_apply; got none");
      std::vector<Value> call_args;
      for (size_t k = 0; k < operands.size(); ++k) call_args.push_back(TakeOrCopyOperand(k));
      return Evaluate(*callee, std::move(call_args));
    }
    case Opcode::kFusion: {
      if (instruction.calls().empty())
        return absl::InvalidArgumentError("expected calls=; got none");
      // Operands that die here are handed over, so that the fused computation may update them
      // in place (a dynamic-update-slice fusion writes its slice, not a copy of the array).
      std::vector<Value> call_args;
      for (size_t k = 0; k < operands.size(); ++k) call_args.push_back(TakeOrCopyOperand(k));
      return Evaluate(*instruction.calls()[0], std::move(call_args));
    }
    case Opcode::kAsyncStart: {
      if (instruction.calls().empty())
        return absl::InvalidArgumentError("expected calls=; got none");
      std::vector<Value> call_args;
      for (const Value* v : operands) call_args.push_back(*v);
      PERFSIM_ASSIGN_OR_RETURN(Value result, Evaluate(*instruction.calls()[0], call_args));
      return MakeAsyncStartValue(*this, instruction, operands, std::move(result));
    }
    case Opcode::kAsyncUpdate:
      return *operands[0];
    case Opcode::kWhile: {
      if (instruction.condition() == nullptr || instruction.body() == nullptr) {
        return absl::InvalidArgumentError("expected condition= and body=; got none");
      }
      // The loop state is handed to each iteration's body, so that the body may update a
      // carried buffer in place (a KV cache written one slice per step).
      Value state = TakeOrCopyOperand(0);
      for (int64_t iteration = 0;; ++iteration) {
        bool keep_going = false;
        {
          // The condition's value is dropped before the body runs (memory_plan.h counts so).
          PERFSIM_ASSIGN_OR_RETURN(
              Value go, Evaluate(*instruction.condition(), absl::Span<const Value>(&state, 1)));
          if (!go.is_array() || go.array().element_count() != 1) {
            return absl::InvalidArgumentError("expected the condition to return pred[]");
          }
          keep_going = go.array().GetAsInt64(0) != 0;
        }
        if (!keep_going) break;
        // One budget for every loop of the device, nested ones included: a per-loop cap
        // would let two nested loops run its square.
        if (++loop_iterations_ > options().max_loop_iterations) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "expected the device's while loops to end within --max-loop-iterations ",
              options().max_loop_iterations, " iterations in all; got more (this loop at ",
              "iteration ", iteration + 1, " had not ended)"));
        }
        std::vector<Value> body_args;
        body_args.push_back(std::move(state));
        PERFSIM_ASSIGN_OR_RETURN(state, Evaluate(*instruction.body(), std::move(body_args)));
      }
      return state;
    }
    case Opcode::kConditional: {
      const std::vector<Computation*>& branches = instruction.branch_computations();
      if (branches.empty()) return absl::InvalidArgumentError("expected branch computations");
      const Value& selector = *operands[0];
      if (!selector.is_array())
        return absl::InvalidArgumentError("expected a pred or s32 selector");
      int64_t index;
      if (selector.array_shape().element_type() == PrimitiveType::kPred) {
        // true_computation is branch 0, false_computation branch 1.
        index = selector.array().GetAsInt64(0) != 0 ? 0 : 1;
      } else {
        index = selector.array().GetAsInt64(0);
        // XLA runs the last branch for an out-of-range index.
        if (index < 0 || index >= static_cast<int64_t>(branches.size())) {
          index = static_cast<int64_t>(branches.size()) - 1;
        }
      }
      if (index + 1 >= static_cast<int64_t>(operands.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected an operand for branch ", index, "; got ", operands.size() - 1));
      }
      std::vector<Value> branch_args;
      branch_args.push_back(TakeOrCopyOperand(index + 1));
      return Evaluate(*branches[index], std::move(branch_args));
    }
    case Opcode::kCustomCall:
      return EvalCustomCall(*this, instruction, operands);

    // Pass-through.
    case Opcode::kCopy:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
    case Opcode::kSetDimensionSize:
      return *operands[0];
    case Opcode::kCopyStart: {
      PERFSIM_ASSIGN_OR_RETURN(Value context, MakeScalar(*this, PrimitiveType::kU32, 0));
      return Value::Tuple({*operands[0], *operands[0], context});
    }
    case Opcode::kCopyDone:
      return TupleElement(*operands[0], 0);
    case Opcode::kAfterAll:
      return Value::Token();
    case Opcode::kGetDimensionSize: {
      const Shape& shape = operands[0]->array_shape();
      const int64_t dim =
          attrs.dimensions.has_value() && !attrs.dimensions->empty() ? (*attrs.dimensions)[0] : -1;
      if (dim < 0 || dim >= shape.rank()) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected a dimension of ", shape.ToString(false), "; got ", dim));
      }
      return MakeScalar(*this, PrimitiveType::kS32, static_cast<double>(shape.dimensions(dim)));
    }
    case Opcode::kDynamicReshape:
      return Unsupported(instruction, "dynamic shapes are not modelled");

    // No meaning in a CPU reference run.
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return Unsupported(instruction, "host and peer transfers happen outside the module");
    case Opcode::kRngGetAndUpdateState:
      return Unsupported(instruction, "it reads the state of a backend's hardware generator");
    case Opcode::kRngBitGenerator:
      return Unsupported(instruction,
                         "its bits are specific to XLA's Philox/ThreeFry implementations");
  }
  return absl::InternalError("unknown opcode");
}

}  // namespace interp
}  // namespace perfsim
