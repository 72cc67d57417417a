// Static trip counts of while loops (trip_count.h). The counted-loop recogniser moved here from
// sim/interp/compute_plan.cc so that the cost model and the interpreter use one function.
#include "sim/cost/trip_count.h"

#include <limits>
#include <optional>

#include "sim/ir/backend_config.h"
#include "sim/ir/opcode.h"
#include "sim/util/checked_math.h"

namespace perfsim {
namespace {

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

// The compare a condition ends in: its root, or the root of a fusion that wraps one compare of
// two of its parameters (XLA:CPU's "wrapped_compare"), as the compare of the fusion's operands.
struct LoopTest {
  const Instruction* lhs = nullptr;
  const Instruction* rhs = nullptr;
  ComparisonDirection direction = ComparisonDirection::kLt;
};

std::optional<LoopTest> LoopTestOf(const Instruction* root) {
  if (root == nullptr) return std::nullopt;
  const Instruction* compare = root;
  if (root->opcode() == Opcode::kFusion) {
    if (root->calls().empty() || root->calls()[0] == nullptr) return std::nullopt;
    compare = root->calls()[0]->root();
  }
  if (compare == nullptr || compare->opcode() != Opcode::kCompare ||
      compare->operand_count() != 2 || !compare->attributes().comparison_direction.has_value()) {
    return std::nullopt;
  }
  LoopTest test{compare->operand(0), compare->operand(1),
                *compare->attributes().comparison_direction};
  if (root != compare) {
    // Each side a parameter of the fused computation: the fusion operand it stands for.
    const Instruction* sides[2] = {test.lhs, test.rhs};
    for (const Instruction*& side : sides) {
      if (side->opcode() != Opcode::kParameter) return std::nullopt;
      const int64_t number = side->attributes().parameter_number.value_or(-1);
      if (number < 0 || number >= root->operand_count()) return std::nullopt;
      side = root->operand(number);
    }
    test.lhs = sides[0];
    test.rhs = sides[1];
  }
  return test;
}

}  // namespace

std::optional<int64_t> KnownTripCount(const Instruction& while_instruction) {
  return KnownTripCountOf(while_instruction);
}

std::optional<int64_t> CountedLoopTrips(const Instruction& loop) {
  const Computation* condition = loop.condition();
  const Computation* body = loop.body();
  if (loop.opcode() != Opcode::kWhile || condition == nullptr || body == nullptr ||
      loop.operand_count() != 1) {
    return std::nullopt;
  }
  const std::optional<LoopTest> test = LoopTestOf(condition->root());
  if (!test.has_value()) return std::nullopt;
  ComparisonDirection direction = test->direction;
  std::optional<int64_t> index = LoopStateIndex(test->lhs);
  std::optional<int64_t> bound = IntegerConstant(test->rhs);
  const Instruction* counter = test->lhs;
  if (!index.has_value()) {
    index = LoopStateIndex(test->rhs);
    bound = IntegerConstant(test->lhs);
    direction = Mirrored(direction);
    counter = test->rhs;
  }
  if (!index.has_value() || !bound.has_value()) return std::nullopt;
  if (!counter->shape().IsScalar() || !IsSignedInteger(counter->shape().element_type())) {
    return std::nullopt;  // unsigned compares differ
  }

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

std::optional<int64_t> StaticTripCount(const Instruction& while_instruction) {
  if (std::optional<int64_t> known = KnownTripCount(while_instruction)) return known;
  return CountedLoopTrips(while_instruction);
}

}  // namespace perfsim
