// Shape inference for data movement and reductions: slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reduce (variadic), reduce-window,
// select-and-scatter, sort (multi-operand), topk, get/set-dimension-size and dynamic-reshape.
// Gather and scatter are in shape_inference_gather.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayLike;
using infer_internal::ArrayOperand;
using infer_internal::CheckDimensionList;
using infer_internal::CheckReducer;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::RequireComputation;
using infer_internal::ShapeText;
using infer_internal::TupleIfMany;

namespace {

// Index operands [first, operand_count) of dynamic-slice / dynamic-update-slice: either one
// integer scalar per dimension of `operand`, or (XLA's older form) one integer vector.
absl::Status CheckStartIndices(const Instruction& instruction, int64_t first,
                               const Shape& operand) {
  const int64_t count = instruction.operand_count() - first;
  // XLA's older form: one rank-1 integer array holding every start index (ShapeInference takes
  // it whenever the first index has rank 1, so on a rank-1 operand s32[1] is this form too).
  if (count == 1 && instruction.operand(first)->shape().IsArray() &&
      instruction.operand(first)->shape().rank() == 1) {
    const Shape& vector = instruction.operand(first)->shape();
    if (vector.dimensions(0) != operand.rank() || !IsInteger(vector.element_type())) {
      return InferError(instruction,
                        absl::StrCat("start indices as one integer array of ", operand.rank(),
                                     " elements (the rank of ", ShapeText(operand), ")"),
                        ShapeText(vector));
    }
    return absl::OkStatus();
  }
  if (count != operand.rank()) {
    return InferError(
        instruction,
        absl::StrCat(operand.rank(), " start indices (the rank of ", ShapeText(operand), ")"),
        absl::StrCat(count));
  }
  for (int64_t i = first; i < instruction.operand_count(); ++i) {
    const Shape& index = instruction.operand(i)->shape();
    if (!index.IsScalar() || !IsInteger(index.element_type())) {
      return InferError(instruction, absl::StrCat("an integer scalar start index as operand ", i),
                        ShapeText(index));
    }
  }
  return absl::OkStatus();
}

std::vector<PrimitiveType> ElementTypes(absl::Span<const Shape* const> shapes) {
  std::vector<PrimitiveType> types;
  for (const Shape* s : shapes) types.push_back(s->element_type());
  return types;
}

// Operands [first, first + count) as arrays with the dimensions of the first one.
absl::StatusOr<std::vector<const Shape*>> SameDimensionArrays(const Instruction& instruction,
                                                              int64_t first, int64_t count,
                                                              absl::string_view role) {
  std::vector<const Shape*> shapes;
  for (int64_t i = first; i < first + count; ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* shape,
                             ArrayOperand(instruction, i, absl::StrCat(role, " ", i - first)));
    if (!shapes.empty() && shape->dimensions() != shapes[0]->dimensions()) {
      return InferError(instruction,
                        absl::StrCat(role, "s with the dimensions of ", ShapeText(*shapes[0])),
                        ShapeText(*shape));
    }
    shapes.push_back(shape);
  }
  return shapes;
}

// Operands [first, first + count) as scalars (the init values of reductions).
absl::StatusOr<std::vector<const Shape*>> ScalarOperands(const Instruction& instruction,
                                                         int64_t first, int64_t count) {
  std::vector<const Shape*> shapes;
  for (int64_t i = first; i < first + count; ++i) {
    const Shape& shape = instruction.operand(i)->shape();
    if (!shape.IsScalar()) {
      return InferError(instruction, absl::StrCat("a scalar init value as operand ", i),
                        ShapeText(shape));
    }
    shapes.push_back(&shape);
  }
  return shapes;
}

