// The static count of compute_plan.h: one pass over each computation's evaluation order
// (only what its root depends on, as the evaluator runs it), callees summarised once.
#include "sim/interp/compute_plan.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/cost/op_counts.h"
#include "sim/interp/evaluator.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/ir/opcode.h"
#include "sim/ir/verifier.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

using interp::ComputationPlan;

// The integer value of a scalar integer constant.
std::optional<int64_t> IntegerConstant(const Instruction* instruction) {
  if (instruction == nullptr || instruction->opcode() != Opcode::kConstant) return std::nullopt;
  const std::optional<Literal>& literal = instruction->attributes().literal;
  if (!literal.has_value() || literal->elided() || !literal->shape().IsScalar())
    return std::nullopt;
  const PrimitiveType type = literal->shape().element_type();
  if (!IsSignedInteger(type) && !IsUnsignedInteger(type)) return std::nullopt;
  return literal->GetAsInt64(0);
}

// The tuple index k when `instruction` is get-tuple-element(parameter(0)), index=k.
std::optional<int64_t> LoopStateIndex(const Instruction* instruction) {
  if (instruction == nullptr || instruction->opcode() != Opcode::kGetTupleElement ||
      instruction->operand_count() != 1 ||
      instruction->operand(0)->opcode() != Opcode::kParameter) {
    return std::nullopt;
  }
  return instruction->attributes().tuple_index;
}

ComparisonDirection Mirrored(ComparisonDirection direction) {
  switch (direction) {
    case ComparisonDirection::kLt:
      return ComparisonDirection::kGt;
    case ComparisonDirection::kLe:
      return ComparisonDirection::kGe;
    case ComparisonDirection::kGt:
      return ComparisonDirection::kLt;
    case ComparisonDirection::kGe:
      return ComparisonDirection::kLe;
    case ComparisonDirection::kEq:
    case ComparisonDirection::kNe:
      break;
  }
  return direction;
}

// Iterations of `for (i = start; i <direction> bound; i += step)`; nullopt when it never ends
// or its count is not simple.
std::optional<int64_t> CountedTrips(int64_t start, int64_t step, ComparisonDirection direction,
                                    int64_t bound) {
  // In __int128: start, bound and step are any int64s.
  const __int128 distance = static_cast<__int128>(bound) - start;
  __int128 trips = 0;
  switch (direction) {
    case ComparisonDirection::kLt:  // i < bound
      if (distance <= 0) return 0;
      if (step <= 0) return std::nullopt;
      trips = (distance + step - 1) / step;
      break;
    case ComparisonDirection::kLe:
      if (distance < 0) return 0;
      if (step <= 0) return std::nullopt;
      trips = distance / step + 1;
      break;
    case ComparisonDirection::kGt:  // i > bound
      if (distance >= 0) return 0;
      if (step >= 0) return std::nullopt;
      trips = (-distance + (-static_cast<__int128>(step)) - 1) / -static_cast<__int128>(step);
      break;
    case ComparisonDirection::kGe:
      if (distance > 0) return 0;
      if (step >= 0) return std::nullopt;
      trips = -distance / -static_cast<__int128>(step) + 1;
      break;
    case ComparisonDirection::kNe:
      if (distance == 0) return 0;
      if (step == 0 || distance % step != 0 || (distance > 0) != (step > 0)) return std::nullopt;
      trips = distance / step;
      break;
    case ComparisonDirection::kEq:
      return std::nullopt;
  }
  if (trips > kInt64Max) return std::nullopt;
  return static_cast<int64_t>(trips);
}

