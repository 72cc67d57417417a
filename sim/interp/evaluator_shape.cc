// Data movement without arithmetic: broadcast, reshape, bitcast, transpose, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse. All are one StridedCopy
// (array_util.h) over bytes, so they are independent of the element type.
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/array_util.h"
#include "sim/interp/evaluator.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

int64_t Bytes(const Shape& shape) { return ByteWidth(shape.element_type()); }

absl::StatusOr<std::shared_ptr<Literal>> AllocateArray(DeviceEvaluator& ev, PrimitiveType type,
                                                       absl::Span<const int64_t> dims) {
  return ev.Allocate(Shape::Array(type, dims));
}

// Start indices of dynamic-slice / dynamic-update-slice, clamped as XLA does so the block of
// `sizes` stays inside `dims`: start = clamp(start, 0, dim - size).
absl::StatusOr<std::vector<int64_t>> ClampedStarts(OperandValues operands, int64_t first,
                                                   absl::Span<const int64_t> dims,
                                                   absl::Span<const int64_t> sizes) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> starts;
  const int64_t given = static_cast<int64_t>(operands.size()) - first;
  if (given == 1 && operands[first]->is_array() && operands[first]->array_shape().rank() == 1 &&
      operands[first]->array().element_count() == rank) {
    // XLA's older form: one rank-1 index array (on a rank-1 operand too: s32[1]).
    for (int64_t d = 0; d < rank; ++d) starts.push_back(operands[first]->array().GetAsInt64(d));
  } else if (given == rank) {
    for (int64_t d = 0; d < rank; ++d) starts.push_back(ScalarAsInt64(*operands[first + d]));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", rank, " scalar start indices; got ", given));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] > dims[d] || sizes[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected slice size ", sizes[d], " within dimension ", d, " of size ", dims[d]));
    }
    starts[d] = std::clamp<int64_t>(starts[d], 0, dims[d] - sizes[d]);
  }
  return starts;
}

}  // namespace

