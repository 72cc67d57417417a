// sort (multi-operand, arbitrary comparator) and topk.
//
// Sorting is always stable (a merge sort that keeps equal elements in input order), which is a
// valid result for is_stable=false too, and never misbehaves with a comparator that is not a
// strict weak order. Comparators of the form `compare(p[2k], p[2k+1]), direction=LT|GT` run
// natively; others are called per comparison.
#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// Stable bottom-up merge sort of `items` by `less` (used as "right goes before left").
template <typename Less>
void MergeSort(std::vector<int64_t>* items, Less&& less) {
  const int64_t n = static_cast<int64_t>(items->size());
  std::vector<int64_t> buffer(n);
  std::vector<int64_t>* src = items;
  std::vector<int64_t>* dst = &buffer;
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = std::min(lo + width, n);
      const int64_t hi = std::min(lo + 2 * width, n);
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        // Take from the right only when it is strictly less: equal keys keep input order.
        if (less((*src)[j], (*src)[i])) {
          (*dst)[o++] = (*src)[j++];
        } else {
          (*dst)[o++] = (*src)[i++];
        }
      }
      while (i < mid) (*dst)[o++] = (*src)[i++];
      while (j < hi) (*dst)[o++] = (*src)[j++];
    }
    std::swap(src, dst);
  }
  if (src != items) *items = *src;
}

// A native comparator: compare(parameter(2k), parameter(2k+1)) (or with the parameters
// swapped, which flips the direction).
struct NativeComparator {
  int64_t operand = 0;
  ComparisonDirection direction = ComparisonDirection::kLt;
  bool total_order = false;
};

std::optional<NativeComparator> MatchComparator(const Computation& c, int64_t num_operands) {
  const Instruction* root = c.root();
  if (root == nullptr || root->opcode() != Opcode::kCompare ||
      c.parameter_count() != 2 * num_operands) {
    return std::nullopt;
  }
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter) return std::nullopt;
  const int64_t pa = a->attributes().parameter_number.value_or(-1);
  const int64_t pb = b->attributes().parameter_number.value_or(-1);
  if (pa < 0 || pb < 0 || pa / 2 != pb / 2 || pa == pb || !a->shape().IsScalar())
    return std::nullopt;
  const auto& direction = root->attributes().comparison_direction;
  if (!direction.has_value()) return std::nullopt;
  NativeComparator cmp;
  cmp.operand = pa / 2;
  cmp.total_order = root->attributes().comparison_type == "TOTALORDER";
  cmp.direction = *direction;
  if (pa > pb) {
    // compare(p1, p0) with direction D is compare(p0, p1) with D mirrored.
    switch (*direction) {
      case ComparisonDirection::kLt:
        cmp.direction = ComparisonDirection::kGt;
        break;
      case ComparisonDirection::kGt:
        cmp.direction = ComparisonDirection::kLt;
        break;
      case ComparisonDirection::kLe:
        cmp.direction = ComparisonDirection::kGe;
        break;
      case ComparisonDirection::kGe:
        cmp.direction = ComparisonDirection::kLe;
        break;
      case ComparisonDirection::kEq:
      case ComparisonDirection::kNe:
        break;
    }
  }
  return cmp;
}

// Calls f(base, stride, n) for every 1-D line along `dim` of an array of `dims`.
template <typename F>
void ForEachLine(absl::Span<const int64_t> dims, int64_t dim, F&& f) {
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> outer(dims.begin(), dims.end());
  outer[dim] = 1;
  if (ElementCountOf(outer) == 0) return;
  std::vector<int64_t> index(outer.size(), 0);
  do {
    int64_t base = 0;
    for (size_t d = 0; d < index.size(); ++d) base += index[d] * strides[d];
    f(base, strides[dim], dims[dim]);
  } while (NextIndex(outer, &index));
}

}  // namespace

