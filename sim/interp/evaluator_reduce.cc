// reduce, reduce-window and select-and-scatter, plus the helpers every op that applies a
// scalar computation shares. Reducers of the form `op(p0, p1)` run as native loops; anything
// else calls the computation once per element (slow but exact).
//
// Accumulation order: each output element folds its inputs in increasing row-major order,
// starting from the init value, rounding to the element type after every step (so a bf16 sum
// rounds at each add, as XLA's evaluator does).
#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator.h"
#include "sim/interp/simd_kernels.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

bool IsCommutative(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kMultiply:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
      return true;
    case BinaryOp::kSubtract:
    case BinaryOp::kDivide:
    case BinaryOp::kRemainder:
    case BinaryOp::kPower:
    case BinaryOp::kAtan2:
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightArithmetic:
    case BinaryOp::kShiftRightLogical:
      return false;
  }
  return false;
}

// Strides into the output for each input dimension (0 for reduced dimensions).
std::vector<int64_t> OutputStridesPerInputDim(absl::Span<const int64_t> in_dims,
                                              absl::Span<const int64_t> reduced) {
  std::vector<bool> is_reduced(in_dims.size(), false);
  for (int64_t d : reduced) is_reduced[d] = true;
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!is_reduced[d]) out_dims.push_back(in_dims[d]);
  }
  const std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  std::vector<int64_t> result(in_dims.size(), 0);
  size_t k = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!is_reduced[d]) result[d] = out_strides[k++];
  }
  return result;
}

// Calls f(input linear index, output linear index) for every input element in row-major order.
template <typename F>
void ForEachReduced(absl::Span<const int64_t> in_dims, absl::Span<const int64_t> out_strides,
                    F&& f) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  const int64_t n = ElementCountOf(in_dims);
  if (n == 0) return;
  if (rank == 0) {
    f(0, 0);
    return;
  }
  const int64_t inner = in_dims[rank - 1];
  const int64_t inner_stride = out_strides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  int64_t i = 0;
  int64_t base = 0;
  while (i < n) {
    int64_t o = base;
    for (int64_t j = 0; j < inner; ++j, ++i, o += inner_stride) f(i, o);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      base += out_strides[d];
      if (++index[d] < in_dims[d]) break;
      base -= out_strides[d] * in_dims[d];
      index[d] = 0;
    }
    if (d < 0) break;
  }
}

absl::StatusOr<std::vector<Value>> CallForValues(DeviceEvaluator& ev, const Computation& c,
                                                 absl::Span<const Value> args, size_t expected) {
  PERFSIM_ASSIGN_OR_RETURN(Value result, ev.CallScalar(c, args));
  if (expected == 1 && result.is_array()) return std::vector<Value>{std::move(result)};
  if (!result.is_tuple() || result.elements().size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(c.name(), ": expected ", expected,
                                                   " scalar results; got ",
                                                   result.shape().ToString(false)));
  }
  return result.elements();
}

}  // namespace

std::optional<BinaryOp> MatchBinaryComputation(const Computation& computation) {
  const Instruction* root = computation.root();
  if (root == nullptr || computation.parameter_count() != 2 || root->operand_count() != 2) {
    return std::nullopt;
  }
  const std::optional<BinaryOp> op = BinaryOpOf(root->opcode());
  if (!op.has_value()) return std::nullopt;
  const Instruction* p0 = computation.parameter(0);
  const Instruction* p1 = computation.parameter(1);
  if (p0 == nullptr || p1 == nullptr) return std::nullopt;
  const bool in_order = root->operand(0) == p0 && root->operand(1) == p1;
  const bool swapped = root->operand(0) == p1 && root->operand(1) == p0;
  if (!in_order && !(swapped && IsCommutative(*op))) return std::nullopt;
  const Shape& s = root->shape();
  if (!s.IsScalar() || p0->shape() != p1->shape() || !p0->shape().IsScalar() ||
      p0->shape().element_type() != s.element_type()) {
    return std::nullopt;
  }
  return op;
}

bool ReturnsSecondParameter(const Computation& computation) {
  return computation.parameter_count() == 2 && computation.root() != nullptr &&
         computation.root() == computation.parameter(1);
}

