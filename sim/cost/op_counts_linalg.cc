// Counting rules of fft, triangular-solve, cholesky, batch-norm-*, complex, scaled-dot and
// scan (Counter::CountLinalg, called from the switch in op_counts.cc).
//
// xla-compatible mode follows openxla/xla xla/service/hlo_cost_analysis.cc (HandleFft,
// HandleTriangularSolve, HandleCholesky, HandleBatchNorm*, kComplex through
// HandleElementwiseOp) and was checked against jaxlib 0.10.2's hlo_module_cost_analysis on
// small modules (tests/cost/op_counts_linalg_test.cc has the figures and their derivations).
// scaled-dot and scan are newer than the stored XLA source; their rules are read off jaxlib:
//   scaled-dot: the dot's flops (2 · E(result) · contracted size), default bytes;
//   scan: the body's flops and transcendentals times E(first carry) (independent of the scan
//         length, as jaxlib reports it), default bytes.
//
// True mode differs where XLA's count is not what the op does:
//   triangular-solve: each solved element costs n flops (n/2 multiply-adds along its row of
//     the triangle), and b is read whole: XLA's HandleTriangularSolve writes operand 1's size
//     into operand 0's entry, so XLA's per-operand entries are {size(b), size(b)};
//   batch-norm-*: XLA says 0 flops (a TODO upstream); true counts the expander's elementwise
//     work per element (training 7, inference 4, grad 9 flops) and one rsqrt per feature;
//   scan: the body once per position along the scan dimension.
#include <cstdint>

#include "sim/cost/op_counts_internal.h"
#include "sim/cost/shape_bytes.h"

namespace perfsim {
namespace cost_internal {
namespace {

// floor(log2(n)) for n >= 1 (XLA's Log2Floor); 0 for n <= 1.
int64_t Log2Floor(int64_t n) {
  int64_t result = 0;
  while (n > 1) {
    n >>= 1;
    ++result;
  }
  return result;
}

int64_t MinorDimension(const Shape& shape) {
  return shape.rank() > 0 ? shape.dimensions(shape.rank() - 1) : 1;
}

}  // namespace

OpCounts Counter::CountLinalg(const Instruction& instruction, OpCounts c) {
  const Shape& shape = instruction.shape();
  const InstructionAttributes& attrs = instruction.attributes();
  switch (instruction.opcode()) {
    case Opcode::kFft: {
      // 2 flops per FMA x 4 FMAs per complex multiply x prod(log2 fft_length) per element of
      // the operand (its real shape for RFFT).
      if (instruction.operand_count() < 1) return c;
      int64_t log_factors = 1;
      for (int64_t length : attrs.fft_length.value_or(std::vector<int64_t>{})) {
        log_factors *= Log2Floor(length);
      }
      c.flops = R(static_cast<double>(kFmaFlops * 4 * log_factors *
                                      ElementsIn(instruction.operand(0)->shape())));
      return c;
    }
    case Opcode::kTriangularSolve: {
      if (instruction.operand_count() < 2) return c;
      const Shape& a = instruction.operand(0)->shape();
      const Shape& b = instruction.operand(1)->shape();
      const double a_bytes = static_cast<double>(ShapeSizeBytes(a));
      const double b_bytes = static_cast<double>(ShapeSizeBytes(b));
      // Half of a (its triangle) is read, b whole, the result written.
      double bytes = R(static_cast<double>(ShapeSizeBytes(shape)));
      c.output_bytes = bytes;
      Add(bytes, R(static_cast<float>(a_bytes) / 2.0f));
      Add(bytes, b_bytes);
      c.bytes_accessed = bytes;
      c.operand_bytes = {xla() ? R(b_bytes) : R(a_bytes / 2), R(b_bytes)};
      const int64_t elements = MinorDimension(a) * ElementsIn(b);
      c.flops = R(static_cast<double>(xla() ? kFmaFlops * elements : elements));
      return c;
    }
    case Opcode::kCholesky: {
      // Half of a read, half of the result written; batch · n^3 / 3 flops (integer division,
      // as XLA).
      if (instruction.operand_count() < 1) return c;
      const Shape& a = instruction.operand(0)->shape();
      const double half = R(static_cast<float>(ShapeSizeBytes(a)) / 2.0f);
      c.output_bytes = half;
      c.operand_bytes = {half};
      c.bytes_accessed = R(half + half);
      c.flops = R(static_cast<double>(MinorDimension(a) * ElementsIn(a) / 3));
      return c;
    }
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad: {
      if (xla() || instruction.operand_count() < 1) return c;  // XLA: default bytes, 0 flops.
      const Shape& x = instruction.operand(0)->shape();
      const int64_t per_element = instruction.opcode() == Opcode::kBatchNormTraining ? 7
                                  : instruction.opcode() == Opcode::kBatchNormInference ? 4
                                                                                        : 9;
      const int64_t feature_dim = attrs.feature_index.value_or(0);
      c.flops = static_cast<double>(per_element * ElementsIn(x));
      c.transcendentals = feature_dim >= 0 && feature_dim < x.rank()
                              ? static_cast<double>(x.dimensions(feature_dim))
                              : 0.0;
      return c;
    }
    case Opcode::kComplex:
      c.flops = R(static_cast<double>(ElementsIn(shape)));
      return c;
    case Opcode::kScaledDot:
      if (instruction.operand_count() >= 2 && shape.IsArray()) {
        c.flops = R(static_cast<double>(DotFlops(
            instruction.operand(0)->shape(), shape.ElementCount(),
            attrs.dot_dimension_numbers.value_or(DotDimensionNumbers{}))));
      }
      return c;
    case Opcode::kScan: {
      const int64_t carries = attrs.num_carries.value_or(0);
      const int64_t inputs = instruction.operand_count() - carries;
      if (inputs < 1) return c;
      double times = 1;
      if (xla()) {
        if (carries > 0) times = static_cast<double>(ElementsIn(instruction.operand(inputs)->shape()));
      } else {
        const std::vector<int64_t> dims = attrs.dimensions.value_or(std::vector<int64_t>{});
        const Shape& x = instruction.operand(0)->shape();
        if (dims.size() == 1 && dims[0] >= 0 && dims[0] < x.rank()) {
          times = static_cast<double>(x.dimensions(dims[0]));
        }
      }
      ScaleSubcomputation(instruction.to_apply(), times, c, /*accumulate=*/!xla());
      return c;
    }
    default:
      return c;  // not one of this file's opcodes (the caller's switch lists them)
  }
}

}  // namespace cost_internal
}  // namespace perfsim
