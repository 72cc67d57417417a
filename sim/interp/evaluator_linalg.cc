// complex, triangular-solve, cholesky, batch-norm-* and scaled-dot (refused) in the
// interpreter. The contracts are in evaluator_linalg.h; here, why each loop is as it is.
#include "sim/interp/evaluator_linalg.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "sim/interp/element_types.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {

using Complex = std::complex<double>;

absl::StatusOr<std::vector<Complex>> LoadAsComplex(const Value& value) {
  if (!value.is_array()) return absl::InvalidArgumentError("expected an array operand");
  const Shape& shape = value.array_shape();
  const int64_t n = shape.ElementCount();
  std::vector<Complex> out(n);
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (kIsComplex<T>) {
      for (int64_t i = 0; i < n; ++i) {
        const auto z = T::Load(value.data(), i);
        out[i] = Complex(static_cast<double>(z.real()), static_cast<double>(z.imag()));
      }
      return absl::OkStatus();
    } else if constexpr (kIsFloat<T>) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(T::Load(value.data(), i));
      return absl::OkStatus();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a floating-point or complex operand; got ", shape.ToString(false)));
    }
  }));
  return out;
}

absl::StatusOr<Value> StoreFromComplex(DeviceEvaluator& ev, const Shape& shape,
                                       const std::vector<Complex>& values) {
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(shape));
  uint8_t* o = out->mutable_data().data();
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (kIsComplex<T>) {
      using C = typename T::Compute::value_type;
      for (int64_t i = 0; i < n; ++i) {
        T::Store(o, i,
                 typename T::Compute(static_cast<C>(values[i].real()),
                                     static_cast<C>(values[i].imag())));
      }
      return absl::OkStatus();
    } else if constexpr (kIsFloat<T>) {
      using C = typename T::Compute;
      for (int64_t i = 0; i < n; ++i) T::Store(o, i, static_cast<C>(values[i].real()));
      return absl::OkStatus();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected a floating-point or complex result; got ", shape.ToString(false)));
    }
  }));
  return Value::Array(std::move(out));
}

namespace {

// The result element type's array shape of `instruction` (tuple element `index` if a tuple).
const Shape& ResultShape(const Instruction& instruction, int64_t index) {
  const Shape& shape = instruction.shape();
  return shape.IsTuple() ? shape.tuple_shapes(index) : shape;
}

// Matrix m (row-major n x n) of batch element b of `data`.
struct Matrices {
  int64_t batch = 1;
  int64_t rows = 0;
  int64_t cols = 0;
};

Matrices MatricesOf(const Shape& shape) {
  Matrices m;
  m.rows = shape.dimensions(shape.rank() - 2);
  m.cols = shape.dimensions(shape.rank() - 1);
  for (int64_t d = 0; d + 2 < shape.rank(); ++d) m.batch *= shape.dimensions(d);
  return m;
}

}  // namespace

absl::StatusOr<Value> EvalComplex(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> re, LoadAsComplex(*operands[0]));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> im, LoadAsComplex(*operands[1]));
  if (re.size() != im.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected real and imaginary parts of ",
                                                   re.size(), " elements; got ", im.size()));
  }
  std::vector<Complex> out(re.size());
  for (size_t i = 0; i < re.size(); ++i) out[i] = Complex(re[i].real(), im[i].real());
  return StoreFromComplex(ev, instruction.shape(), out);
}

