// Shape inference for gather and scatter with XLA's full dimension numbers, including the
// batching dimensions (operand_batching_dims / start_indices_batching_dims for gather,
// input_batching_dims / scatter_indices_batching_dims for scatter) that take_along_axis and
// batched MoE permutations produce.
//
// Start indices are viewed with index_vector_dim appended as a size-1 dimension when it equals
// their rank (XLA's convention); the remaining index dimensions are the "batch" dimensions of
// the result (gather) or of the updates (scatter).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayOperand;
using infer_internal::CheckDimensionList;
using infer_internal::CheckSortedDimensionList;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::ShapeText;

namespace {

bool Contains(absl::Span<const int64_t> list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The start-indices dimensions with index_vector_dim made explicit.
absl::StatusOr<std::vector<int64_t>> ExpandedIndexDimensions(const Instruction& instruction,
                                                             const Shape& indices,
                                                             int64_t index_vector_dim) {
  if (!IsInteger(indices.element_type())) {
    return InferError(instruction, "integer start indices", ShapeText(indices));
  }
  if (index_vector_dim < 0 || index_vector_dim > indices.rank()) {
    return InferError(instruction, absl::StrCat("index_vector_dim in [0, ", indices.rank(), "]"),
                      absl::StrCat(index_vector_dim));
  }
  std::vector<int64_t> dims = indices.dimensions();
  if (index_vector_dim == indices.rank()) dims.push_back(1);
  return dims;
}

// The index dimensions other than index_vector_dim, in order.
std::vector<int64_t> IndexBatchSizes(absl::Span<const int64_t> expanded, int64_t index_vector_dim) {
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < static_cast<int64_t>(expanded.size()); ++d) {
    if (d != index_vector_dim) sizes.push_back(expanded[d]);
  }
  return sizes;
}

// Checks the index map (start_index_map / scatter_dims_to_operand_dims) and the pair of
// batching-dimension lists shared by gather and scatter.
absl::Status CheckIndexing(const Instruction& instruction, const Shape& operand,
                           absl::Span<const int64_t> expanded, int64_t index_vector_dim,
                           absl::Span<const int64_t> index_map, absl::string_view index_map_name,
                           absl::Span<const int64_t> removed, absl::string_view removed_name,
                           absl::Span<const int64_t> operand_batching,
                           absl::string_view operand_batching_name,
                           absl::Span<const int64_t> indices_batching,
                           absl::string_view indices_batching_name) {
  const int64_t rank = operand.rank();
  const int64_t expanded_rank = static_cast<int64_t>(expanded.size());
  const int64_t index_vector_size = expanded[index_vector_dim];
  if (static_cast<int64_t>(index_map.size()) != index_vector_size) {
    return InferError(instruction,
                      absl::StrCat(index_map_name, " with one entry per index vector element (",
                                   index_vector_size, ")"),
                      ListText(index_map));
  }
  PERFSIM_RETURN_IF_ERROR(CheckDimensionList(instruction, index_map, rank, index_map_name));
  PERFSIM_RETURN_IF_ERROR(CheckSortedDimensionList(instruction, removed, rank, removed_name));
  PERFSIM_RETURN_IF_ERROR(
      CheckSortedDimensionList(instruction, operand_batching, rank, operand_batching_name));
  for (int64_t d : operand_batching) {
    if (Contains(removed, d) || Contains(index_map, d)) {
      return InferError(instruction,
                        absl::StrCat(operand_batching_name, " disjoint from ", removed_name,
                                     " and ", index_map_name),
                        absl::StrCat("dimension ", d, " in both"));
    }
  }
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, indices_batching, expanded_rank, indices_batching_name));
  if (indices_batching.size() != operand_batching.size()) {
    return InferError(instruction,
                      absl::StrCat(indices_batching_name, " of the size of ", operand_batching_name,
                                   " ", ListText(operand_batching)),
                      ListText(indices_batching));
  }
  for (size_t i = 0; i < indices_batching.size(); ++i) {
    if (indices_batching[i] == index_vector_dim) {
      return InferError(
          instruction,
          absl::StrCat(indices_batching_name, " without index_vector_dim ", index_vector_dim),
          ListText(indices_batching));
    }
    const int64_t operand_size = operand.dimensions(operand_batching[i]);
    const int64_t index_size = expanded[indices_batching[i]];
    if (operand_size != index_size) {
      return InferError(instruction,
                        absl::StrCat("operand batching dimension ", operand_batching[i], " (size ",
                                     operand_size, ") to equal indices batching dimension ",
                                     indices_batching[i], " (size ", index_size, ")"),
                        absl::StrCat(operand_size, " vs ", index_size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Shape> InferGatherShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* indices, ArrayOperand(instruction, 1, "start indices"));
  const InstructionAttributes& attrs = instruction.attributes();
  if (!attrs.gather_dimension_numbers.has_value()) {
    return InferError(instruction, "gather dimension numbers", "none");
  }
  const GatherDimensionNumbers& dn = *attrs.gather_dimension_numbers;
  const std::vector<int64_t>& slice_sizes = attrs.gather_slice_sizes;
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                           ExpandedIndexDimensions(instruction, *indices, dn.index_vector_dim));
  PERFSIM_RETURN_IF_ERROR(CheckIndexing(
      instruction, *operand, expanded, dn.index_vector_dim, dn.start_index_map, "start_index_map",
      dn.collapsed_slice_dims, "collapsed_slice_dims", dn.operand_batching_dims,
      "operand_batching_dims", dn.start_indices_batching_dims, "start_indices_batching_dims"));
  if (static_cast<int64_t>(slice_sizes.size()) != operand->rank()) {
    return InferError(
        instruction,
        absl::StrCat(operand->rank(), " slice_sizes (the rank of ", ShapeText(*operand), ")"),
        ListText(slice_sizes));
  }
  for (int64_t i = 0; i < operand->rank(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand->dimensions(i)) {
      return InferError(instruction,
                        absl::StrCat("slice size ", i, " in [0, ", operand->dimensions(i), "]"),
                        absl::StrCat(slice_sizes[i]));
    }
    if ((Contains(dn.collapsed_slice_dims, i) || Contains(dn.operand_batching_dims, i)) &&
        slice_sizes[i] > 1) {
      return InferError(instruction,
                        absl::StrCat("slice size <= 1 for collapsed or batching dimension ", i),
                        absl::StrCat(slice_sizes[i]));
    }
  }
  const std::vector<int64_t> batch_sizes = IndexBatchSizes(expanded, dn.index_vector_dim);
  const int64_t output_rank = static_cast<int64_t>(dn.offset_dims.size() + batch_sizes.size());
  PERFSIM_RETURN_IF_ERROR(
      CheckSortedDimensionList(instruction, dn.offset_dims, output_rank, "offset_dims"));
  std::vector<int64_t> offset_sizes;
  for (int64_t i = 0; i < operand->rank(); ++i) {
    if (!Contains(dn.collapsed_slice_dims, i) && !Contains(dn.operand_batching_dims, i)) {
      offset_sizes.push_back(slice_sizes[i]);
    }
  }
  if (offset_sizes.size() != dn.offset_dims.size()) {
    return InferError(instruction,
                      absl::StrCat(offset_sizes.size(),
                                   " offset_dims (operand rank minus collapsed and batching "
                                   "dimensions)"),
                      ListText(dn.offset_dims));
  }
  std::vector<int64_t> dims;
  size_t next_offset = 0;
  size_t next_batch = 0;
  for (int64_t i = 0; i < output_rank; ++i) {
    if (Contains(dn.offset_dims, i)) {
      dims.push_back(offset_sizes[next_offset++]);
    } else {
      dims.push_back(batch_sizes[next_batch++]);
    }
  }
  return Shape::Array(operand->element_type(), dims);
}

// scatter(operand_0..operand_{N-1}, indices, update_0..update_{N-1}), to_apply=r.
absl::StatusOr<Shape> InferScatterShape(const Instruction& instruction) {
  const int64_t count = instruction.operand_count();
  if (count < 3 || count % 2 != 1) {
    return InferError(instruction, "an odd number (>= 3) of operands: operands, indices, updates",
                      absl::StrCat(count));
  }
  const int64_t n = (count - 1) / 2;
  std::vector<const Shape*> operands;
  std::vector<const Shape*> updates;
  for (int64_t i = 0; i < n; ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* o,
                             ArrayOperand(instruction, i, absl::StrCat("operand ", i)));
    PERFSIM_ASSIGN_OR_RETURN(const Shape* u,
                             ArrayOperand(instruction, n + 1 + i, absl::StrCat("update ", i)));
    operands.push_back(o);
    if (operands[0]->dimensions() != o->dimensions()) {
      return InferError(instruction,
                        absl::StrCat("operands with the dimensions of ", ShapeText(*operands[0])),
                        ShapeText(*o));
    }
    updates.push_back(u);
    if (updates[0]->dimensions() != u->dimensions()) {
      return InferError(instruction,
                        absl::StrCat("updates with the dimensions of ", ShapeText(*updates[0])),
                        ShapeText(*u));
    }
  }
  const Shape& operand = *operands[0];
  const Shape& update = *updates[0];
  PERFSIM_ASSIGN_OR_RETURN(const Shape* indices, ArrayOperand(instruction, n, "scatter indices"));
  const InstructionAttributes& attrs = instruction.attributes();
  if (!attrs.scatter_dimension_numbers.has_value()) {
    return InferError(instruction, "scatter dimension numbers", "none");
  }
  const ScatterDimensionNumbers& dn = *attrs.scatter_dimension_numbers;
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                           ExpandedIndexDimensions(instruction, *indices, dn.index_vector_dim));
  PERFSIM_RETURN_IF_ERROR(CheckIndexing(
      instruction, operand, expanded, dn.index_vector_dim, dn.scatter_dims_to_operand_dims,
      "scatter_dims_to_operand_dims", dn.inserted_window_dims, "inserted_window_dims",
      dn.input_batching_dims, "input_batching_dims", dn.scatter_indices_batching_dims,
      "scatter_indices_batching_dims"));
  const std::vector<int64_t> scatter_sizes = IndexBatchSizes(expanded, dn.index_vector_dim);
  const int64_t expected_rank =
      static_cast<int64_t>(scatter_sizes.size() + dn.update_window_dims.size());
  if (update.rank() != expected_rank) {
    return InferError(instruction,
                      absl::StrCat("updates of rank ", expected_rank, " (", scatter_sizes.size(),
                                   " scatter dimensions + ", dn.update_window_dims.size(),
                                   " update_window_dims)"),
                      ShapeText(update));
  }
  PERFSIM_RETURN_IF_ERROR(CheckSortedDimensionList(instruction, dn.update_window_dims,
                                                   update.rank(), "update_window_dims"));
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d)) {
      window_operand_dims.push_back(d);
    }
  }
  if (window_operand_dims.size() != dn.update_window_dims.size()) {
    return InferError(instruction,
                      absl::StrCat(window_operand_dims.size(),
                                   " update_window_dims (operand rank minus inserted and batching "
                                   "dimensions)"),
                      ListText(dn.update_window_dims));
  }
  for (size_t k = 0; k < window_operand_dims.size(); ++k) {
    const int64_t u = update.dimensions(dn.update_window_dims[k]);
    const int64_t o = operand.dimensions(window_operand_dims[k]);
    if (u > o) {
      return InferError(
          instruction,
          absl::StrCat("update window dimension ", dn.update_window_dims[k],
                       " <= operand dimension ", window_operand_dims[k], " (size ", o, ")"),
          absl::StrCat(u));
    }
  }
  std::vector<int64_t> update_scatter_sizes;
  for (int64_t d = 0; d < update.rank(); ++d) {
    if (!Contains(dn.update_window_dims, d)) update_scatter_sizes.push_back(update.dimensions(d));
  }
  if (update_scatter_sizes != scatter_sizes) {
    return InferError(instruction,
                      absl::StrCat("update scatter dimensions ", ListText(scatter_sizes),
                                   " (the index dimensions of ", ShapeText(*indices), ")"),
                      absl::StrCat(ListText(update_scatter_sizes), " in ", ShapeText(update)));
  }
  std::vector<PrimitiveType> operand_types;
  std::vector<PrimitiveType> update_types;
  for (int64_t i = 0; i < n; ++i) {
    operand_types.push_back(operands[i]->element_type());
    update_types.push_back(updates[i]->element_type());
  }
  PERFSIM_RETURN_IF_ERROR(infer_internal::CheckReducer(instruction, instruction.to_apply(),
                                                       "to_apply", operand_types, update_types)
                              .status());
  std::vector<Shape> results;
  for (const Shape* o : operands) results.push_back(*o);
  return infer_internal::TupleIfMany(std::move(results));
}

}  // namespace perfsim