// Output dimensions of a window (reduce-window, select-and-scatter) over `input`.
absl::StatusOr<std::vector<int64_t>> WindowedDimensions(const Instruction& instruction,
                                                        const Shape& input) {
  // No `window=` is XLA's empty window: right for a scalar (a rank-0 window), wrong otherwise.
  const std::vector<WindowDimension> window =
      instruction.attributes().window.value_or(std::vector<WindowDimension>{});
  if (static_cast<int64_t>(window.size()) != input.rank()) {
    return InferError(instruction,
                      absl::StrCat("a window of ", input.rank(), " dimensions (the rank of ",
                                   ShapeText(input), ")"),
                      instruction.attributes().window.has_value()
                          ? absl::StrCat(window.size(), window.size() == 1 ? " dimension"
                                                                           : " dimensions")
                          : std::string("no window"));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < input.rank(); ++i) {
    const WindowDimension& w = window[i];
    PERFSIM_RETURN_IF_ERROR(infer_internal::CheckWindowDimension(
        instruction, i, w.size, w.stride, w.base_dilation, w.window_dilation));
    dims.push_back(infer_internal::WindowedOutputSize(input.dimensions(i), w.size, w.stride,
                                                      w.padding_low, w.padding_high,
                                                      w.base_dilation, w.window_dilation));
  }
  return dims;
}

absl::StatusOr<int64_t> SingleDimension(const Instruction& instruction, int64_t rank) {
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= rank) {
    return InferError(instruction, absl::StrCat("one dimension in [0, ", rank, ")"),
                      ListText(dims));
  }
  return dims[0];
}

}  // namespace

// ---------------------------------------------------------------------------- slicing

absl::StatusOr<Shape> InferSliceShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const std::vector<SliceDimension> slice =
      instruction.attributes().slice.value_or(std::vector<SliceDimension>{});
  if (static_cast<int64_t>(slice.size()) != operand->rank()) {
    return InferError(
        instruction,
        absl::StrCat(operand->rank(), " slice ranges (the rank of ", ShapeText(*operand), ")"),
        absl::StrCat(slice.size()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < operand->rank(); ++i) {
    const SliceDimension& s = slice[i];
    if (s.start < 0 || s.start > s.limit || s.limit > operand->dimensions(i) || s.stride < 1) {
      return InferError(instruction,
                        absl::StrCat("slice dimension ", i, " with 0 <= start <= limit <= ",
                                     operand->dimensions(i), " and stride >= 1"),
                        absl::StrCat("[", s.start, ":", s.limit, ":", s.stride, "]"));
    }
    const int64_t extent = s.limit - s.start;  // both in [0, dimension]: no overflow
    dims.push_back(extent / s.stride + (extent % s.stride != 0 ? 1 : 0));
  }
  return Shape::Array(operand->element_type(), dims);
}

absl::StatusOr<Shape> InferDynamicSliceShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_RETURN_IF_ERROR(CheckStartIndices(instruction, 1, *operand));
  const std::vector<int64_t> sizes =
      instruction.attributes().dynamic_slice_sizes.value_or(std::vector<int64_t>{});
  if (static_cast<int64_t>(sizes.size()) != operand->rank()) {
    return InferError(instruction,
                      absl::StrCat(operand->rank(), " dynamic_slice_sizes (the rank of ",
                                   ShapeText(*operand), ")"),
                      ListText(sizes));
  }
  for (int64_t i = 0; i < operand->rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > operand->dimensions(i)) {
      return InferError(instruction,
                        absl::StrCat("slice size ", i, " in [0, ", operand->dimensions(i), "]"),
                        absl::StrCat(sizes[i]));
    }
  }
  return Shape::Array(operand->element_type(), sizes);
}

absl::StatusOr<Shape> InferDynamicUpdateSliceShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* update, ArrayOperand(instruction, 1, "update"));
  PERFSIM_RETURN_IF_ERROR(CheckStartIndices(instruction, 2, *operand));
  if (update->element_type() != operand->element_type() || update->rank() != operand->rank()) {
    return InferError(
        instruction,
        absl::StrCat("an update of the element type and rank of ", ShapeText(*operand)),
        ShapeText(*update));
  }
  for (int64_t i = 0; i < operand->rank(); ++i) {
    if (update->dimensions(i) > operand->dimensions(i)) {
      return InferError(instruction,
                        absl::StrCat("update dimension ", i, " <= operand dimension (",
                                     operand->dimensions(i), ")"),
                        absl::StrCat(update->dimensions(i), " in ", ShapeText(*update)));
    }
  }
  return *operand;
}