absl::StatusOr<Value> EvalSort(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const Computation* comparator = instruction.to_apply();
  if (comparator == nullptr) return absl::InvalidArgumentError("expected to_apply");
  const auto& dims_attr = instruction.attributes().dimensions;
  const Shape& shape = operands[0]->array_shape();
  const int64_t dim =
      dims_attr.has_value() && !dims_attr->empty() ? (*dims_attr)[0] : shape.rank() - 1;
  if (dim < 0 || dim >= shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a sort dimension of ", shape.ToString(false), "; got ", dim));
  }
  const int64_t n_ops = static_cast<int64_t>(operands.size());
  for (const Value* v : operands) {
    if (v->array_shape().dimensions() != shape.dimensions()) {
      return absl::InvalidArgumentError(absl::StrCat("expected operands of dimensions ",
                                                     shape.ToString(false), "; got ",
                                                     v->array_shape().ToString(false)));
    }
  }
  std::vector<std::shared_ptr<Literal>> outs;
  for (const Value* v : operands) {
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(v->array_shape()));
    outs.push_back(std::move(out));
  }
  const std::optional<NativeComparator> native = MatchComparator(*comparator, n_ops);
  absl::Status status = absl::OkStatus();
  std::vector<Value> args(2 * n_ops);
  std::vector<int64_t> order;
  ForEachLine(shape.dimensions(), dim, [&](int64_t base, int64_t stride, int64_t n) {
    if (!status.ok()) return;
    order.resize(n);
    for (int64_t i = 0; i < n; ++i) order[i] = base + i * stride;
    if (native.has_value()) {
      const Literal& keys = operands[native->operand]->array();
      status = DispatchElementType(keys.shape().element_type(), "", [&](auto traits) {
        using T = decltype(traits);
        PERFSIM_RETURN_IF_ERROR(
            CheckCompareType(native->direction, T::kKind, keys.shape().element_type()));
        const uint8_t* data = keys.data().data();
        MergeSort(&order, [&](int64_t x, int64_t y) {
          return ApplyCompare<T>(native->direction, native->total_order, T::Load(data, x),
                                 T::Load(data, y));
        });
        return absl::OkStatus();
      });
    } else {
      MergeSort(&order, [&](int64_t x, int64_t y) {
        if (!status.ok()) return false;
        status = [&]() -> absl::Status {
          for (int64_t k = 0; k < n_ops; ++k) {
            PERFSIM_ASSIGN_OR_RETURN(args[2 * k], ElementAsScalar(ev, operands[k]->array(), x));
            PERFSIM_ASSIGN_OR_RETURN(args[2 * k + 1], ElementAsScalar(ev, operands[k]->array(), y));
          }
          return absl::OkStatus();
        }();
        if (!status.ok()) return false;
        absl::StatusOr<Value> r = ev.CallScalar(*comparator, args);
        if (!r.ok() || !r->is_array()) {
          status = r.ok() ? absl::InvalidArgumentError("expected the comparator to return pred[]")
                          : r.status();
          return false;
        }
        return r->array().GetAsInt64(0) != 0;
      });
    }
    if (!status.ok()) return;
    for (int64_t k = 0; k < n_ops; ++k) {
      const int64_t bytes = ByteWidth(operands[k]->array_shape().element_type());
      const uint8_t* in = operands[k]->data();
      uint8_t* o = outs[k]->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(o + (base + i * stride) * bytes, in + order[i] * bytes, bytes);
      }
    }
  });
  PERFSIM_RETURN_IF_ERROR(status);
  if (n_ops == 1 && !instruction.shape().IsTuple()) return Value::Array(std::move(outs[0]));
  std::vector<Value> results;
  for (auto& out : outs) results.push_back(Value::Array(std::move(out)));
  return Value::Tuple(std::move(results));
}

absl::StatusOr<Value> TopK(DeviceEvaluator& ev, const Literal& operand, int64_t k, bool largest,
                           PrimitiveType index_type) {
  // Along the last dimension: the k largest (or smallest) values and their indices; ties keep
  // the lower index first. Floats order totally (NaN above +inf), as XLA's comparator does.
  const Shape& shape = operand.shape();
  if (shape.rank() < 1) return absl::InvalidArgumentError("expected an operand of rank >= 1");
  const int64_t n = shape.dimensions().back();
  if (k < 0 || k > n) {
    return absl::InvalidArgumentError(absl::StrCat("expected k in [0, ", n, "]; got ", k));
  }
  std::vector<int64_t> out_dims = shape.dimensions();
  out_dims.back() = k;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> values,
                           ev.Allocate(Shape::Array(shape.element_type(), out_dims)));
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> indices,
                           ev.Allocate(Shape::Array(index_type, out_dims)));
  const int64_t rows = n == 0 ? 0 : shape.ElementCount() / n;
  const int64_t bytes = ByteWidth(shape.element_type());
  PERFSIM_RETURN_IF_ERROR(DispatchRealElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    const uint8_t* in = operand.data().data();
    const ComparisonDirection direction =
        largest ? ComparisonDirection::kGt : ComparisonDirection::kLt;
    std::vector<int64_t> order(n);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < n; ++i) order[i] = r * n + i;
      MergeSort(&order, [&](int64_t x, int64_t y) {
        return ApplyCompare<T>(direction, /*total_order=*/true, T::Load(in, x), T::Load(in, y));
      });
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(values->mutable_data().data() + (r * k + j) * bytes, in + order[j] * bytes,
                    bytes);
        indices->SetFromInt64(r * k + j, order[j] - r * n);
      }
    }
    return absl::OkStatus();
  }));
  return Value::Tuple({Value::Array(std::move(values)), Value::Array(std::move(indices))});
}

absl::StatusOr<Value> EvalTopK(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const Shape& result = instruction.shape();
  if (!result.IsTuple() || result.tuple_size() != 2 || result.tuple_shapes(0).rank() < 1) {
    return absl::InvalidArgumentError("expected a (values, indices) result");
  }
  const int64_t k = instruction.attributes().k.value_or(result.tuple_shapes(0).dimensions().back());
  return TopK(ev, operands[0]->array(), k, instruction.attributes().largest,
              result.tuple_shapes(1).element_type());
}

}  // namespace interp
}  // namespace perfsim
