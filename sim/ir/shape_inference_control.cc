// Shape inference for control flow and called computations (call, fusion, while,
// conditional, map), the generic async wrapper (async-start/-update/-done, copy-start/-done),
// tokens and custom-call.
//
// Async handles follow what XLA prints: async-start's shape is
//   ((operand shapes...), <called computation's root shape>, context...)
// where the context elements (e.g. `s32[]`, `u32[]`) are backend-defined and taken as
// declared; copy-start's is (operand, operand, u32[]).
#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayOperand;
using infer_internal::InferError;
using infer_internal::RequireComputation;
using infer_internal::ShapeText;

namespace {

// Each operand in `operands` must have the shape of the matching parameter of `computation`.
absl::Status CheckArguments(const Instruction& instruction, const Computation& computation,
                            absl::Span<Instruction* const> operands, absl::string_view role) {
  const int64_t count = static_cast<int64_t>(operands.size());
  if (computation.parameter_count() != count) {
    return InferError(instruction,
                      absl::StrCat(role, " computation ", computation.name(), " to take ", count,
                                   " parameters (one per operand)"),
                      absl::StrCat(computation.parameter_count()));
  }
  for (int64_t i = 0; i < count; ++i) {
    const Instruction* param = computation.parameter(i);
    if (param == nullptr) {
      return InferError(instruction,
                        absl::StrCat(role, " computation ", computation.name(), " parameter ", i),
                        "none");
    }
    if (!SameShapeIgnoringLayout(param->shape(), operands[i]->shape())) {
      return InferError(
          instruction,
          absl::StrCat("operand ", i, " to have the shape of parameter ", i, " of ", role,
                       " computation ", computation.name(), " (", ShapeText(param->shape()), ")"),
          ShapeText(operands[i]->shape()));
    }
  }
  return absl::OkStatus();
}

// A one-parameter computation (while condition/body, conditional branch) that takes `shape`.
absl::Status CheckSingleParameter(const Instruction& instruction, const Computation& computation,
                                  const Shape& shape, absl::string_view role) {
  if (computation.parameter_count() != 1 || computation.parameter(0) == nullptr) {
    return InferError(
        instruction,
        absl::StrCat(role, " computation ", computation.name(), " to take 1 parameter"),
        absl::StrCat(computation.parameter_count()));
  }
  const Shape& param = computation.parameter(0)->shape();
  if (!SameShapeIgnoringLayout(param, shape)) {
    return InferError(instruction,
                      absl::StrCat(role, " computation ", computation.name(),
                                   " to take the operand shape ", ShapeText(shape)),
                      ShapeText(param));
  }
  return absl::OkStatus();
}

bool IsScalarPred(const Shape& shape) {
  return shape.IsScalar() && shape.element_type() == PrimitiveType::kPred;
}

// The opcode that must produce the operand of a `*-done`. Only the done opcodes reach here,
// so the default is async-done's partner.
Opcode MatchingStart(Opcode done) {
  switch (done) {
    case Opcode::kAllGatherDone:
      return Opcode::kAllGatherStart;
    case Opcode::kAllReduceDone:
      return Opcode::kAllReduceStart;
    case Opcode::kCollectivePermuteDone:
      return Opcode::kCollectivePermuteStart;
    case Opcode::kCopyDone:
      return Opcode::kCopyStart;
    default:
      return Opcode::kAsyncStart;
  }
}

}  // namespace

// call (to_apply=) and fusion (calls=): the operands are the arguments; the root is the result.
absl::StatusOr<Shape> InferCallShape(const Instruction& instruction) {
  const bool is_fusion = instruction.opcode() == Opcode::kFusion;
  const Computation* callee = instruction.to_apply();
  if (callee == nullptr && !instruction.calls().empty()) callee = instruction.calls()[0];
  PERFSIM_ASSIGN_OR_RETURN(
      const Computation* computation,
      RequireComputation(instruction, callee, is_fusion ? "calls" : "to_apply"));
  PERFSIM_RETURN_IF_ERROR(CheckArguments(instruction, *computation, instruction.operands(),
                                         is_fusion ? "fused" : "called"));
  return computation->root()->shape();
}

absl::StatusOr<Shape> InferWhileShape(const Instruction& instruction) {
  const Shape& init = instruction.operand(0)->shape();
  PERFSIM_ASSIGN_OR_RETURN(const Computation* condition,
                           RequireComputation(instruction, instruction.condition(), "condition"));
  PERFSIM_ASSIGN_OR_RETURN(const Computation* body,
                           RequireComputation(instruction, instruction.body(), "body"));
  PERFSIM_RETURN_IF_ERROR(CheckSingleParameter(instruction, *condition, init, "condition"));
  PERFSIM_RETURN_IF_ERROR(CheckSingleParameter(instruction, *body, init, "body"));
  if (!IsScalarPred(condition->root()->shape())) {
    return InferError(
        instruction, absl::StrCat("condition computation ", condition->name(), " to return pred[]"),
        ShapeText(condition->root()->shape()));
  }
  if (!SameShapeIgnoringLayout(body->root()->shape(), init)) {
    return InferError(instruction,
                      absl::StrCat("body computation ", body->name(),
                                   " to return the loop-carried shape ", ShapeText(init)),
                      ShapeText(body->root()->shape()));
  }
  return init;
}