absl::StatusOr<Shape> InferConcatenateShape(const Instruction& instruction) {
  if (instruction.operand_count() < 1) return InferError(instruction, "at least 1 operand", "0");
  PERFSIM_ASSIGN_OR_RETURN(const Shape* first, ArrayOperand(instruction, 0, "operand 0"));
  PERFSIM_ASSIGN_OR_RETURN(int64_t dim, SingleDimension(instruction, first->rank()));
  Shape result = *first;
  int64_t total = 0;
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* operand,
                             ArrayOperand(instruction, i, absl::StrCat("operand ", i)));
    bool compatible =
        operand->element_type() == first->element_type() && operand->rank() == first->rank();
    for (int64_t d = 0; compatible && d < first->rank(); ++d) {
      compatible = d == dim || operand->dimensions(d) == first->dimensions(d);
    }
    if (!compatible) {
      return InferError(
          instruction,
          absl::StrCat("operands like ", ShapeText(*first), " except in dimension ", dim),
          absl::StrCat(ShapeText(*operand), " as operand ", i));
    }
    if (operand->dimensions(dim) > INT64_MAX - total) {
      return InferError(instruction,
                        absl::StrCat("a concatenated dimension ", dim, " that fits in int64"),
                        "an overflow");
    }
    total += operand->dimensions(dim);
  }
  result.set_dimensions(dim, total);
  return result;
}

absl::StatusOr<Shape> InferPadShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const Shape& value = instruction.operand(1)->shape();
  if (!value.IsScalar() || value.element_type() != operand->element_type()) {
    return InferError(
        instruction,
        absl::StrCat("a ", PrimitiveTypeName(operand->element_type()), "[] padding value"),
        ShapeText(value));
  }
  const std::vector<PaddingDimension> padding =
      instruction.attributes().padding.value_or(std::vector<PaddingDimension>{});
  if (static_cast<int64_t>(padding.size()) != operand->rank()) {
    return InferError(instruction,
                      absl::StrCat(operand->rank(), " padding dimensions (the rank of ",
                                   ShapeText(*operand), ")"),
                      absl::StrCat(padding.size()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < operand->rank(); ++i) {
    const PaddingDimension& p = padding[i];
    const __int128 size = operand->dimensions(i);
    const __int128 padded = size + p.low + p.high + std::max<__int128>(size - 1, 0) * p.interior;
    if (p.interior < 0 || padded < 0 || padded > INT64_MAX) {
      return InferError(
          instruction,
          absl::StrCat("padding of dimension ", i, " with interior >= 0 giving a size >= 0"),
          absl::StrCat(p.low, "_", p.high, "_", p.interior));
    }
    dims.push_back(static_cast<int64_t>(padded));
  }
  return Shape::Array(operand->element_type(), dims);
}

// ------------------------------------------------------------------------------ reductions

// reduce(in_0..in_{N-1}, init_0..init_{N-1}), dimensions=..., to_apply=r.
absl::StatusOr<Shape> InferReduceShape(const Instruction& instruction) {
  const int64_t count = instruction.operand_count();
  if (count < 2 || count % 2 != 0) {
    return InferError(instruction, "an even number (>= 2) of operands: inputs then init values",
                      absl::StrCat(count));
  }
  const int64_t n = count / 2;
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> inputs,
                           SameDimensionArrays(instruction, 0, n, "input"));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> inits, ScalarOperands(instruction, n, n));
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, dims, inputs[0]->rank(), "reduce dimensions"));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<PrimitiveType> types,
                           CheckReducer(instruction, instruction.to_apply(), "to_apply",
                                        ElementTypes(inits), ElementTypes(inputs)));
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < inputs[0]->rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      kept.push_back(inputs[0]->dimensions(d));
  }
  std::vector<Shape> results;
  for (PrimitiveType t : types) results.push_back(Shape::Array(t, kept));
  return TupleIfMany(std::move(results));
}