absl::StatusOr<Value> EvalTriangularSolve(DeviceEvaluator& ev, const Instruction& instruction,
                                          OperandValues operands) {
  const InstructionAttributes& attrs = instruction.attributes();
  const bool left = attrs.left_side.value_or(false);
  const bool lower = attrs.lower.value_or(false);
  const bool unit = attrs.unit_diagonal.value_or(false);
  const TriangularTranspose transpose = attrs.transpose_a.value_or(TriangularTranspose::kNoTranspose);
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> a, LoadAsComplex(*operands[0]));
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> b, LoadAsComplex(*operands[1]));
  const Matrices am = MatricesOf(operands[0]->array_shape());
  const Matrices bm = MatricesOf(operands[1]->array_shape());
  const int64_t n = am.rows;
  std::vector<Complex> x = b;
  std::vector<Complex> t(n * n);
  for (int64_t batch = 0; batch < am.batch; ++batch) {
    const Complex* ab = a.data() + batch * n * n;
    // T = op(triangle of a), explicitly, so that one substitution handles every option.
    // Solving x·op(a) = b is op(a)^T·x^T = b^T: T is transposed once more for the right side.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const bool in_triangle = lower ? j <= i : j >= i;
        Complex v = i == j && unit ? Complex(1) : (in_triangle ? ab[i * n + j] : Complex(0));
        int64_t r = i;
        int64_t c = j;
        if (transpose != TriangularTranspose::kNoTranspose) std::swap(r, c);
        if (transpose == TriangularTranspose::kAdjoint) v = std::conj(v);
        if (!left) std::swap(r, c);
        t[r * n + c] = v;
      }
    }
    // T is lower triangular when exactly one of (upper storage, transpose, right side) flips
    // it from the stored triangle.
    bool t_lower = lower;
    if (transpose != TriangularTranspose::kNoTranspose) t_lower = !t_lower;
    if (!left) t_lower = !t_lower;
    // Right-hand sides: the columns of b (left) or its rows (right), each length n.
    const int64_t rhs_count = left ? bm.cols : bm.rows;
    Complex* xb = x.data() + batch * bm.rows * bm.cols;
    auto at = [&](int64_t k, int64_t i) -> Complex& {
      return left ? xb[i * bm.cols + k] : xb[k * bm.cols + i];
    };
    for (int64_t k = 0; k < rhs_count; ++k) {
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = t_lower ? step : n - 1 - step;
        Complex sum = at(k, i);
        for (int64_t s = 0; s < step; ++s) {
          const int64_t j = t_lower ? s : n - 1 - s;
          sum -= t[i * n + j] * at(k, j);
        }
        at(k, i) = sum / t[i * n + i];
      }
    }
  }
  return StoreFromComplex(ev, instruction.shape(), x);
}

absl::StatusOr<Value> EvalCholesky(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands) {
  const bool lower = instruction.attributes().lower.value_or(false);
  const bool real = !IsComplex(instruction.shape().element_type());
  PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> a, LoadAsComplex(*operands[0]));
  const Matrices m = MatricesOf(operands[0]->array_shape());
  const int64_t n = m.rows;
  std::vector<Complex> out(a.size(), Complex(0));
  for (int64_t batch = 0; batch < m.batch; ++batch) {
    const Complex* ab = a.data() + batch * n * n;
    Complex* lb = out.data() + batch * n * n;
    // Work on L (lower); for upper storage read a^H's lower triangle (= conj of a's upper) and
    // write U = L^H.
    auto in = [&](int64_t i, int64_t j) { return lower ? ab[i * n + j] : std::conj(ab[j * n + i]); };
    std::vector<Complex> l(n * n, Complex(0));
    bool ok = true;
    for (int64_t j = 0; j < n && ok; ++j) {
      double d = in(j, j).real();
      for (int64_t k = 0; k < j; ++k) d -= std::norm(l[j * n + k]);
      if (!(d > 0)) {
        ok = false;
        break;
      }
      l[j * n + j] = std::sqrt(d);
      for (int64_t i = j + 1; i < n; ++i) {
        Complex s = in(i, j);
        for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * std::conj(l[j * n + k]);
        l[i * n + j] = s / l[j * n + j];
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        lb[i * n + j] = !ok ? Complex(nan, real ? 0 : nan)
                            : (lower ? l[i * n + j] : std::conj(l[j * n + i]));
      }
    }
  }
  return StoreFromComplex(ev, instruction.shape(), out);
}

