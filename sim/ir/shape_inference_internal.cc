#include "sim/ir/shape_inference_internal.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/status.h"

namespace perfsim {
namespace infer_internal {

absl::Status InferError(const Instruction& instruction, absl::string_view expected,
                        absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(instruction.name(), ": expected ", expected, "; got ", got));
}

std::string ShapeText(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

std::string ListText(absl::Span<const int64_t> values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

Shape StripLayout(Shape shape) {
  shape.clear_layout();
  if (shape.IsTuple()) {
    for (Shape& element : *shape.mutable_tuple_shapes()) element = StripLayout(std::move(element));
  }
  return shape;
}

Shape ArrayLike(const Shape& like, PrimitiveType type) {
  Shape shape = Shape::Array(type, like.dimensions());
  for (int64_t i = 0; i < like.rank(); ++i) {
    shape.set_dynamic_dimension(i, like.is_dynamic_dimension(i));
  }
  return shape;
}

absl::StatusOr<const Shape*> ArrayOperand(const Instruction& instruction, int64_t index,
                                          absl::string_view role) {
  if (index >= instruction.operand_count() || instruction.operand(index) == nullptr) {
    return InferError(instruction, absl::StrCat("a ", role, " operand"), "none");
  }
  const Shape& shape = instruction.operand(index)->shape();
  if (!shape.IsArray()) {
    return InferError(instruction, absl::StrCat(role, " to be an array"), ShapeText(shape));
  }
  return &shape;
}

absl::Status CheckDimensionList(const Instruction& instruction, absl::Span<const int64_t> dims,
                                int64_t rank, absl::string_view what) {
  absl::flat_hash_set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return InferError(instruction, absl::StrCat(what, " in [0, ", rank, ")"),
                        absl::StrCat(d, " in ", ListText(dims)));
    }
    if (!seen.insert(d).second) {
      return InferError(instruction, absl::StrCat(what, " without repeats"),
                        absl::StrCat(d, " twice in ", ListText(dims)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSortedDimensionList(const Instruction& instruction,
                                      absl::Span<const int64_t> dims, int64_t rank,
                                      absl::string_view what) {
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, dims, rank, what));
  if (!std::is_sorted(dims.begin(), dims.end())) {
    return InferError(instruction, absl::StrCat(what, " in increasing order"), ListText(dims));
  }
  return absl::OkStatus();
}

absl::StatusOr<const Computation*> RequireComputation(const Instruction& instruction,
                                                      const Computation* computation,
                                                      absl::string_view role) {
  if (computation == nullptr) {
    return InferError(instruction, absl::StrCat("a ", role, " computation"), "none");
  }
  if (computation->root() == nullptr) {
    return InferError(instruction,
                      absl::StrCat(role, " computation ", computation->name(), " to have a root"),
                      "none");
  }
  return computation;
}

bool SameTypeIgnoringFpPrecision(PrimitiveType a, PrimitiveType b) {
  return a == b || (IsFloatingPoint(a) && IsFloatingPoint(b));
}

namespace {

std::string TypeList(absl::Span<const PrimitiveType> types) {
  std::vector<std::string> names;
  for (PrimitiveType t : types) names.push_back(absl::StrCat(PrimitiveTypeName(t), "[]"));
  return absl::StrCat("(", absl::StrJoin(names, ", "), ")");
}

}  // namespace

absl::StatusOr<std::vector<PrimitiveType>> CheckReducer(
    const Instruction& instruction, const Computation* reducer, absl::string_view role,
    absl::Span<const PrimitiveType> accumulator_types,
    absl::Span<const PrimitiveType> input_types) {
  PERFSIM_RETURN_IF_ERROR(RequireComputation(instruction, reducer, role).status());
  const int64_t n = static_cast<int64_t>(accumulator_types.size());
  std::vector<PrimitiveType> expected_params(accumulator_types.begin(), accumulator_types.end());
  expected_params.insert(expected_params.end(), input_types.begin(), input_types.end());
  const std::string signature =
      absl::StrCat(role, " computation ", reducer->name(), " taking ", TypeList(expected_params));
  if (reducer->parameter_count() != 2 * n) {
    return InferError(instruction, absl::StrCat(signature, " (", 2 * n, " scalar parameters)"),
                      absl::StrCat(reducer->parameter_count(), " parameters"));
  }
  for (int64_t i = 0; i < 2 * n; ++i) {
    const Instruction* param = reducer->parameter(i);
    if (param == nullptr) {
      return InferError(instruction, signature, absl::StrCat("no parameter ", i));
    }
    const Shape& shape = param->shape();
    if (!shape.IsScalar() ||
        !SameTypeIgnoringFpPrecision(shape.element_type(), expected_params[i])) {
      return InferError(instruction, signature,
                        absl::StrCat("parameter ", i, " of shape ", ShapeText(shape)));
    }
  }
  const Shape& root = reducer->root()->shape();
  std::vector<const Shape*> results;
  if (root.IsTuple()) {
    for (const Shape& element : root.tuple_shapes()) results.push_back(&element);
  } else {
    results.push_back(&root);
  }
  const std::string returns = absl::StrCat(role, " computation ", reducer->name(), " returning ",
                                           TypeList(accumulator_types));
  if (static_cast<int64_t>(results.size()) != n || (n > 1 && !root.IsTuple())) {
    return InferError(instruction, returns, ShapeText(root));
  }
  std::vector<PrimitiveType> produced;
  for (int64_t i = 0; i < n; ++i) {
    if (!results[i]->IsScalar() ||
        !SameTypeIgnoringFpPrecision(results[i]->element_type(), accumulator_types[i])) {
      return InferError(instruction, returns, ShapeText(root));
    }
    produced.push_back(results[i]->element_type());
  }
  return produced;
}

Shape TupleIfMany(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::Tuple(std::move(shapes));
}

int64_t WindowedOutputSize(int64_t input_size, int64_t window_size, int64_t stride,
                           int64_t padding_low, int64_t padding_high, int64_t base_dilation,
                           int64_t window_dilation) {
  // 128-bit arithmetic: window fields come from text and may be huge; the caller checks the
  // result against the declared shape, so a clamp is enough here.
  using Wide = __int128;
  const Wide dilated_input = input_size == 0 ? 0 : Wide{input_size - 1} * base_dilation + 1;
  const Wide padded = dilated_input + padding_low + padding_high;
  const Wide dilated_window = Wide{window_size - 1} * window_dilation + 1;
  if (padded < dilated_window || stride <= 0) return 0;
  const Wide out = (padded - dilated_window) / stride + 1;
  return out > Wide{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(out);
}

absl::Status CheckWindowDimension(const Instruction& instruction, int64_t index, int64_t size,
                                  int64_t stride, int64_t base_dilation, int64_t window_dilation) {
  if (size < 1 || stride < 1 || base_dilation < 1 || window_dilation < 1) {
    return InferError(
        instruction,
        absl::StrCat("window dimension ", index, " with size, stride and dilations >= 1"),
        absl::StrCat("size=", size, " stride=", stride, " lhs_dilate=", base_dilation,
                     " rhs_dilate=", window_dilation));
  }
  return absl::OkStatus();
}

}  // namespace infer_internal
}  // namespace perfsim
