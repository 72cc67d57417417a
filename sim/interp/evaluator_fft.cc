// fft in the interpreter: a direct DFT along each transformed dimension in turn (the
// transform is separable), in double precision. O(n^2) per row is plenty for the sizes the
// interpreter runs; the contract is in evaluator_linalg.h.
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "sim/interp/evaluator_linalg.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

using Complex = std::complex<double>;

// A row-major complex array and its dimensions.
struct Array {
  std::vector<int64_t> dims;
  std::vector<Complex> data;
};

// Transforms dimension `axis` of `in` with a `length`-point DFT (sign -1 forward, +1 inverse,
// scaled by 1/length when inverse). Input rows shorter than `length` are zero-padded; the
// output keeps `out_size` points. With `hermitian`, the input row holds bins 0..length/2 of
// a Hermitian spectrum, the others are their conjugates, and the real part is kept (IRFFT).
Array TransformAxis(const Array& in, int64_t axis, int64_t length, int64_t out_size, bool inverse,
                    bool hermitian) {
  int64_t outer = 1;
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.dims[d];
  for (size_t d = axis + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
  const int64_t in_size = in.dims[axis];
  Array out;
  out.dims = in.dims;
  out.dims[axis] = out_size;
  out.data.assign(outer * out_size * inner, Complex(0));
  const double sign = inverse ? 1.0 : -1.0;
  // Twiddles w^j for j < length, indexed by (k·t) mod length: one sine and cosine per
  // distinct angle instead of one per term, and the angle stays small.
  std::vector<Complex> twiddle(length);
  for (int64_t j = 0; j < length; ++j) {
    const double angle =
        sign * 2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(length);
    twiddle[j] = Complex(std::cos(angle), std::sin(angle));
  }
  std::vector<Complex> row(length);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t t = 0; t < length; ++t) {
        Complex v(0);
        if (!hermitian) {
          if (t < in_size) v = in.data[(o * in_size + t) * inner + i];
        } else if (t < in_size) {
          v = in.data[(o * in_size + t) * inner + i];
        } else if (length - t < in_size) {
          v = std::conj(in.data[(o * in_size + (length - t)) * inner + i]);
        }
        row[t] = v;
      }
      for (int64_t k = 0; k < out_size && k < length; ++k) {
        Complex sum(0);
        int64_t j = 0;  // (k·t) mod length, advanced by k per term
        for (int64_t t = 0; t < length; ++t) {
          sum += row[t] * twiddle[j];
          j += k;
          if (j >= length) j %= length;
        }
        if (inverse) sum /= static_cast<double>(length);
        if (hermitian) sum = Complex(sum.real(), 0);
        out.data[(o * out_size + k) * inner + i] = sum;
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Value> EvalFft(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands) {
  const InstructionAttributes& attrs = instruction.attributes();
  const std::vector<int64_t> lengths = attrs.fft_length.value_or(std::vector<int64_t>{});
  const Shape& in_shape = operands[0]->array_shape();
  const Shape& out_shape = instruction.shape();
  const int64_t rank = in_shape.rank();
  const int64_t fft_rank = static_cast<int64_t>(lengths.size());
  if (!attrs.fft_type.has_value() || fft_rank < 1 || fft_rank > rank ||
      out_shape.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected fft_type and 1 to ", rank, " fft_length dimensions; got ",
                     fft_rank));
  }
  for (int64_t d = 0; d < rank - fft_rank; ++d) {
    if (in_shape.dimensions(d) != out_shape.dimensions(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected equal batch dimensions of operand and result; got ",
                       in_shape.ToString(false), " and ", out_shape.ToString(false)));
    }
  }
  Array a;
  a.dims = in_shape.dimensions();
  PERFSIM_ASSIGN_OR_RETURN(a.data, LoadAsComplex(*operands[0]));
  const FftType type = *attrs.fft_type;
  const bool inverse = type == FftType::kIfft || type == FftType::kIrfft;
  const int64_t last = rank - 1;
  if (type == FftType::kIrfft) {
    // The leading transformed dimensions are complex inverse DFTs; the last one is c2r.
    for (int64_t i = 0; i + 1 < fft_rank; ++i) {
      const int64_t axis = rank - fft_rank + i;
      a = TransformAxis(a, axis, lengths[i], out_shape.dimensions(axis), true, false);
    }
    a = TransformAxis(a, last, lengths.back(), out_shape.dimensions(last), true, true);
  } else {
    // The last dimension first: RFFT keeps only n/2+1 bins of it, and truncation commutes
    // with the transforms of the other dimensions.
    for (int64_t i = fft_rank - 1; i >= 0; --i) {
      const int64_t axis = rank - fft_rank + i;
      a = TransformAxis(a, axis, lengths[i], out_shape.dimensions(axis), inverse, false);
    }
  }
  return StoreFromComplex(ev, out_shape, a.data);
}

}  // namespace interp
}  // namespace perfsim