// conditional(pred, t_arg, f_arg) with true/false computations, or
// conditional(s32 index, arg_0, ..., arg_{n-1}) with branch_computations={b_0, ..., b_{n-1}}.
absl::StatusOr<Shape> InferConditionalShape(const Instruction& instruction) {
  if (instruction.operand_count() < 1) {
    return InferError(instruction, "a branch selector operand", "none");
  }
  const std::vector<Computation*>& branches = instruction.branch_computations();
  if (branches.empty()) return InferError(instruction, "branch computations", "none");
  const Shape& selector = instruction.operand(0)->shape();
  if (IsScalarPred(selector)) {
    if (branches.size() != 2) {
      return InferError(instruction, "2 branches for a pred selector",
                        absl::StrCat(branches.size()));
    }
  } else if (!selector.IsScalar() || !IsInteger(selector.element_type())) {
    return InferError(instruction, "a pred[] or s32[] branch selector", ShapeText(selector));
  }
  const int64_t branch_count = static_cast<int64_t>(branches.size());
  if (instruction.operand_count() != branch_count + 1) {
    return InferError(instruction,
                      absl::StrCat(branch_count + 1, " operands (selector and one per branch)"),
                      absl::StrCat(instruction.operand_count()));
  }
  const Shape* result = nullptr;
  for (int64_t b = 0; b < branch_count; ++b) {
    const std::string role = absl::StrCat("branch ", b);
    PERFSIM_ASSIGN_OR_RETURN(const Computation* branch,
                             RequireComputation(instruction, branches[b], role));
    PERFSIM_RETURN_IF_ERROR(
        CheckSingleParameter(instruction, *branch, instruction.operand(b + 1)->shape(), role));
    const Shape& root = branch->root()->shape();
    if (result == nullptr) {
      result = &root;
    } else if (!SameShapeIgnoringLayout(*result, root)) {
      return InferError(instruction, absl::StrCat("every branch to return ", ShapeText(*result)),
                        absl::StrCat(ShapeText(root), " from ", role, " (", branch->name(), ")"));
    }
  }
  return *result;
}

absl::StatusOr<Shape> InferMapShape(const Instruction& instruction) {
  if (instruction.operand_count() < 1) return InferError(instruction, "at least 1 operand", "0");
  PERFSIM_ASSIGN_OR_RETURN(const Shape* first, ArrayOperand(instruction, 0, "operand 0"));
  std::vector<PrimitiveType> types;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* operand,
                             ArrayOperand(instruction, i, absl::StrCat("operand ", i)));
    if (operand->dimensions() != first->dimensions()) {
      return InferError(instruction,
                        absl::StrCat("operands with the dimensions of ", ShapeText(*first)),
                        ShapeText(*operand));
    }
    types.push_back(operand->element_type());
  }
  PERFSIM_ASSIGN_OR_RETURN(const Computation* computation,
                           RequireComputation(instruction, instruction.to_apply(), "to_apply"));
  if (computation->parameter_count() != instruction.operand_count()) {
    return InferError(instruction,
                      absl::StrCat("to_apply computation ", computation->name(), " to take ",
                                   instruction.operand_count(), " scalar parameters"),
                      absl::StrCat(computation->parameter_count()));
  }
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const Instruction* param = computation->parameter(i);
    if (param == nullptr || !param->shape().IsScalar() ||
        param->shape().element_type() != types[i]) {
      return InferError(
          instruction,
          absl::StrCat("to_apply parameter ", i, " of type ", PrimitiveTypeName(types[i]), "[]"),
          param == nullptr ? "none" : ShapeText(param->shape()));
    }
  }
  const Shape& root = computation->root()->shape();
  if (!root.IsScalar()) {
    return InferError(instruction, "a to_apply computation returning a scalar", ShapeText(root));
  }
  return infer_internal::ArrayLike(*first, root.element_type());
}

// -------------------------------------------------------------------------- tokens, opaque

absl::StatusOr<Shape> InferAddDependencyShape(const Instruction& instruction) {
  const Shape& token = instruction.operand(1)->shape();
  if (!token.IsToken()) return InferError(instruction, "a token as operand 1", ShapeText(token));
  return instruction.operand(0)->shape();
}