// The counted loop: condition `compare(gte(p, k), constant)` (either order), body root a tuple
// whose element k is `add(gte(p, k), constant)` (either order) or `subtract(gte(p, k),
// constant)`, and the loop's operand a tuple whose element k is a constant. Overflow of the
// counter (which the interpreter would wrap) is not modelled: such a loop is not recognised
// unless its count fits before the wrap, since the count is computed exactly.
std::optional<int64_t> CountedLoopTrips(const Instruction& loop) {
  const Computation* condition = loop.condition();
  const Computation* body = loop.body();
  if (condition == nullptr || body == nullptr || loop.operand_count() != 1) return std::nullopt;
  const Instruction* compare = condition->root();
  if (compare == nullptr || compare->opcode() != Opcode::kCompare ||
      compare->operand_count() != 2 || !compare->attributes().comparison_direction.has_value()) {
    return std::nullopt;
  }
  ComparisonDirection direction = *compare->attributes().comparison_direction;
  std::optional<int64_t> index = LoopStateIndex(compare->operand(0));
  std::optional<int64_t> bound = IntegerConstant(compare->operand(1));
  if (!index.has_value()) {
    index = LoopStateIndex(compare->operand(1));
    bound = IntegerConstant(compare->operand(0));
    direction = Mirrored(direction);
  }
  if (!index.has_value() || !bound.has_value()) return std::nullopt;
  const PrimitiveType counter_type = compare->operand(0)->shape().element_type();
  if (!IsSignedInteger(counter_type)) return std::nullopt;  // unsigned compares differ

  const Instruction* root = body->root();
  if (root == nullptr || root->opcode() != Opcode::kTuple || *index < 0 ||
      *index >= root->operand_count()) {
    return std::nullopt;
  }
  const Instruction* next = root->operand(*index);
  if (next->operand_count() != 2) return std::nullopt;
  std::optional<int64_t> step;
  if (next->opcode() == Opcode::kAdd) {
    if (LoopStateIndex(next->operand(0)) == index) step = IntegerConstant(next->operand(1));
    if (LoopStateIndex(next->operand(1)) == index) step = IntegerConstant(next->operand(0));
  } else if (next->opcode() == Opcode::kSubtract && LoopStateIndex(next->operand(0)) == index) {
    const std::optional<int64_t> minus = IntegerConstant(next->operand(1));
    if (minus.has_value() && *minus != std::numeric_limits<int64_t>::min()) step = -*minus;
  }
  if (!step.has_value()) return std::nullopt;

  const Instruction* init = loop.operand(0);
  if (init->opcode() != Opcode::kTuple || *index >= init->operand_count()) return std::nullopt;
  const std::optional<int64_t> start = IntegerConstant(init->operand(*index));
  if (!start.has_value()) return std::nullopt;
  return CountedTrips(*start, *step, direction, *bound);
}

// What one computation needs, independent of its call site.
struct Summary {
  double flops = 0;
  double largest_flops = 0;
  std::vector<const Instruction*> largest_path;
  bool lower_bound = false;
};

class Counter {
 public:
  explicit Counter(const absl::flat_hash_map<const Computation*, ComputationPlan>& plans)
      : plans_(plans) {}

  absl::StatusOr<const Summary*> Summarize(const Computation& computation) {
    auto cached = summaries_.find(&computation);
    if (cached != summaries_.end()) return &cached->second;
    auto plan = plans_.find(&computation);
    if (plan == plans_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(computation.name(), ": expected a root instruction; got none"));
    }
    Summary summary;
    for (const Instruction* instruction : plan->second.order) {
      PERFSIM_ASSIGN_OR_RETURN(Summary step, Count(*instruction));
      summary.flops += step.flops;
      summary.lower_bound = summary.lower_bound || step.lower_bound;
      if (step.largest_flops > summary.largest_flops) {
        summary.largest_flops = step.largest_flops;
        summary.largest_path = std::move(step.largest_path);
      }
    }
    return &summaries_.emplace(&computation, std::move(summary)).first->second;
  }

 private:
  // `callee` run `times` times inside `instruction`.
  absl::Status AddCallee(const Instruction& instruction, const Computation* callee, double times,
                         Summary* out) {
    if (callee == nullptr) return absl::OkStatus();
    PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*callee));
    out->flops += s->flops * times;
    out->lower_bound = out->lower_bound || s->lower_bound;
    if (s->largest_flops * times > out->largest_flops) {
      out->largest_flops = s->largest_flops * times;
      out->largest_path = {&instruction};
      out->largest_path.insert(out->largest_path.end(), s->largest_path.begin(),
                               s->largest_path.end());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Summary> Count(const Instruction& instruction) {
    Summary step;
    const Opcode op = instruction.opcode();
    if (op == Opcode::kWhile) {
      const std::optional<int64_t> trips = StaticTripCount(instruction);
      const double body_times = trips.has_value() ? static_cast<double>(*trips) : 1.0;
      step.lower_bound = !trips.has_value();
      PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, instruction.body(), body_times, &step));
      PERFSIM_RETURN_IF_ERROR(
          AddCallee(instruction, instruction.condition(), body_times + 1, &step));
      return step;
    }
    if (op == Opcode::kCall || op == Opcode::kFusion || op == Opcode::kAsyncStart) {
      const Computation* callee =
          instruction.to_apply() != nullptr
              ? instruction.to_apply()
              : (instruction.calls().empty() ? nullptr : instruction.calls()[0]);
      PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, callee, 1, &step));
      return step;
    }
    if (op == Opcode::kConditional) {
      // The branch taken depends on data: the cheapest one keeps the count a lower bound.
      std::optional<Summary> cheapest;
      for (const Computation* branch : instruction.branch_computations()) {
        Summary one;
        PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, branch, 1, &one));
        if (!cheapest.has_value() || one.flops < cheapest->flops) cheapest = std::move(one);
      }
      if (!cheapest.has_value()) return step;
      cheapest->lower_bound = cheapest->lower_bound || instruction.branch_computations().size() > 1;
      return *std::move(cheapest);
    }
    // Computations applied per element (reduce, sort, scatter, map, ...) are scalar code.
    step.flops = ContractionFlops(instruction);
    step.largest_flops = step.flops;
    if (step.flops > 0) step.largest_path = {&instruction};
    return step;
  }

  const absl::flat_hash_map<const Computation*, ComputationPlan>& plans_;
  absl::flat_hash_map<const Computation*, Summary> summaries_;
};

