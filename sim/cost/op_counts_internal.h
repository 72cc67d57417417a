// Internals of the counting pass (op_counts*.cc); not a public API.
#ifndef PERFSIM_SIM_COST_OP_COUNTS_INTERNAL_H_
#define PERFSIM_SIM_COST_OP_COUNTS_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sim/cost/op_counts.h"
#include "sim/ir/instruction.h"

namespace perfsim {
namespace cost_internal {

// Users of every instruction of one computation, each user once, in instruction order (XLA's
// HloInstruction::users() holds each user once).
using UserMap = absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>>;

// One counting pass. XLA keeps its counts in float32 (HloCostAnalysis::Properties); in
// xla-compatible mode every stored value and every sum is rounded to float32 at the same
// points as XLA does, so that large totals round exactly as XLA's do. True-cost mode keeps
// doubles.
class Counter {
 public:
  explicit Counter(const CountOptions& options) : options_(options) {}

  OpCounts Count(const Instruction& instruction);
  // XLA's ProcessSubcomputation: every instruction visited once in XLA's DFS order, keys summed.
  // Remembered per computation; the computations it calls are summed first, callees before
  // callers, by an explicit stack, so that the C++ stack stays a few frames deep however
  // deeply the module nests its calls (a chain of 5,000 nested calls overflowed it).
  OpCounts Sum(const Computation& computation);

  bool xla() const { return options_.mode == CostMode::kXlaCompatible; }
  // A value as XLA would store it: float32 in xla-compatible mode.
  double R(double value) const {
    return xla() ? static_cast<double>(static_cast<float>(value)) : value;
  }
  // a += b with XLA's rounding.
  void Add(double& a, double b) const { a = R(R(a) + R(b)); }

  const UserMap& Users(const Computation& computation);

  // Fusion rules (op_counts_fusion.cc).
  OpCounts CountFusion(const Instruction& fusion);
  double FusionParameterReadBytes(const Instruction& parameter);

 private:
  OpCounts Default(const Instruction& instruction);
  OpCounts CountCustomCall(const Instruction& instruction, OpCounts counts);
  // fft, triangular-solve, cholesky, batch-norm-*, complex, scaled-dot, scan
  // (op_counts_linalg.cc); `counts` holds the default (XLA Preprocess) bytes.
  OpCounts CountLinalg(const Instruction& instruction, OpCounts counts);
  OpCounts CountWhile(const Instruction& instruction);
  OpCounts CountConditional(const Instruction& instruction);
  void ScaleSubcomputation(const Computation* computation, double times, OpCounts& counts,
                           bool accumulate);
  OpCounts SumInstructions(const Computation& computation);
  double FusionParameterReadBytesUncached(const Instruction& parameter);

  CountOptions options_;
  absl::flat_hash_map<const Computation*, UserMap> users_;
  absl::flat_hash_map<const Computation*, OpCounts> sums_;
  absl::flat_hash_map<const Instruction*, double> parameter_reads_;
};

// One multiply-add is two flops (XLA's kFmaFlops).
inline constexpr int64_t kFmaFlops = 2;

// A dynamic-slice or dynamic-update-slice whose block (the result, or the update) is one
// contiguous range of the buffer (shape_bytes.h IsContiguousBlock): on an accelerator an
// address offset into the buffer, not a copy. XLA's TPU and GPU compilers fuse such a slice
// into the kernel that reads it (the consumer reads the layer where it lies) and make the
// kernel that computes an update write it in place; XLA:CPU runs each as a copy kernel. The
// true count of such an op, or of a fusion that is nothing else (fusion_view), is 0 bytes.
bool IsSliceView(const Instruction& instruction);

// bitcast, or a reshape / transpose that keeps the bytes where they are (a row-major reshape,
// XLA's TransposeIsBitcast).
bool IsBitcastLike(const Instruction& instruction);

// ceil(log2(n)) for n >= 1; 0 for n <= 1.
int64_t Log2Ceiling(int64_t n);

// XLA's GetDotFlops: 2 · E(result) · product of the lhs contracting sizes.
int64_t DotFlops(const Shape& lhs, int64_t result_elements, const DotDimensionNumbers& dnums);

// Instructions of `computation` in the order XLA's HloComputation::Accept visits them:
// unreachable roots first (instructions nobody uses, in text order), then the root, each by
// a depth-first post-order over operands and then control predecessors.
std::vector<const Instruction*> XlaVisitOrder(const Computation& computation,
                                              const UserMap& users);

// `root` and every computation it calls, directly or not, callees before callers, found with
// an explicit stack (the call graph's depth comes from the input). Each computation once; a
// recursive call graph (unverified modules only) is cut where it closes. Computations for
// which `known` is true are neither listed nor entered (a memo already holds them).
std::vector<const Computation*> CalleesFirst(
    const Computation& root, const std::function<bool(const Computation*)>& known);

}  // namespace cost_internal
}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_OP_COUNTS_INTERNAL_H_
