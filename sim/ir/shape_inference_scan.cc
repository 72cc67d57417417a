// Shape inference for scan (XLA's kScan):
//
//   scan(x_0..x_{k-1}, init_0..init_{c-1}), dimensions={d}, num_carries=c, to_apply=f
//   f: (x_0[i]..x_{k-1}[i], carry_0..carry_{c-1}) -> (y_0..y_{m-1}, carry'_0..carry'_{c-1})
//   result: (Y_0..Y_{m-1}, final carry_0..carry_{c-1}), Y_j = y_j stacked along a new
//           dimension d of length L = size of dimension d of every x. A body that returns
//           one array, not a tuple, gives that one value (a carry or an output) untupled.
//
// x[i] is the slice of x at position i of dimension d, that dimension removed. The order was
// read off XLA's own tests (hlo_evaluator_test.cc: a body `(f32[2] x, f32[2,2] carry)` scanned
// over f32[2,2] with an f32[2,2] init gives (f32[2,2], f32[2,2])).
#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::InferError;
using infer_internal::RequireComputation;
using infer_internal::ShapeText;

namespace {

// `shape` without dimension `d`.
Shape WithoutDimension(const Shape& shape, int64_t d) {
  std::vector<int64_t> dims = shape.dimensions();
  dims.erase(dims.begin() + d);
  return Shape::Array(shape.element_type(), dims);
}

// `shape` with a new dimension of size `size` at position `d`.
Shape WithDimension(const Shape& shape, int64_t d, int64_t size) {
  std::vector<int64_t> dims = shape.dimensions();
  dims.insert(dims.begin() + d, size);
  return Shape::Array(shape.element_type(), dims);
}

}  // namespace

absl::StatusOr<Shape> InferScanShape(const Instruction& instruction) {
  const InstructionAttributes& a = instruction.attributes();
  const int64_t carries = a.num_carries.value_or(0);
  const int64_t inputs = instruction.operand_count() - carries;
  if (carries < 0 || inputs < 1) {
    return InferError(instruction,
                      absl::StrCat("num_carries in [0, ", instruction.operand_count() - 1,
                                   "] (at least one scanned input)"),
                      absl::StrCat(carries));
  }
  const std::vector<int64_t> dims = a.dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1) {
    return InferError(instruction, "one scan dimension in dimensions={d}",
                      absl::StrCat(dims.size(), " dimensions"));
  }
  const int64_t d = dims[0];
  PERFSIM_ASSIGN_OR_RETURN(const Computation* body,
                           RequireComputation(instruction, instruction.to_apply(), "to_apply"));
  if (body->parameter_count() != instruction.operand_count()) {
    return InferError(instruction,
                      absl::StrCat("to_apply computation ", body->name(), " to take ",
                                   instruction.operand_count(), " parameters (one per operand)"),
                      absl::StrCat(body->parameter_count()));
  }
  int64_t length = -1;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const Shape& operand = instruction.operand(i)->shape();
    Shape expected = operand;
    if (i < inputs) {
      if (!operand.IsArray() || d < 0 || d >= operand.rank()) {
        return InferError(instruction,
                          absl::StrCat("scanned input ", i, " to be an array with dimension ", d),
                          ShapeText(operand));
      }
      if (length >= 0 && operand.dimensions(d) != length) {
        return InferError(instruction,
                          absl::StrCat("scanned input ", i, " of length ", length,
                                       " along dimension ", d),
                          ShapeText(operand));
      }
      length = operand.dimensions(d);
      expected = WithoutDimension(operand, d);
    }
    const Instruction* param = body->parameter(i);
    if (param == nullptr || !SameShapeIgnoringLayout(param->shape(), expected)) {
      return InferError(instruction,
                        absl::StrCat("parameter ", i, " of ", body->name(), " to be ",
                                     ShapeText(expected)),
                        param == nullptr ? "none" : ShapeText(param->shape()));
    }
  }
  // A body returning one array (not a tuple) returns its only value; the scan's result is
  // then that value alone (XLA's bfloat16_propagation_test has a carry-only scan so).
  const Shape& root = body->root()->shape();
  const std::vector<Shape> values = root.IsTuple() ? root.tuple_shapes() : std::vector<Shape>{root};
  const int64_t value_count = static_cast<int64_t>(values.size());
  if (value_count < carries) {
    return InferError(instruction,
                      absl::StrCat(body->name(), " to return ", carries, " carries or more"),
                      ShapeText(root));
  }
  const int64_t outputs = value_count - carries;
  std::vector<Shape> result;
  for (int64_t j = 0; j < outputs; ++j) {
    const Shape& y = values[j];
    if (!y.IsArray() || d > y.rank()) {
      return InferError(instruction,
                        absl::StrCat("output ", j, " of ", body->name(),
                                     " to be an array of rank >= ", d),
                        ShapeText(y));
    }
    result.push_back(WithDimension(y, d, length));
  }
  for (int64_t c = 0; c < carries; ++c) {
    const Shape& init = instruction.operand(inputs + c)->shape();
    const Shape& next = values[outputs + c];
    if (!SameShapeIgnoringLayout(init, next)) {
      return InferError(instruction,
                        absl::StrCat("carry ", c, " returned by ", body->name(),
                                     " to keep its shape ", ShapeText(init)),
                        ShapeText(next));
    }
    result.push_back(init);
  }
  if (!root.IsTuple()) return result[0];
  return Shape::Tuple(std::move(result));
}

}  // namespace perfsim