absl::StatusOr<Shape> InferReduceWindowShape(const Instruction& instruction) {
  const int64_t count = instruction.operand_count();
  if (count < 2 || count % 2 != 0) {
    return InferError(instruction, "an even number (>= 2) of operands: inputs then init values",
                      absl::StrCat(count));
  }
  const int64_t n = count / 2;
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> inputs,
                           SameDimensionArrays(instruction, 0, n, "input"));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> inits, ScalarOperands(instruction, n, n));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> dims, WindowedDimensions(instruction, *inputs[0]));
  PERFSIM_RETURN_IF_ERROR(CheckReducer(instruction, instruction.to_apply(), "to_apply",
                                       ElementTypes(inits), ElementTypes(inputs))
                              .status());
  // The init values' element types, not the reducer's (which may differ in fp precision):
  // XLA's InferReduceWindowShape passes init_value_shape.element_type() to
  // InferWindowOutputShape, where InferReduceShape takes to_apply's result types.
  std::vector<Shape> results;
  for (const Shape* init : inits) results.push_back(Shape::Array(init->element_type(), dims));
  return TupleIfMany(std::move(results));
}

// select-and-scatter(operand, source, init), window=..., select=s, scatter=r: the source has
// the shape of the windowed operand; the result has the operand's.
absl::StatusOr<Shape> InferSelectAndScatterShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* source, ArrayOperand(instruction, 1, "source"));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> init, ScalarOperands(instruction, 2, 1));
  PERFSIM_ASSIGN_OR_RETURN(const Computation* select,
                           RequireComputation(instruction, instruction.select(), "select"));
  const PrimitiveType type = operand->element_type();
  bool select_ok = select->parameter_count() == 2;
  for (int64_t i = 0; select_ok && i < 2; ++i) {
    const Instruction* p = select->parameter(i);
    select_ok = p != nullptr && p->shape().IsScalar() && p->shape().element_type() == type;
  }
  const Shape& select_root = select->root()->shape();
  if (!select_ok || !select_root.IsScalar() || select_root.element_type() != PrimitiveType::kPred) {
    return InferError(
        instruction,
        absl::StrCat("select computation ", select->name(), " taking (", PrimitiveTypeName(type),
                     "[], ", PrimitiveTypeName(type), "[]) and returning pred[]"),
        absl::StrCat(select->parameter_count(), " parameters returning ", ShapeText(select_root)));
  }
  PERFSIM_RETURN_IF_ERROR(CheckReducer(instruction, instruction.scatter(), "scatter",
                                       {init[0]->element_type()}, {source->element_type()})
                              .status());
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> dims, WindowedDimensions(instruction, *operand));
  if (source->dimensions() != dims) {
    return InferError(
        instruction, absl::StrCat("a source of the windowed operand's dimensions ", ListText(dims)),
        ShapeText(*source));
  }
  return *operand;
}