// A FLOP count as printed: 1.1e+13, 123456.
std::string FlopText(double flops) { return absl::StrCat(flops); }

}  // namespace

double ContractionFlops(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  const bool matrix_op = op == Opcode::kDot || op == Opcode::kRaggedDot ||
                         op == Opcode::kConvolution || op == Opcode::kScaledDot ||
                         op == Opcode::kTriangularSolve || op == Opcode::kCholesky ||
                         op == Opcode::kFft ||
                         (op == Opcode::kCustomCall &&
                          (instruction.attributes().custom_call_target == kGmmTarget ||
                           instruction.attributes().custom_call_target == kTgmmTarget ||
                           instruction.attributes().custom_call_target == kFusedFfnTarget));
  return matrix_op ? CountInstruction(instruction, CountOptions{}).flops : 0.0;
}

std::optional<int64_t> StaticTripCount(const Instruction& while_instruction) {
  if (std::optional<int64_t> known = KnownTripCount(while_instruction)) return known;
  return CountedLoopTrips(while_instruction);
}

absl::StatusOr<ComputeNeed> ComputeComputeNeed(const Module& module, int64_t num_devices) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError("module: expected an ENTRY computation");
  }
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  interp::RunContext run;
  PERFSIM_RETURN_IF_ERROR(interp::BuildPlans(module, &run));
  Counter counter(run.plans);
  PERFSIM_ASSIGN_OR_RETURN(const Summary* entry, counter.Summarize(*module.entry()));
  ComputeNeed need;
  need.num_devices = num_devices;
  need.device_flops = entry->flops;
  need.total_flops = entry->flops * static_cast<double>(num_devices);
  need.largest_flops = entry->largest_flops;
  std::vector<std::string> names;
  for (const Instruction* i : entry->largest_path) names.push_back(i->name());
  need.largest_at = absl::StrJoin(names, " > ");
  need.lower_bound = entry->lower_bound;
  return need;
}

absl::Status CheckComputeBudget(const ComputeNeed& need, double max_flops) {
  if (need.total_flops <= max_flops) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "compute budget: the run needs ", need.lower_bound ? "at least " : "",
      FlopText(need.total_flops), " FLOP in matrix ops (", need.num_devices,
      need.num_devices == 1 ? " device x " : " devices x ", FlopText(need.device_flops),
      ", most at ", need.largest_at, ": ", FlopText(need.largest_flops),
      "); the interpreter's limit is ", FlopText(max_flops),
      " FLOP: expected a need within the limit (raise it with --max-flops to run this module)"));
}

}  // namespace perfsim