absl::StatusOr<Value> ElementAsScalar(DeviceEvaluator& ev, const Literal& array, int64_t index) {
  const PrimitiveType type = array.shape().element_type();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> scalar, ev.Allocate(Shape::Scalar(type)));
  const int64_t bytes = ByteWidth(type);
  std::memcpy(scalar->mutable_data().data(), array.data().data() + index * bytes, bytes);
  return Value::Array(std::move(scalar));
}

absl::Status StoreScalar(const Value& scalar, Literal* array, int64_t index) {
  const PrimitiveType type = array->shape().element_type();
  if (!scalar.is_array() || scalar.array_shape().element_type() != type ||
      scalar.array().element_count() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected a ", PrimitiveTypeName(type),
                                                   " scalar from the computation; got ",
                                                   scalar.shape().ToString(false)));
  }
  const int64_t bytes = ByteWidth(type);
  std::memcpy(array->mutable_data().data() + index * bytes, scalar.data(), bytes);
  return absl::OkStatus();
}

absl::Status CombineInto(DeviceEvaluator& ev, const Computation& computation, Literal* accumulator,
                         const Literal& update) {
  const PrimitiveType type = accumulator->shape().element_type();
  const int64_t n = accumulator->element_count();
  const std::optional<BinaryOp> op = MatchBinaryComputation(computation);
  if (op.has_value() && computation.root()->shape().element_type() == type &&
      update.shape().element_type() == type) {
    return DispatchElementType(type, computation.name(), [&](auto traits) {
      using T = decltype(traits);
      PERFSIM_RETURN_IF_ERROR(CheckBinaryOpType(*op, T::kKind, type));
      return DispatchBinaryOp(*op, [&](auto op_constant) {
        constexpr BinaryOp kOp = decltype(op_constant)::value;
        uint8_t* acc = accumulator->mutable_data().data();
        const uint8_t* in = update.data().data();
        for (int64_t i = 0; i < n; ++i) {
          T::Store(acc, i, T::Round(ApplyBinary<T, kOp>(T::Load(acc, i), T::Load(in, i))));
        }
        return absl::OkStatus();
      });
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    PERFSIM_ASSIGN_OR_RETURN(Value a, ElementAsScalar(ev, *accumulator, i));
    PERFSIM_ASSIGN_OR_RETURN(Value b, ElementAsScalar(ev, update, i));
    PERFSIM_ASSIGN_OR_RETURN(Value r, ev.CallScalar(computation, {a, b}));
    PERFSIM_RETURN_IF_ERROR(StoreScalar(r, accumulator, i));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> EvalReduce(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands) {
  const int64_t n = static_cast<int64_t>(operands.size()) / 2;
  const Computation* f = instruction.to_apply();
  if (f == nullptr || n < 1 || static_cast<int64_t>(operands.size()) != 2 * n) {
    return absl::InvalidArgumentError("expected N inputs, N init values and to_apply");
  }
  const std::vector<int64_t> reduced =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  const Shape& in_shape = operands[0]->array_shape();
  for (int64_t d : reduced) {
    if (d < 0 || d >= in_shape.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected reduce dimensions of ", in_shape.ToString(false), "; got ", d));
    }
  }
  const std::vector<int64_t> out_strides = OutputStridesPerInputDim(in_shape.dimensions(), reduced);
  std::vector<int64_t> out_dims;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
      out_dims.push_back(in_shape.dimensions(d));
    }
  }
  // Outputs start as copies of the init values.
  std::vector<std::shared_ptr<Literal>> outs;
  for (int64_t k = 0; k < n; ++k) {
    const Literal& init = operands[n + k]->array();
    const PrimitiveType type = operands[k]->array_shape().element_type();
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                             ev.Allocate(Shape::Array(type, out_dims)));
    const int64_t bytes = ByteWidth(type);
    for (int64_t o = 0; o < out->element_count(); ++o) {
      std::memcpy(out->mutable_data().data() + o * bytes, init.data().data(), bytes);
    }
    outs.push_back(std::move(out));
  }
  const std::optional<BinaryOp> op = MatchBinaryComputation(*f);
  if (n == 1 && op.has_value() && f->root()->shape().element_type() == in_shape.element_type()) {
    PERFSIM_RETURN_IF_ERROR(
        DispatchElementType(in_shape.element_type(), f->name(), [&](auto traits) {
          using T = decltype(traits);
          PERFSIM_RETURN_IF_ERROR(CheckBinaryOpType(*op, T::kKind, in_shape.element_type()));
          return DispatchBinaryOp(*op, [&](auto op_constant) {
            constexpr BinaryOp kOp = decltype(op_constant)::value;
            using C = typename T::Compute;
            const int64_t count = outs[0]->element_count();
            uint8_t* out = outs[0]->mutable_data().data();
            std::vector<C> acc(count);
            for (int64_t o = 0; o < count; ++o) acc[o] = T::Load(out, o);
            const uint8_t* in = operands[0]->data();
            ForEachReduced(in_shape.dimensions(), out_strides, [&](int64_t i, int64_t o) {
              acc[o] = T::Round(ApplyBinary<T, kOp>(acc[o], T::Load(in, i)));
            });
            for (int64_t o = 0; o < count; ++o) T::Store(out, o, acc[o]);
            return absl::OkStatus();
          });
        }));
    return Value::Array(std::move(outs[0]));
  }
  // General reducer: one call per input element with (accumulators..., inputs...).
  absl::Status status = absl::OkStatus();
  std::vector<Value> args(2 * n);
  ForEachReduced(in_shape.dimensions(), out_strides, [&](int64_t i, int64_t o) {
    if (!status.ok()) return;
    status = [&]() -> absl::Status {
      for (int64_t k = 0; k < n; ++k) {
        PERFSIM_ASSIGN_OR_RETURN(args[k], ElementAsScalar(ev, *outs[k], o));
        PERFSIM_ASSIGN_OR_RETURN(args[n + k], ElementAsScalar(ev, operands[k]->array(), i));
      }
      PERFSIM_ASSIGN_OR_RETURN(std::vector<Value> results, CallForValues(ev, *f, args, n));
      for (int64_t k = 0; k < n; ++k) {
        PERFSIM_RETURN_IF_ERROR(StoreScalar(results[k], outs[k].get(), o));
      }
      return absl::OkStatus();
    }();
  });
  PERFSIM_RETURN_IF_ERROR(status);
  if (n == 1 && !instruction.shape().IsTuple()) return Value::Array(std::move(outs[0]));
  std::vector<Value> elements;
  for (auto& out : outs) elements.push_back(Value::Array(std::move(out)));
  return Value::Tuple(std::move(elements));
}

namespace {

// Window geometry shared by reduce-window and select-and-scatter.
struct WindowGeometry {
  std::vector<int64_t> in_dims;
  std::vector<int64_t> out_dims;
  std::vector<WindowDimension> window;
};

absl::StatusOr<WindowGeometry> MakeWindowGeometry(const Instruction& instruction,
                                                  const Shape& in_shape) {
  WindowGeometry g;
  g.in_dims = in_shape.dimensions();
  const auto& window = instruction.attributes().window;
  if (window.has_value()) g.window = *window;
  if (g.window.empty() && in_shape.rank() > 0) g.window.resize(in_shape.rank());
  if (static_cast<int64_t>(g.window.size()) != in_shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a window of rank ", in_shape.rank(), "; got ", g.window.size()));
  }
  for (size_t d = 0; d < g.window.size(); ++d) {
    const WindowDimension& w = g.window[d];
    if (w.stride < 1 || w.size < 0 || w.base_dilation < 1 || w.window_dilation < 1) {
      return absl::InvalidArgumentError("expected positive window sizes, strides and dilations");
    }
    const int64_t dilated_base = g.in_dims[d] == 0 ? 0 : (g.in_dims[d] - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = w.size == 0 ? 0 : (w.size - 1) * w.window_dilation + 1;
    g.out_dims.push_back(padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1);
  }
  return g;
}

// Calls f(input linear index) for every in-bounds input element of window `out_index`, in
// row-major window order; padding and base-dilation holes are skipped.
template <typename F>
void ForEachInWindow(const WindowGeometry& g, absl::Span<const int64_t> out_index,
                     absl::Span<const int64_t> in_strides, F&& f) {
  const int64_t rank = static_cast<int64_t>(g.in_dims.size());
  std::vector<int64_t> wsize(rank);
  for (int64_t d = 0; d < rank; ++d) wsize[d] = g.window[d].size;
  if (ElementCountOf(wsize) == 0) return;
  std::vector<int64_t> w(rank, 0);
  do {
    int64_t linear = 0;
    bool valid = true;
    for (int64_t d = 0; d < rank && valid; ++d) {
      const WindowDimension& wd = g.window[d];
      const int64_t dilated = out_index[d] * wd.stride + w[d] * wd.window_dilation - wd.padding_low;
      if (dilated < 0 || dilated % wd.base_dilation != 0) {
        valid = false;
        break;
      }
      const int64_t pos = dilated / wd.base_dilation;
      if (pos >= g.in_dims[d]) {
        valid = false;
        break;
      }
      linear += pos * in_strides[d];
    }
    if (valid) f(linear);
  } while (NextIndex(wsize, &w));
}

// The one window dimension that reduces, when every other is the identity (size 1, stride 1,
// no padding, no base dilation: output index = input index) and it has no base dilation;
// nullopt otherwise.
std::optional<int64_t> SingleReducingDimension(const WindowGeometry& g) {
  std::optional<int64_t> found;
  for (size_t d = 0; d < g.window.size(); ++d) {
    const WindowDimension& w = g.window[d];
    if (w.base_dilation != 1) return std::nullopt;
    if (w.size == 1 && w.stride == 1 && w.padding_low == 0 && w.padding_high == 0) continue;
    if (found.has_value()) return std::nullopt;
    found = static_cast<int64_t>(d);
  }
  return found;
}

// simd::AddRows16 for the 16 rows at element offsets row_base[r] + at (+ j·step for the j-th
// of `count` elements) of an array of in_bytes bytes, when every read (4 bytes at each
// element) stays inside it and the offsets fit the gather's 32-bit indices; false to leave
// the block to the scalar loop.
template <typename T>
bool SumRowBlock(const uint8_t* in, int64_t in_bytes, const int64_t* row_base, int64_t at,
                 int64_t step, int64_t count, typename T::Compute init, typename T::Compute* sums) {
  if constexpr (std::is_same_v<typename T::Compute, float>) {
    constexpr int64_t kWidth = static_cast<int64_t>(sizeof(typename T::Storage));
    int64_t low = row_base[0];
    int64_t high = row_base[0];
    for (int r = 1; r < 16; ++r) {
      low = std::min(low, row_base[r]);
      high = std::max(high, row_base[r]);
    }
    const int64_t first = low + at;
    const int64_t last = high + at + (count - 1) * step;
    if (first < 0 || step < 0 || high - low > (int64_t{1} << 28) || last * kWidth + 4 > in_bytes) {
      return false;
    }
    int32_t offsets[16];
    for (int r = 0; r < 16; ++r) offsets[r] = static_cast<int32_t>(row_base[r] - low);
    return simd::AddRows16(T::kType, in + first * kWidth, offsets, step, count, init, sums);
  } else {
    return false;
  }
}

// reduce-window along one dimension d (SingleReducingDimension) with a native binary op: each
// output reduces the contiguous run of its input row that the window covers (found in closed
// form instead of visiting every window position, padding included), in the same order as
// ForEachInWindow. An output whose run is the previous output's (a reduce broadcast back: a
// window of 2N-1 padded N-1 covers the whole row for every output) reuses its result: the
// same ops on the same values. Rows (every index of the other dimensions) go kRowBlock at a
// time through each window, so that their independent accumulations overlap instead of each
// waiting for the latency of the previous op and rounding.
// A block of 16 rows (bf16 and f32 sums, on AVX-512) reads its window's elements with one
// gather per window position (simd::AddRows16).
template <typename T, BinaryOp kOp>
void ReduceWindowAlongOneDimension(const WindowGeometry& g, int64_t d, const uint8_t* in,
                                   typename T::Compute init, uint8_t* out) {
  constexpr int64_t kRowBlock = 16;
  constexpr bool kVectorSum = kOp == BinaryOp::kAdd &&
                              (T::kType == PrimitiveType::kBF16 || T::kType == PrimitiveType::kF32);
  const int64_t in_bytes =
      ElementCountOf(g.in_dims) * static_cast<int64_t>(sizeof(typename T::Storage));
  using Compute = typename T::Compute;
  const WindowDimension& w = g.window[d];
  const std::vector<int64_t> in_strides = RowMajorStrides(g.in_dims);
  const std::vector<int64_t> out_strides = RowMajorStrides(g.out_dims);
  const int64_t in_size = g.in_dims[d];
  const int64_t out_size = g.out_dims[d];
  const int64_t in_step = in_strides[d];
  const int64_t out_step = out_strides[d];
  std::vector<int64_t> rows = g.out_dims;
  rows[d] = 1;
  if (ElementCountOf(rows) == 0 || out_size == 0) return;
  // The window of each output position: the first input index it reads and how many.
  std::vector<int64_t> first(out_size);
  std::vector<int64_t> count(out_size);
  for (int64_t o = 0; o < out_size; ++o) {
    // Window position k reads input start + k·dilation when 0 <= it < in_size.
    const int64_t start = o * w.stride - w.padding_low;
    const int64_t step = w.window_dilation;
    const int64_t k_lo = start >= 0 ? 0 : (-start + step - 1) / step;
    const int64_t last = in_size - 1 - start;  // k·step <= last
    const int64_t k_hi = last < 0 ? -1 : std::min(w.size - 1, last / step);
    count[o] = std::max<int64_t>(0, k_hi - k_lo + 1);
    first[o] = start + k_lo * step;
  }
  const int64_t element_step = w.window_dilation * in_step;
  std::vector<int64_t> row(rows.size(), 0);
  int64_t in_base[kRowBlock];
  int64_t out_base[kRowBlock];
  bool more = true;
  while (more) {
    int64_t block = 0;
    for (; block < kRowBlock && more; ++block) {
      in_base[block] = 0;
      out_base[block] = 0;
      for (size_t k = 0; k < row.size(); ++k) {
        in_base[block] += row[k] * in_strides[k];
        out_base[block] += row[k] * out_strides[k];
      }
      more = NextIndex(rows, &row);
    }
    Compute previous[kRowBlock];
    for (int64_t o = 0; o < out_size; ++o) {
      const bool same =
          o > 0 && count[o] == count[o - 1] && (count[o] == 0 || first[o] == first[o - 1]);
      // A window equal to the previous output's keeps `previous`; a full block of sums may
      // take the vector path; the rest is the scalar loop.
      const bool vector_done = !same && kVectorSum && block == kRowBlock && count[o] > 0 &&
                               SumRowBlock<T>(in, in_bytes, in_base, first[o] * in_step,
                                              element_step, count[o], init, previous);
      if (!same && !vector_done) {
        Compute acc[kRowBlock];
        for (int64_t r = 0; r < block; ++r) acc[r] = init;
        int64_t at = first[o] * in_step;
        for (int64_t j = 0; j < count[o]; ++j, at += element_step) {
          for (int64_t r = 0; r < block; ++r) {
            acc[r] = T::Round(ApplyBinary<T, kOp>(acc[r], T::Load(in, in_base[r] + at)));
          }
        }
        for (int64_t r = 0; r < block; ++r) previous[r] = acc[r];
      }
      for (int64_t r = 0; r < block; ++r) T::Store(out, out_base[r] + o * out_step, previous[r]);
    }
  }
}

}  // namespace

namespace {

// Reduce-window's results in their declared element types (see EvalReduceWindow): one array, or
// a tuple of them.
absl::StatusOr<Value> WindowResults(DeviceEvaluator& ev, const Instruction& instruction,
                                    std::vector<std::shared_ptr<Literal>> outs) {
  const Shape& shape = instruction.shape();
  std::vector<Value> elements;
  for (size_t k = 0; k < outs.size(); ++k) {
    const Shape* declared = !shape.IsTuple()                   ? &shape
                            : k < shape.tuple_shapes().size() ? &shape.tuple_shapes(k)
                                                              : nullptr;
    const PrimitiveType computed = outs[k]->shape().element_type();
    if (declared != nullptr && declared->IsArray() && declared->element_type() != computed &&
        IsFloatingPoint(declared->element_type()) && IsFloatingPoint(computed)) {
      PERFSIM_ASSIGN_OR_RETURN(outs[k], ConvertArray(ev, *outs[k], declared->element_type()));
    }
    elements.push_back(Value::Array(std::move(outs[k])));
  }
  if (elements.size() == 1 && !shape.IsTuple()) return std::move(elements[0]);
  return Value::Tuple(std::move(elements));
}

}  // namespace

absl::StatusOr<Value> EvalReduceWindow(DeviceEvaluator& ev, const Instruction& instruction,
                                       OperandValues operands) {
  const int64_t n = static_cast<int64_t>(operands.size()) / 2;
  const Computation* f = instruction.to_apply();
  if (f == nullptr || n < 1 || static_cast<int64_t>(operands.size()) != 2 * n) {
    return absl::InvalidArgumentError("expected N inputs, N init values and to_apply");
  }
  const Shape& in_shape = operands[0]->array_shape();
  PERFSIM_ASSIGN_OR_RETURN(WindowGeometry g, MakeWindowGeometry(instruction, in_shape));
  const std::vector<int64_t> in_strides = RowMajorStrides(g.in_dims);
  // Mixed precision (XLA allows init values and results of another floating-point precision
  // than the inputs, e.g. bf16 init over f32 inputs): the window is reduced in the inputs'
  // type, from the init value converted to it, and each result is converted to its declared
  // type at the end.
  std::vector<const Value*> in_values(operands.begin(), operands.end());
  std::vector<Value> converted_inits;
  converted_inits.reserve(n);
  for (int64_t k = 0; k < n; ++k) {
    const PrimitiveType type = operands[k]->array_shape().element_type();
    if (operands[n + k]->array_shape().element_type() == type) continue;
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> init,
                             ConvertArray(ev, operands[n + k]->array(), type));
    converted_inits.push_back(Value::Array(std::move(init)));
    in_values[n + k] = &converted_inits.back();
  }
  operands = OperandValues(in_values);
  std::vector<std::shared_ptr<Literal>> outs;
  for (int64_t k = 0; k < n; ++k) {
    PERFSIM_ASSIGN_OR_RETURN(
        std::shared_ptr<Literal> out,
        ev.Allocate(Shape::Array(operands[k]->array_shape().element_type(), g.out_dims)));
    outs.push_back(std::move(out));
  }
  const int64_t out_count = ElementCountOf(g.out_dims);
  const std::optional<BinaryOp> op = MatchBinaryComputation(*f);
  std::vector<int64_t> out_index(g.out_dims.size(), 0);
  if (n == 1 && op.has_value() && f->root()->shape().element_type() == in_shape.element_type()) {
    PERFSIM_RETURN_IF_ERROR(
        DispatchElementType(in_shape.element_type(), f->name(), [&](auto traits) {
          using T = decltype(traits);
          PERFSIM_RETURN_IF_ERROR(CheckBinaryOpType(*op, T::kKind, in_shape.element_type()));
          return DispatchBinaryOp(*op, [&](auto op_constant) {
            constexpr BinaryOp kOp = decltype(op_constant)::value;
            const uint8_t* in = operands[0]->data();
            uint8_t* out = outs[0]->mutable_data().data();
            const typename T::Compute init = T::Load(operands[1]->data(), 0);
            if (const std::optional<int64_t> d = SingleReducingDimension(g)) {
              ReduceWindowAlongOneDimension<T, kOp>(g, *d, in, init, out);
              return absl::OkStatus();
            }
            for (int64_t o = 0; o < out_count; ++o) {
              typename T::Compute acc = init;
              ForEachInWindow(g, out_index, in_strides, [&](int64_t i) {
                acc = T::Round(ApplyBinary<T, kOp>(acc, T::Load(in, i)));
              });
              T::Store(out, o, acc);
              NextIndex(g.out_dims, &out_index);
            }
            return absl::OkStatus();
          });
        }));
    return WindowResults(ev, instruction, std::move(outs));
  }
  std::vector<Value> acc(n);
  std::vector<Value> args(2 * n);
  for (int64_t o = 0; o < out_count; ++o) {
    for (int64_t k = 0; k < n; ++k) acc[k] = *operands[n + k];
    absl::Status status = absl::OkStatus();
    ForEachInWindow(g, out_index, in_strides, [&](int64_t i) {
      if (!status.ok()) return;
      status = [&]() -> absl::Status {
        for (int64_t k = 0; k < n; ++k) {
          args[k] = acc[k];
          PERFSIM_ASSIGN_OR_RETURN(args[n + k], ElementAsScalar(ev, operands[k]->array(), i));
        }
        PERFSIM_ASSIGN_OR_RETURN(acc, CallForValues(ev, *f, args, n));
        return absl::OkStatus();
      }();
    });
    PERFSIM_RETURN_IF_ERROR(status);
    for (int64_t k = 0; k < n; ++k) PERFSIM_RETURN_IF_ERROR(StoreScalar(acc[k], outs[k].get(), o));
    NextIndex(g.out_dims, &out_index);
  }
  return WindowResults(ev, instruction, std::move(outs));
}

absl::StatusOr<Value> EvalSelectAndScatter(DeviceEvaluator& ev, const Instruction& instruction,
                                           OperandValues operands) {
  // operands: operand, source, init_value. For each window (one per source element), `select`
  // picks an element: the first in-bounds one, replaced by each later one e for which
  // select(current, e) is false. The source value is then combined into the output at the
  // picked position with `scatter`; the output starts as init_value everywhere.
  const Computation* select = instruction.select();
  const Computation* scatter = instruction.scatter();
  if (select == nullptr || scatter == nullptr) {
    return absl::InvalidArgumentError("expected select= and scatter= computations");
  }
  const Literal& operand = operands[0]->array();
  const Literal& source = operands[1]->array();
  PERFSIM_ASSIGN_OR_RETURN(WindowGeometry g, MakeWindowGeometry(instruction, operand.shape()));
  if (g.out_dims != source.shape().dimensions()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected source dimensions to be the window output [",
                     absl::StrJoin(g.out_dims, ","), "]; got ", source.shape().ToString(false)));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(operand.shape()));
  const int64_t bytes = ByteWidth(operand.shape().element_type());
  for (int64_t i = 0; i < out->element_count(); ++i) {
    std::memcpy(out->mutable_data().data() + i * bytes, operands[2]->data(), bytes);
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(g.in_dims);
  std::vector<int64_t> out_index(g.out_dims.size(), 0);
  const int64_t windows = ElementCountOf(g.out_dims);
  for (int64_t s = 0; s < windows; ++s) {
    int64_t picked = -1;
    absl::Status status = absl::OkStatus();
    ForEachInWindow(g, out_index, in_strides, [&](int64_t i) {
      if (!status.ok()) return;
      if (picked < 0) {
        picked = i;
        return;
      }
      status = [&]() -> absl::Status {
        PERFSIM_ASSIGN_OR_RETURN(Value current, ElementAsScalar(ev, operand, picked));
        PERFSIM_ASSIGN_OR_RETURN(Value candidate, ElementAsScalar(ev, operand, i));
        PERFSIM_ASSIGN_OR_RETURN(Value keep, ev.CallScalar(*select, {current, candidate}));
        if (!keep.is_array()) return absl::InvalidArgumentError("expected select to return pred[]");
        if (keep.array().GetAsInt64(0) == 0) picked = i;
        return absl::OkStatus();
      }();
    });
    PERFSIM_RETURN_IF_ERROR(status);
    if (picked >= 0) {
      PERFSIM_ASSIGN_OR_RETURN(Value acc, ElementAsScalar(ev, *out, picked));
      PERFSIM_ASSIGN_OR_RETURN(Value update, ElementAsScalar(ev, source, s));
      PERFSIM_ASSIGN_OR_RETURN(Value r, ev.CallScalar(*scatter, {acc, update}));
      PERFSIM_RETURN_IF_ERROR(StoreScalar(r, out.get(), picked));
    }
    NextIndex(g.out_dims, &out_index);
  }
  return Value::Array(std::move(out));
}

}  // namespace interp
}  // namespace perfsim