// sort(k, v_1, ...), dimensions={d}, to_apply=cmp: cmp takes (k_lhs, k_rhs, v1_lhs, v1_rhs,
// ...) scalars and returns pred[]; the result is the operands' shapes (a tuple when > 1).
absl::StatusOr<Shape> InferSortShape(const Instruction& instruction) {
  const int64_t n = instruction.operand_count();
  if (n < 1) return InferError(instruction, "at least 1 operand", "0");
  PERFSIM_ASSIGN_OR_RETURN(std::vector<const Shape*> operands,
                           SameDimensionArrays(instruction, 0, n, "operand"));
  PERFSIM_RETURN_IF_ERROR(SingleDimension(instruction, operands[0]->rank()).status());
  PERFSIM_ASSIGN_OR_RETURN(const Computation* comparator,
                           RequireComputation(instruction, instruction.to_apply(), "to_apply"));
  if (comparator->parameter_count() != 2 * n) {
    return InferError(instruction,
                      absl::StrCat("comparator ", comparator->name(), " taking ", 2 * n,
                                   " scalar parameters (2 per operand)"),
                      absl::StrCat(comparator->parameter_count()));
  }
  for (int64_t i = 0; i < 2 * n; ++i) {
    const Instruction* p = comparator->parameter(i);
    const PrimitiveType type = operands[i / 2]->element_type();
    if (p == nullptr || !p->shape().IsScalar() || p->shape().element_type() != type) {
      return InferError(
          instruction,
          absl::StrCat("comparator parameter ", i, " of shape ", PrimitiveTypeName(type), "[]"),
          p == nullptr ? "none" : ShapeText(p->shape()));
    }
  }
  const Shape& root = comparator->root()->shape();
  if (!root.IsScalar() || root.element_type() != PrimitiveType::kPred) {
    return InferError(instruction,
                      absl::StrCat("comparator ", comparator->name(), " returning pred[]"),
                      ShapeText(root));
  }
  std::vector<Shape> results;
  for (const Shape* s : operands) results.push_back(*s);
  return TupleIfMany(std::move(results));
}

// topk(x), k=K: (values x[..., K], s32 indices [..., K]) along the last dimension.
absl::StatusOr<Shape> InferTopKShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  if (operand->rank() < 1) {
    return InferError(instruction, "an operand of rank >= 1", ShapeText(*operand));
  }
  const std::optional<int64_t>& k = instruction.attributes().k;
  if (!k.has_value()) return InferError(instruction, "k=", "none");
  const int64_t last = operand->dimensions().back();
  if (*k < 0 || *k > last) {
    return InferError(instruction, absl::StrCat("k in [0, ", last, "]"), absl::StrCat(*k));
  }
  Shape values = ArrayLike(*operand, operand->element_type());
  values.set_dimensions(operand->rank() - 1, *k);
  values.set_dynamic_dimension(operand->rank() - 1, false);
  Shape indices = ArrayLike(values, PrimitiveType::kS32);
  return Shape::Tuple({std::move(values), std::move(indices)});
}

// ------------------------------------------------------------------------- dynamic shapes

absl::StatusOr<Shape> InferGetDimensionSizeShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_RETURN_IF_ERROR(SingleDimension(instruction, operand->rank()).status());
  return Shape::Scalar(PrimitiveType::kS32);
}

absl::StatusOr<Shape> InferSetDimensionSizeShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const Shape& size = instruction.operand(1)->shape();
  if (!size.IsScalar() || size.element_type() != PrimitiveType::kS32) {
    return InferError(instruction, "an s32[] size", ShapeText(size));
  }
  PERFSIM_ASSIGN_OR_RETURN(int64_t dim, SingleDimension(instruction, operand->rank()));
  Shape result = ArrayLike(*operand, operand->element_type());
  result.set_dynamic_dimension(dim, true);
  return result;
}

// dynamic-reshape(x, size_0, ..., size_{r-1}): the declared shape gives the bounds.
absl::StatusOr<Shape> InferDynamicReshapeShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const Shape& declared = instruction.shape();
  if (!declared.IsArray()) {
    return InferError(instruction, "an array result shape", ShapeText(declared));
  }
  if (instruction.operand_count() != declared.rank() + 1) {
    return InferError(instruction,
                      absl::StrCat(declared.rank() + 1,
                                   " operands (operand and one size per "
                                   "result dimension)"),
                      absl::StrCat(instruction.operand_count()));
  }
  for (int64_t i = 1; i < instruction.operand_count(); ++i) {
    const Shape& size = instruction.operand(i)->shape();
    if (!size.IsScalar() || !IsInteger(size.element_type())) {
      return InferError(instruction, absl::StrCat("an integer scalar size as operand ", i),
                        ShapeText(size));
    }
  }
  return ArrayLike(declared, operand->element_type());
}

}  // namespace perfsim
