// Interpreter kernels for the linear-algebra, signal and scan ops (evaluator_linalg.cc,
// evaluator_fft.cc, evaluator_scan.cc), dispatched from the one switch in evaluator.cc.
//
// Every kernel computes in double (std::complex<double> for complex types) and rounds once to
// the result's element type. Semantics are XLA's (operation_semantics.md):
//   complex(re, im)            c64 from two f32 (c128 from f64).
//   triangular-solve(a, b)     x with op(a)·x = b (left_side) or x·op(a) = b; only the
//                              `lower` triangle of a is read; unit_diagonal takes its
//                              diagonal as 1; op = identity, transpose or adjoint.
//   cholesky(a)                L with a = L·L^H (lower) or U with a = U^H·U, from that triangle
//                              of a; the other triangle of the result is 0; NaN everywhere
//                              in a batch element whose matrix is not positive definite.
//   batch-norm-training        (y, mean, variance) over every dimension but feature_index,
//                              variance biased (divided by N); y = (x-mean)/sqrt(var+eps)
//                              ·scale + offset.
//   batch-norm-inference       y with the given mean and variance.
//   batch-norm-grad            (dx, dscale, doffset) as XLA's BatchNormGrad defines them.
//   fft                        DFT over the fft_length minor dimensions (FFT, IFFT with 1/n,
//                              RFFT keeping n/2+1, IRFFT from the Hermitian half); an input
//                              shorter than fft_length is zero-padded and an output shorter
//                              than it keeps the first elements. O(n^2) per transformed row.
//   scan                       the body once per position of the scan dimension (reversed
//                              when is_reverse), carries threaded, outputs stacked.
// scaled-dot is refused by name (Unimplemented).
#ifndef PERFSIM_SIM_INTERP_EVALUATOR_LINALG_H_
#define PERFSIM_SIM_INTERP_EVALUATOR_LINALG_H_

#include <complex>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/interp/evaluator.h"

namespace perfsim {
namespace interp {

absl::StatusOr<Value> EvalComplex(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
absl::StatusOr<Value> EvalTriangularSolve(DeviceEvaluator& ev, const Instruction& instruction,
                                          OperandValues operands);
absl::StatusOr<Value> EvalCholesky(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands);
absl::StatusOr<Value> EvalBatchNorm(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);
absl::StatusOr<Value> EvalScaledDot(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);
absl::StatusOr<Value> EvalFft(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands);
absl::StatusOr<Value> EvalScan(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands);

// The elements of a floating-point or complex array value, in row-major order, as complex
// doubles (imaginary part 0 for real types). InvalidArgument for other element types.
absl::StatusOr<std::vector<std::complex<double>>> LoadAsComplex(const Value& value);
// A new array of `shape` (floating point or complex) holding `values` (real parts only for a
// real type), rounded once.
absl::StatusOr<Value> StoreFromComplex(DeviceEvaluator& ev, const Shape& shape,
                                       const std::vector<std::complex<double>>& values);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_EVALUATOR_LINALG_H_
