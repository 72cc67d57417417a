// gather and scatter with XLA's full dimension numbers (including operand/input batching
// dimensions).
//
// gather: every start index is clamped so the whole slice lies inside the operand
//   (start = clamp(start, 0, dim - slice_size)), as XLA defines it.
// scatter: an update window whose start would put any part of it outside the operand is
//   skipped entirely (XLA's and JAX's default "drop" behaviour). Windows are applied in
//   row-major order of the scatter indices, elements of a window in row-major order, so
//   duplicate indices combine sequentially: out = f(f(out, u0), u1) ...
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

bool Contains(absl::Span<const int64_t> v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The index space of an indices array without its index-vector dimension, and how to read the
// index vector at one point of it.
struct IndexSpace {
  std::vector<int64_t> batch_dims;        // dims of the indices array except index_vector_dim
  std::vector<int64_t> batch_to_indices;  // batch dim j -> dim of the indices array
  int64_t index_vector_dim = 0;
  int64_t vector_size = 1;
  std::vector<int64_t> strides;  // row-major strides of the indices array

  // Element k of the index vector at batch point `point`.
  int64_t Read(const Literal& indices, absl::Span<const int64_t> point, int64_t k) const {
    int64_t linear = 0;
    for (size_t j = 0; j < point.size(); ++j) linear += point[j] * strides[batch_to_indices[j]];
    if (index_vector_dim < static_cast<int64_t>(strides.size()))
      linear += k * strides[index_vector_dim];
    return indices.GetAsInt64(linear);
  }
};

absl::StatusOr<IndexSpace> MakeIndexSpace(const Shape& indices, int64_t index_vector_dim) {
  IndexSpace s;
  s.index_vector_dim = index_vector_dim;
  if (index_vector_dim < 0 || index_vector_dim > indices.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("expected index_vector_dim in [0, ",
                                                   indices.rank(), "]; got ", index_vector_dim));
  }
  for (int64_t d = 0; d < indices.rank(); ++d) {
    if (d == index_vector_dim) continue;
    s.batch_dims.push_back(indices.dimensions(d));
    s.batch_to_indices.push_back(d);
  }
  s.vector_size = index_vector_dim < indices.rank() ? indices.dimensions(index_vector_dim) : 1;
  s.strides = RowMajorStrides(indices.dimensions());
  return s;
}

// Position of indices-array dimension `dim` among the batch dims (dims without the index
// vector dim).
int64_t BatchPosition(const IndexSpace& s, int64_t dim) {
  for (size_t j = 0; j < s.batch_to_indices.size(); ++j) {
    if (s.batch_to_indices[j] == dim) return static_cast<int64_t>(j);
  }
  return -1;
}

}  // namespace