absl::StatusOr<Value> EvalBatchNorm(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  const Opcode opcode = instruction.opcode();
  const Shape& shape = operands[0]->array_shape();
  const int64_t f_dim = instruction.attributes().feature_index.value_or(0);
  const double eps = instruction.attributes().epsilon.value_or(0.0f);
  std::vector<std::vector<Complex>> in;
  for (const Value* v : operands) {
    PERFSIM_ASSIGN_OR_RETURN(std::vector<Complex> values, LoadAsComplex(*v));
    in.push_back(std::move(values));
  }
  const int64_t features = shape.dimensions(f_dim);
  int64_t inner = 1;
  for (int64_t d = f_dim + 1; d < shape.rank(); ++d) inner *= shape.dimensions(d);
  const int64_t count = features == 0 ? 0 : shape.ElementCount() / features;
  auto feature_of = [&](int64_t i) { return (i / inner) % features; };
  const std::vector<Complex>& x = in[0];
  // Per-feature mean and variance: computed (training) or given (operands 3, 4 of inference,
  // 2, 3 of grad).
  std::vector<double> mean(features, 0.0), var(features, 0.0);
  if (opcode == Opcode::kBatchNormTraining) {
    for (size_t i = 0; i < x.size(); ++i) mean[feature_of(i)] += x[i].real();
    for (int64_t f = 0; f < features; ++f) mean[f] /= static_cast<double>(count);
    for (size_t i = 0; i < x.size(); ++i) {
      const double c = x[i].real() - mean[feature_of(i)];
      var[feature_of(i)] += c * c;
    }
    for (int64_t f = 0; f < features; ++f) var[f] /= static_cast<double>(count);
  } else {
    const int64_t mean_operand = opcode == Opcode::kBatchNormInference ? 3 : 2;
    for (int64_t f = 0; f < features; ++f) {
      mean[f] = in[mean_operand][f].real();
      var[f] = in[mean_operand + 1][f].real();
    }
  }
  const std::vector<Complex>& scale = in[1];
  std::vector<Complex> y(x.size());
  if (opcode != Opcode::kBatchNormGrad) {
    const std::vector<Complex>& offset = in[2];
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t f = feature_of(i);
      y[i] = (x[i].real() - mean[f]) / std::sqrt(var[f] + eps) * scale[f].real() + offset[f].real();
    }
    PERFSIM_ASSIGN_OR_RETURN(Value normalized, StoreFromComplex(ev, ResultShape(instruction, 0), y));
    if (opcode == Opcode::kBatchNormInference) return normalized;
    std::vector<Complex> mean_c(mean.begin(), mean.end()), var_c(var.begin(), var.end());
    PERFSIM_ASSIGN_OR_RETURN(Value mean_v, StoreFromComplex(ev, ResultShape(instruction, 1), mean_c));
    PERFSIM_ASSIGN_OR_RETURN(Value var_v, StoreFromComplex(ev, ResultShape(instruction, 2), var_c));
    return Value::Tuple({std::move(normalized), std::move(mean_v), std::move(var_v)});
  }
  // XLA's BatchNormGrad, per feature over its N elements:
  //   dx = scale·rsqrt(var+eps)·(dy - mean(dy) - (x-mean)·mean(dy·(x-mean))/(var+eps))
  //   dscale = sum(dy·(x-mean))·rsqrt(var+eps);  doffset = sum(dy).
  const std::vector<Complex>& dy = in[4];
  std::vector<double> sum_dy(features, 0.0), sum_dy_xc(features, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t f = feature_of(i);
    sum_dy[f] += dy[i].real();
    sum_dy_xc[f] += dy[i].real() * (x[i].real() - mean[f]);
  }
  const double n = static_cast<double>(count);
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t f = feature_of(i);
    const double rstd = 1.0 / std::sqrt(var[f] + eps);
    y[i] = scale[f].real() * rstd *
           (dy[i].real() - sum_dy[f] / n - (x[i].real() - mean[f]) * (sum_dy_xc[f] / n) / (var[f] + eps));
  }
  std::vector<Complex> dscale(features), doffset(features);
  for (int64_t f = 0; f < features; ++f) {
    dscale[f] = sum_dy_xc[f] / std::sqrt(var[f] + eps);
    doffset[f] = sum_dy[f];
  }
  PERFSIM_ASSIGN_OR_RETURN(Value dx, StoreFromComplex(ev, ResultShape(instruction, 0), y));
  PERFSIM_ASSIGN_OR_RETURN(Value ds, StoreFromComplex(ev, ResultShape(instruction, 1), dscale));
  PERFSIM_ASSIGN_OR_RETURN(Value doff, StoreFromComplex(ev, ResultShape(instruction, 2), doffset));
  return Value::Tuple({std::move(dx), std::move(ds), std::move(doff)});
}

absl::StatusOr<Value> EvalScaledDot(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands) {
  // TODO(issue 15): the block-scale semantics of scaled-dot (how a scale block maps onto the
  // operand, the e8m0 scale type) are not pinned against XLA yet; refuse rather than guess.
  return absl::UnimplementedError(
      "scaled-dot: the interpreter does not run scaled-dot (block-scaled dot) yet");
}

}  // namespace interp
}  // namespace perfsim
