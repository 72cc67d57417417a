// Shape inference for control flow and called computations (call, fusion, while,
// conditional, map), the generic async wrapper (async-start/-update/-done, copy-start/-done),
// tokens and custom-call.
//
// Async handles follow what XLA prints: async-start's shape is
//   ((operand shapes...), <called computation's root shape>, context...)
// where the context elements (e.g. `s32[]`, `u32[]`) are backend-defined and taken as
// declared; copy-start's is (operand, operand, u32[]).
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

namespace {

// One entry of custom-call's `output_to_operand_aliasing={{1}: (0, {}), ...}`: the result's
// subshape at `output` is the buffer of operand `operand`'s subshape at `operand_index`.
struct Alias {
  std::vector<int64_t> output;
  int64_t operand = 0;
  std::vector<int64_t> operand_index;
};

// A tiny reader over the attribute's verbatim text, whitespace skipped.
class AliasReader {
 public:
  explicit AliasReader(absl::string_view text) : text_(text) {}

  // `{` [entry (`,` entry)*] `}` and nothing after; nullopt when the text is not of that form.
  std::optional<std::vector<Alias>> ReadAll() {
    std::vector<Alias> aliases;
    if (!Eat('{')) return std::nullopt;
    if (!Eat('}')) {
      do {
        Alias alias;
        if (!ReadIndex(&alias.output) || !Eat(':') || !Eat('(') || !ReadInt(&alias.operand) ||
            !Eat(',') || !ReadIndex(&alias.operand_index) || !Eat(')')) {
          return std::nullopt;
        }
        aliases.push_back(std::move(alias));
      } while (Eat(','));
      if (!Eat('}')) return std::nullopt;
    }
    SkipSpace();
    if (pos_ != text_.size()) return std::nullopt;
    return aliases;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // A non-negative decimal of at most 18 digits (so it cannot overflow).
  bool ReadInt(int64_t* value) {
    SkipSpace();
    const size_t start = pos_;
    *value = 0;
    while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_])) &&
           pos_ - start < 18) {
      *value = *value * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    return pos_ > start && (pos_ >= text_.size() || !absl::ascii_isdigit(text_[pos_]));
  }
  // `{` [int (`,` int)*] `}`
  bool ReadIndex(std::vector<int64_t>* index) {
    if (!Eat('{')) return false;
    if (Eat('}')) return true;
    do {
      int64_t i = 0;
      if (!ReadInt(&i)) return false;
      index->push_back(i);
    } while (Eat(','));
    return Eat('}');
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// The subshape of `shape` at `index` (tuple elements only), or nullptr when it has none.
const Shape* Subshape(const Shape& shape, const std::vector<int64_t>& index) {
  const Shape* current = &shape;
  for (int64_t i : index) {
    if (!current->IsTuple() || i >= current->tuple_size()) return nullptr;
    current = &current->tuple_shapes(i);
  }
  return current;
}

std::string IndexText(const std::vector<int64_t>& index) {
  return absl::StrCat("{", absl::StrJoin(index, ","), "}");
}

// XLA's ShapeVerifier::HandleCustomCall on output_to_operand_aliasing: every alias names an
// operand and valid shape indices on both sides, and (unless the frontend attribute
// xla_skip_custom_call_alias_shape_check is set) the two subshapes are equal, layouts and
// dynamic sizes ignored. "Pin" and "Unpin" turn an array into its buffer and back, so for them
// `b(f32[16])` aliases `f32[16]` (XLA's Shape::Equal().IgnoreBuffer()).
absl::Status CheckOutputToOperandAliasing(const Instruction& instruction) {
  const InstructionAttributes& attributes = instruction.attributes();
  const std::string* text = nullptr;
  for (const auto& [key, value] : attributes.other) {
    if (key == "output_to_operand_aliasing") text = &value;
  }
  if (text == nullptr) return absl::OkStatus();
  const std::optional<std::vector<Alias>> aliases = AliasReader(*text).ReadAll();
  if (!aliases.has_value()) {
    return InferError(instruction,
                      "output_to_operand_aliasing={{output index}: (operand, {operand index}), "
                      "...}",
                      *text);
  }
  const bool ignore_buffer = attributes.custom_call_target == "Pin" ||
                             attributes.custom_call_target == "Unpin";
  const bool skip_shape_check =
      absl::StrContains(attributes.frontend_attributes, "xla_skip_custom_call_alias_shape_check");
  for (const Alias& alias : *aliases) {
    if (alias.operand >= instruction.operand_count()) {
      return InferError(instruction,
                        absl::StrCat("an aliased operand number below ",
                                     instruction.operand_count()),
                        absl::StrCat(alias.operand));
    }
    const Shape& operand = instruction.operand(alias.operand)->shape();
    const Shape* operand_subshape = Subshape(operand, alias.operand_index);
    if (operand_subshape == nullptr) {
      return InferError(instruction,
                        absl::StrCat("an aliased shape index of operand ", alias.operand, " (",
                                     ShapeText(operand), ")"),
                        IndexText(alias.operand_index));
    }
    const Shape* output_subshape = Subshape(instruction.shape(), alias.output);
    if (output_subshape == nullptr) {
      return InferError(instruction,
                        absl::StrCat("an aliased shape index of the result (",
                                     ShapeText(instruction.shape()), ")"),
                        IndexText(alias.output));
    }
    if (skip_shape_check) continue;
    const Shape& a = ignore_buffer ? StripBuffer(*output_subshape) : *output_subshape;
    const Shape& b = ignore_buffer ? StripBuffer(*operand_subshape) : *operand_subshape;
    if (!SameShapeIgnoringLayout(a, b)) {
      return InferError(instruction,
                        absl::StrCat("result ", IndexText(alias.output), " aliased to operand ",
                                     alias.operand, " ", IndexText(alias.operand_index),
                                     " to have its shape ", ShapeText(*operand_subshape)),
                        ShapeText(*output_subshape));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// custom-call is opaque: its result is what it declares, as long as that is well formed and
// agrees with the operands it says it aliases.
absl::StatusOr<Shape> InferCustomCallShape(const Instruction& instruction) {
  PERFSIM_RETURN_IF_ERROR(Annotate(ValidateShape(instruction.shape()), instruction.name()));
  PERFSIM_RETURN_IF_ERROR(CheckOutputToOperandAliasing(instruction));
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