absl::StatusOr<Value> EvalGather(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands) {
  const auto& dn_attr = instruction.attributes().gather_dimension_numbers;
  if (!dn_attr.has_value()) return absl::InvalidArgumentError("expected gather dimension numbers");
  const GatherDimensionNumbers& dn = *dn_attr;
  const Literal& operand = operands[0]->array();
  const Literal& indices = operands[1]->array();
  const Shape& os = operand.shape();
  const std::vector<int64_t>& slice_sizes = instruction.attributes().gather_slice_sizes;
  if (static_cast<int64_t>(slice_sizes.size()) != os.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", os.rank(), " slice_sizes; got ", slice_sizes.size()));
  }
  PERFSIM_ASSIGN_OR_RETURN(IndexSpace space, MakeIndexSpace(indices.shape(), dn.index_vector_dim));
  if (space.vector_size != static_cast<int64_t>(dn.start_index_map.size())) {
    return absl::InvalidArgumentError(absl::StrCat("expected index vectors of ",
                                                   dn.start_index_map.size(), " elements; got ",
                                                   space.vector_size));
  }
  // Operand dims that form the slice window (offset dims of the output), in order.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < os.rank(); ++d) {
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d)) {
      window_operand_dims.push_back(d);
    }
  }
  const Shape& out_shape = instruction.shape();
  if (window_operand_dims.size() != dn.offset_dims.size() ||
      out_shape.rank() != static_cast<int64_t>(space.batch_dims.size() + dn.offset_dims.size())) {
    return absl::InvalidArgumentError(absl::StrCat("expected a result of rank ",
                                                   space.batch_dims.size() + dn.offset_dims.size(),
                                                   "; got ", out_shape.ToString(false)));
  }
  std::vector<int64_t> out_batch_dims;
  for (int64_t d = 0; d < out_shape.rank(); ++d) {
    if (!Contains(dn.offset_dims, d)) out_batch_dims.push_back(d);
  }
  for (int64_t d : dn.start_index_map) {
    if (d < 0 || d >= os.rank())
      return absl::InvalidArgumentError("expected start_index_map within the operand");
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(out_shape));
  const std::vector<int64_t> op_strides = RowMajorStrides(os.dimensions());
  const std::vector<int64_t> out_strides = RowMajorStrides(out_shape.dimensions());
  std::vector<int64_t> box, src_strides, dst_strides;
  for (size_t j = 0; j < window_operand_dims.size(); ++j) {
    box.push_back(slice_sizes[window_operand_dims[j]]);
    src_strides.push_back(op_strides[window_operand_dims[j]]);
    dst_strides.push_back(out_strides[dn.offset_dims[j]]);
  }
  const int64_t bytes = ByteWidth(os.element_type());
  std::vector<int64_t> point(space.batch_dims.size(), 0);
  if (ElementCountOf(space.batch_dims) == 0) return Value::Array(std::move(out));
  do {
    std::vector<int64_t> start(os.rank(), 0);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      start[dn.start_index_map[k]] = space.Read(indices, point, static_cast<int64_t>(k));
    }
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      start[dn.operand_batching_dims[i]] =
          point[BatchPosition(space, dn.start_indices_batching_dims[i])];
    }
    int64_t src = 0;
    for (int64_t d = 0; d < os.rank(); ++d) {
      start[d] = std::clamp<int64_t>(start[d], 0, os.dimensions(d) - slice_sizes[d]);
      src += start[d] * op_strides[d];
    }
    int64_t dst = 0;
    for (size_t j = 0; j < point.size(); ++j) dst += point[j] * out_strides[out_batch_dims[j]];
    StridedCopy(operand.data().data(), src, src_strides, out->mutable_data().data(), dst,
                dst_strides, box, bytes);
  } while (NextIndex(space.batch_dims, &point));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalScatter(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  const auto& dn_attr = instruction.attributes().scatter_dimension_numbers;
  if (!dn_attr.has_value()) return absl::InvalidArgumentError("expected scatter dimension numbers");
  const ScatterDimensionNumbers& dn = *dn_attr;
  const Computation* f = instruction.to_apply();
  if (f == nullptr) return absl::InvalidArgumentError("expected to_apply");
  if (operands.size() < 3 || operands.size() % 2 != 1) {
    return absl::InvalidArgumentError("expected N operands, indices and N updates");
  }
  const int64_t n = static_cast<int64_t>(operands.size() - 1) / 2;
  const Literal& indices = operands[n]->array();
  const Shape& os = operands[0]->array_shape();
  const Shape& us = operands[n + 1]->array_shape();
  PERFSIM_ASSIGN_OR_RETURN(IndexSpace space, MakeIndexSpace(indices.shape(), dn.index_vector_dim));
  if (space.vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size())) {
    return absl::InvalidArgumentError(absl::StrCat("expected index vectors of ",
                                                   dn.scatter_dims_to_operand_dims.size(),
                                                   " elements; got ", space.vector_size));
  }
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < os.rank(); ++d) {
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d)) {
      window_operand_dims.push_back(d);
    }
  }
  std::vector<int64_t> update_scatter_dims;
  for (int64_t d = 0; d < us.rank(); ++d) {
    if (!Contains(dn.update_window_dims, d)) update_scatter_dims.push_back(d);
  }
  if (window_operand_dims.size() != dn.update_window_dims.size() ||
      update_scatter_dims.size() != space.batch_dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected updates of rank ", space.batch_dims.size() + window_operand_dims.size(), "; got ",
        us.ToString(false)));
  }
  for (size_t j = 0; j < update_scatter_dims.size(); ++j) {
    if (us.dimensions(update_scatter_dims[j]) != space.batch_dims[j]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected update scatter dimension ", update_scatter_dims[j], " to have size ",
          space.batch_dims[j], " like the indices; got ", us.dimensions(update_scatter_dims[j])));
    }
  }
  std::vector<std::shared_ptr<Literal>> outs;
  for (int64_t k = 0; k < n; ++k) {
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(operands[k]->array_shape()));
    std::memcpy(out->mutable_data().data(), operands[k]->data(),
                operands[k]->array().data().size());
    outs.push_back(std::move(out));
  }
  // Window element w: its offset in the operand and in the updates, relative to the window's
  // start.
  const std::vector<int64_t> op_strides = RowMajorStrides(os.dimensions());
  const std::vector<int64_t> up_strides = RowMajorStrides(us.dimensions());
  std::vector<int64_t> window_size;
  for (int64_t d : dn.update_window_dims) window_size.push_back(us.dimensions(d));
  const int64_t window_count = ElementCountOf(window_size);
  std::vector<int64_t> op_offset, up_offset;
  if (window_count > 0) {
    std::vector<int64_t> w(window_size.size(), 0);
    do {
      int64_t o = 0, u = 0;
      for (size_t j = 0; j < w.size(); ++j) {
        o += w[j] * op_strides[window_operand_dims[j]];
        u += w[j] * up_strides[dn.update_window_dims[j]];
      }
      op_offset.push_back(o);
      up_offset.push_back(u);
    } while (NextIndex(window_size, &w));
  }
  // Full window extent per operand dimension (1 for inserted and batching dims).
  std::vector<int64_t> extent(os.rank(), 1);
  for (size_t j = 0; j < window_operand_dims.size(); ++j)
    extent[window_operand_dims[j]] = window_size[j];

  const std::optional<BinaryOp> op = MatchBinaryComputation(*f);
  const bool assign = ReturnsSecondParameter(*f) && n == 1;
  const PrimitiveType type = os.element_type();
  std::vector<Value> args(2 * n);

  // Applies one update element: out[o] = f(out[o], update[u]) for every operand k.
  auto apply_generic = [&](int64_t o, int64_t u) -> absl::Status {
    for (int64_t k = 0; k < n; ++k) {
      PERFSIM_ASSIGN_OR_RETURN(args[k], ElementAsScalar(ev, *outs[k], o));
      PERFSIM_ASSIGN_OR_RETURN(args[n + k], ElementAsScalar(ev, operands[n + 1 + k]->array(), u));
    }
    PERFSIM_ASSIGN_OR_RETURN(Value r, ev.CallScalar(*f, args));
    if (n == 1 && r.is_array()) return StoreScalar(r, outs[0].get(), o);
    if (!r.is_tuple() || static_cast<int64_t>(r.elements().size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("expected ", n, " results from ", f->name()));
    }
    for (int64_t k = 0; k < n; ++k)
      PERFSIM_RETURN_IF_ERROR(StoreScalar(r.element(k), outs[k].get(), o));
    return absl::OkStatus();
  };

  std::vector<int64_t> point(space.batch_dims.size(), 0);
  if (ElementCountOf(space.batch_dims) == 0 || window_count == 0) {
    std::vector<Value> results;
    for (auto& out : outs) results.push_back(Value::Array(std::move(out)));
    if (n == 1 && !instruction.shape().IsTuple()) return std::move(results[0]);
    return Value::Tuple(std::move(results));
  }
  auto native_kernel = [&](auto traits, auto op_constant, int64_t o_base, int64_t u_base) {
    using T = decltype(traits);
    constexpr BinaryOp kOp = decltype(op_constant)::value;
    uint8_t* out = outs[0]->mutable_data().data();
    const uint8_t* upd = operands[2]->data();
    for (int64_t w = 0; w < window_count; ++w) {
      const int64_t o = o_base + op_offset[w];
      T::Store(out, o, ApplyBinary<T, kOp>(T::Load(out, o), T::Load(upd, u_base + up_offset[w])));
    }
  };
  const int64_t bytes = ByteWidth(type);
  do {
    std::vector<int64_t> start(os.rank(), 0);
    for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
      const int64_t d = dn.scatter_dims_to_operand_dims[k];
      if (d < 0 || d >= os.rank()) {
        return absl::InvalidArgumentError(
            "expected scatter_dims_to_operand_dims within the operand");
      }
      start[d] = space.Read(indices, point, static_cast<int64_t>(k));
    }
    for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
      start[dn.input_batching_dims[i]] =
          point[BatchPosition(space, dn.scatter_indices_batching_dims[i])];
    }
    // Indices are data: start + extent is checked without overflow (an s64 index near the
    // int64 limit must drop the window, not wrap into the operand), and the offset is only
    // formed for a window inside the operand.
    bool in_bounds = true;
    for (int64_t d = 0; d < os.rank(); ++d) {
      int64_t end = 0;
      if (start[d] < 0 || !TryAdd(start[d], extent[d], &end) || end > os.dimensions(d)) {
        in_bounds = false;
      }
    }
    int64_t o_base = 0;
    for (int64_t d = 0; in_bounds && d < os.rank(); ++d) o_base += start[d] * op_strides[d];
    if (in_bounds) {
      int64_t u_base = 0;
      for (size_t j = 0; j < point.size(); ++j)
        u_base += point[j] * up_strides[update_scatter_dims[j]];
      if (assign) {
        for (int64_t w = 0; w < window_count; ++w) {
          std::memcpy(outs[0]->mutable_data().data() + (o_base + op_offset[w]) * bytes,
                      operands[2]->data() + (u_base + up_offset[w]) * bytes, bytes);
        }
      } else if (op.has_value() && n == 1 && f->root()->shape().element_type() == type) {
        PERFSIM_RETURN_IF_ERROR(DispatchElementType(type, f->name(), [&](auto traits) {
          PERFSIM_RETURN_IF_ERROR(CheckBinaryOpType(*op, decltype(traits)::kKind, type));
          return DispatchBinaryOp(*op, [&](auto op_constant) {
            native_kernel(traits, op_constant, o_base, u_base);
            return absl::OkStatus();
          });
        }));
      } else {
        for (int64_t w = 0; w < window_count; ++w) {
          PERFSIM_RETURN_IF_ERROR(apply_generic(o_base + op_offset[w], u_base + up_offset[w]));
        }
      }
    }
  } while (NextIndex(space.batch_dims, &point));
  std::vector<Value> results;
  for (auto& out : outs) results.push_back(Value::Array(std::move(out)));
  if (n == 1 && !instruction.shape().IsTuple()) return std::move(results[0]);
  return Value::Tuple(std::move(results));
}

}  // namespace interp
}  // namespace perfsim