absl::StatusOr<Value> EvalBroadcast(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const Shape& out_shape = instruction.shape();
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (static_cast<int64_t>(dims.size()) != in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", in.rank(), " broadcast dimensions; got ", dims.size()));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> src_strides(out_shape.rank(), 0);
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (dims[i] < 0 || dims[i] >= out_shape.rank() ||
        out_shape.dimensions(dims[i]) != in.dimensions(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected operand dimension ", i, " to map to an output dimension of equal size"));
    }
    src_strides[dims[i]] = in_strides[i];
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), out_shape.dimensions()));
  StridedCopy(operands[0]->data(), 0, src_strides, out->mutable_data().data(), 0,
              RowMajorStrides(out_shape.dimensions()), out_shape.dimensions(), Bytes(in));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalReshape(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const Shape& out_shape = instruction.shape();
  if (in.ElementCount() != out_shape.ElementCount()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", in.ElementCount(), " elements; got ", out_shape.ToString(false)));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), out_shape.dimensions()));
  std::memcpy(out->mutable_data().data(), operands[0]->data(), operands[0]->array().data().size());
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalBitcast(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  // A bitcast reinterprets the physical buffer: walk the operand in its layout's
  // major-to-minor order and refill the result in its own. With default layouts on both
  // sides this is a reshape. Tiles are ignored (the buffer is treated as untiled).
  const Shape& in = operands[0]->array_shape();
  const Shape& out_shape = instruction.shape();
  if (in.ElementCount() != out_shape.ElementCount() ||
      ByteWidth(in.element_type()) != ByteWidth(out_shape.element_type())) {
    return absl::InvalidArgumentError(absl::StrCat("expected the same byte size; got ",
                                                   in.ToString(false), " -> ",
                                                   out_shape.ToString(false)));
  }
  auto major_to_minor = [](const Shape& s) {
    std::vector<int64_t> order = s.EffectiveLayout().minor_to_major;
    std::reverse(order.begin(), order.end());
    return order;
  };
  // Runtime values are row-major; the layout that describes the operand's bytes is the one
  // its producer declares.
  const std::vector<int64_t> in_order = major_to_minor(instruction.operand(0)->shape());
  const std::vector<int64_t> out_order = major_to_minor(out_shape);
  if (static_cast<int64_t>(in_order.size()) != in.rank() ||
      static_cast<int64_t>(out_order.size()) != out_shape.rank()) {
    return absl::InvalidArgumentError("expected layouts matching the ranks");
  }
  // Physical copy of the operand: dimension k of it is logical dimension in_order[k].
  std::vector<int64_t> phys_dims(in.rank());
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> phys_src_strides(in.rank());
  for (int64_t k = 0; k < in.rank(); ++k) {
    phys_dims[k] = in.dimensions(in_order[k]);
    phys_src_strides[k] = in_strides[in_order[k]];
  }
  const int64_t bytes = Bytes(in);
  std::vector<uint8_t> physical(operands[0]->array().data().size());
  StridedCopy(operands[0]->data(), 0, phys_src_strides, physical.data(), 0,
              RowMajorStrides(phys_dims), phys_dims, bytes);
  // The result's physical array has dims out_shape[out_order[k]]; logical dimension d of the
  // result is physical dimension k where out_order[k] == d.
  std::vector<int64_t> out_phys_dims(out_shape.rank());
  for (int64_t k = 0; k < out_shape.rank(); ++k)
    out_phys_dims[k] = out_shape.dimensions(out_order[k]);
  const std::vector<int64_t> out_phys_strides = RowMajorStrides(out_phys_dims);
  std::vector<int64_t> src_strides(out_shape.rank());
  for (int64_t k = 0; k < out_shape.rank(); ++k) src_strides[out_order[k]] = out_phys_strides[k];
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, out_shape.element_type(), out_shape.dimensions()));
  StridedCopy(physical.data(), 0, src_strides, out->mutable_data().data(), 0,
              RowMajorStrides(out_shape.dimensions()), out_shape.dimensions(), bytes);
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalTranspose(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const std::vector<int64_t> perm =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i) {
    if (sorted[i] != i || static_cast<int64_t>(sorted.size()) != in.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("expected a permutation of ", in.rank(),
                                                     " dimensions; got {", absl::StrJoin(perm, ","),
                                                     "}"));
    }
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> out_dims(in.rank());
  std::vector<int64_t> src_strides(in.rank());
  for (int64_t i = 0; i < in.rank(); ++i) {
    out_dims[i] = in.dimensions(perm[i]);
    src_strides[i] = in_strides[perm[i]];
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), out_dims));
  StridedCopy(operands[0]->data(), 0, src_strides, out->mutable_data().data(), 0,
              RowMajorStrides(out_dims), out_dims, Bytes(in));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const auto& slice = instruction.attributes().slice;
  if (!slice.has_value() || static_cast<int64_t>(slice->size()) != in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected slice={...} for each of ", in.rank(), " dimensions"));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  std::vector<int64_t> out_dims(in.rank());
  std::vector<int64_t> src_strides(in.rank());
  int64_t offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const SliceDimension& s = (*slice)[d];
    if (s.start < 0 || s.limit > in.dimensions(d) || s.start > s.limit || s.stride < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected [start:limit:stride] within [0, ", in.dimensions(d), "] for dimension ", d,
          "; got [", s.start, ":", s.limit, ":", s.stride, "]"));
    }
    out_dims[d] = (s.limit - s.start + s.stride - 1) / s.stride;
    src_strides[d] = in_strides[d] * s.stride;
    offset += s.start * in_strides[d];
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), out_dims));
  StridedCopy(operands[0]->data(), offset, src_strides, out->mutable_data().data(), 0,
              RowMajorStrides(out_dims), out_dims, Bytes(in));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalDynamicSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                       OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const std::vector<int64_t> sizes =
      instruction.attributes().dynamic_slice_sizes.value_or(instruction.shape().dimensions());
  if (static_cast<int64_t>(sizes.size()) != in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", in.rank(), " slice sizes; got ", sizes.size()));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> starts,
                           ClampedStarts(operands, 1, in.dimensions(), sizes));
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  int64_t offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) offset += starts[d] * in_strides[d];
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), sizes));
  StridedCopy(operands[0]->data(), offset, in_strides, out->mutable_data().data(), 0,
              RowMajorStrides(sizes), sizes, Bytes(in));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalDynamicUpdateSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                             OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const Shape& update = operands[1]->array_shape();
  if (update.rank() != in.rank() || update.element_type() != in.element_type()) {
    return absl::InvalidArgumentError(absl::StrCat("expected an update like ", in.ToString(false),
                                                   "; got ", update.ToString(false)));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> starts,
                           ClampedStarts(operands, 2, in.dimensions(), update.dimensions()));
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  int64_t offset = 0;
  for (int64_t d = 0; d < in.rank(); ++d) offset += starts[d] * in_strides[d];
  // In place when the operand dies here (DeviceEvaluator::TakeOperandBuffer), as XLA updates
  // it: only the slice is written, instead of a copy of the whole array.
  std::shared_ptr<Literal> out =
      ev.TakeOperandBuffer(0, Shape::Array(in.element_type(), in.dimensions()));
  if (out == nullptr) {
    PERFSIM_ASSIGN_OR_RETURN(out, AllocateArray(ev, in.element_type(), in.dimensions()));
    std::memcpy(out->mutable_data().data(), operands[0]->data(),
                operands[0]->array().data().size());
  }
  StridedCopy(operands[1]->data(), 0, RowMajorStrides(update.dimensions()),
              out->mutable_data().data(), offset, in_strides, update.dimensions(), Bytes(in));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalConcatenate(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands) {
  const auto& dims_attr = instruction.attributes().dimensions;
  if (!dims_attr.has_value() || dims_attr->size() != 1) {
    return absl::InvalidArgumentError("expected dimensions={d}");
  }
  const int64_t dim = (*dims_attr)[0];
  const Shape& first = operands[0]->array_shape();
  if (dim < 0 || dim >= first.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a dimension of ", first.ToString(false), "; got ", dim));
  }
  std::vector<int64_t> out_dims = first.dimensions();
  out_dims[dim] = 0;
  for (const Value* v : operands) {
    const Shape& s = v->array_shape();
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (s.rank() != first.rank() || (d != dim && s.dimensions(d) != first.dimensions(d))) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected operands like ", first.ToString(false), " except in dimension ",
                         dim, "; got ", s.ToString(false)));
      }
    }
    out_dims[dim] += s.dimensions(dim);
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, first.element_type(), out_dims));
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  int64_t at = 0;
  for (const Value* v : operands) {
    const Shape& s = v->array_shape();
    StridedCopy(v->data(), 0, RowMajorStrides(s.dimensions()), out->mutable_data().data(),
                at * out_strides[dim], out_strides, s.dimensions(), Bytes(first));
    at += s.dimensions(dim);
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalPad(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const auto& padding = instruction.attributes().padding;
  if (!padding.has_value() || static_cast<int64_t>(padding->size()) != in.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected padding for each of ", in.rank(), " dimensions"));
  }
  const int64_t rank = in.rank();
  std::vector<int64_t> out_dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = (*padding)[d];
    if (p.interior < 0) return absl::InvalidArgumentError("expected interior padding >= 0");
    const int64_t n = in.dimensions(d);
    out_dims[d] = p.low + p.high + n + std::max<int64_t>(n - 1, 0) * p.interior;
    if (out_dims[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a non-negative padded size in dimension ", d, "; got ", out_dims[d]));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), out_dims));
  const int64_t bytes = Bytes(in);
  uint8_t* o = out->mutable_data().data();
  for (int64_t i = 0; i < out->element_count(); ++i) {
    std::memcpy(o + i * bytes, operands[1]->data(), bytes);
  }
  // The operand elements that land inside the output (negative padding crops).
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions());
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  std::vector<int64_t> box(rank), dst_strides(rank);
  int64_t src_offset = 0, dst_offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = (*padding)[d];
    const int64_t step = p.interior + 1;
    const int64_t n = in.dimensions(d);
    // First i with low + i*step >= 0, last with low + i*step < out_dims[d].
    int64_t first = p.low >= 0 ? 0 : (-p.low + step - 1) / step;
    int64_t last = out_dims[d] - 1 - p.low < 0 ? -1 : (out_dims[d] - 1 - p.low) / step;
    last = std::min(last, n - 1);
    if (last < first) return Value::Array(std::move(out));
    box[d] = last - first + 1;
    dst_strides[d] = out_strides[d] * step;
    src_offset += first * in_strides[d];
    dst_offset += (p.low + first * step) * out_strides[d];
  }
  StridedCopy(operands[0]->data(), src_offset, in_strides, o, dst_offset, dst_strides, box, bytes);
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalReverse(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  const Shape& in = operands[0]->array_shape();
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  std::vector<int64_t> src_strides = RowMajorStrides(in.dimensions());
  int64_t offset = 0;
  for (int64_t d : dims) {
    if (d < 0 || d >= in.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a dimension of ", in.ToString(false), "; got ", d));
    }
    offset += (in.dimensions(d) - 1) * src_strides[d];
    src_strides[d] = -src_strides[d];
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateArray(ev, in.element_type(), in.dimensions()));
  if (in.ElementCount() > 0) {
    StridedCopy(operands[0]->data(), offset, src_strides, out->mutable_data().data(), 0,
                RowMajorStrides(in.dimensions()), in.dimensions(), Bytes(in));
  }
  return Value::Array(std::move(out));
}

}  // namespace interp
}  // namespace perfsim