// after-all orders its result after all its operands, whatever their shapes: XLA's verifier
// (ShapeVerifier::HandleAfterAll) checks only that the result is a token, and its tests build
// `after-all(p0, token0)` on an f32[] and `after-all(neg)` as a data dependency.
absl::StatusOr<Shape> InferAfterAllShape(const Instruction& /*instruction*/) {
  return Shape::Token();
}

// custom-call is opaque: its result is what it declares, as long as that is well formed.
absl::StatusOr<Shape> InferCustomCallShape(const Instruction& instruction) {
  PERFSIM_RETURN_IF_ERROR(Annotate(ValidateShape(instruction.shape()), instruction.name()));
  return instruction.shape();
}

// ----------------------------------------------------------------------------------- async

absl::StatusOr<Shape> InferAsyncStartShape(const Instruction& instruction) {
  std::vector<Shape> operands;
  for (const Instruction* operand : instruction.operands()) operands.push_back(operand->shape());
  const Shape& declared = instruction.shape();
  const bool declared_ok = declared.IsTuple() && declared.tuple_size() >= 2;
  Shape wrapped_result;
  const Computation* callee = instruction.calls().empty() ? nullptr : instruction.calls()[0];
  if (callee != nullptr) {
    PERFSIM_ASSIGN_OR_RETURN(const Computation* computation,
                             RequireComputation(instruction, callee, "calls"));
    PERFSIM_RETURN_IF_ERROR(
        CheckArguments(instruction, *computation, instruction.operands(), "async"));
    wrapped_result = computation->root()->shape();
  } else if (declared_ok) {
    // Without a wrapped computation (e.g. sugar the parser kept as is) the result element is
    // taken as declared; the operand element is still checked.
    wrapped_result = declared.tuple_shapes(1);
  } else {
    return InferError(instruction, "a ((operands), result, context...) tuple shape",
                      ShapeText(declared));
  }
  std::vector<Shape> elements = {Shape::Tuple(std::move(operands)), std::move(wrapped_result)};
  if (declared_ok) {
    for (int64_t i = 2; i < declared.tuple_size(); ++i)
      elements.push_back(declared.tuple_shapes(i));
  }
  return Shape::Tuple(std::move(elements));
}

absl::StatusOr<Shape> InferAsyncUpdateShape(const Instruction& instruction) {
  const Instruction* handle = instruction.operand(0);
  if (handle->opcode() != Opcode::kAsyncStart && handle->opcode() != Opcode::kAsyncUpdate) {
    return InferError(instruction, "an operand produced by async-start or async-update",
                      absl::StrCat(OpcodeSpelling(handle->opcode()), " ", handle->name()));
  }
  const Shape& shape = handle->shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return InferError(instruction, "an async handle ((operands), result, ...) as operand",
                      ShapeText(shape));
  }
  return shape;
}

// all-gather-done, all-reduce-done, collective-permute-done and async-done: element 1 of the
// handle, except all-reduce-start, whose result is the reduced value itself.
absl::StatusOr<Shape> InferAsyncDoneShape(const Instruction& instruction) {
  const Instruction* handle = instruction.operand(0);
  const Opcode start = MatchingStart(instruction.opcode());
  const bool matches = handle->opcode() == start ||
                       (start == Opcode::kAsyncStart && handle->opcode() == Opcode::kAsyncUpdate);
  if (!matches) {
    return InferError(instruction, absl::StrCat("an operand produced by ", OpcodeSpelling(start)),
                      absl::StrCat(OpcodeSpelling(handle->opcode()), " ", handle->name()));
  }
  const Shape& shape = handle->shape();
  if (start == Opcode::kAllReduceStart) return shape;
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return InferError(instruction, "an async handle tuple of at least 2 elements",
                      ShapeText(shape));
  }
  return shape.tuple_shapes(1);
}

absl::StatusOr<Shape> InferCopyStartShape(const Instruction& instruction) {
  const Shape& operand = instruction.operand(0)->shape();
  return Shape::Tuple({operand, operand, Shape::Scalar(PrimitiveType::kU32)});
}

absl::StatusOr<Shape> InferCopyDoneShape(const Instruction& instruction) {
  const Instruction* handle = instruction.operand(0);
  if (handle->opcode() != Opcode::kCopyStart) {
    return InferError(instruction, "an operand produced by copy-start",
                      absl::StrCat(OpcodeSpelling(handle->opcode()), " ", handle->name()));
  }
  const Shape& shape = handle->shape();
  if (!shape.IsTuple() || shape.tuple_size() < 2) {
    return InferError(instruction, "a copy-start handle (dest, src, context)", ShapeText(shape));
  }
  return shape.tuple_shapes(0);
}

}  // namespace perfsim
