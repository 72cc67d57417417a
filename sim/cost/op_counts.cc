// The counting pass (op_counts.h): the per-instruction rules, one case per opcode. Each rule
// cites what XLA does (openxla/xla xla/service/hlo_cost_analysis.cc, summarised in
// shared/reference/xla_cost_model.md section 1) and, where true-cost mode differs, why. How
// computations are walked and summed (and while / conditional) is in op_counts_computation.cc;
// fusions, custom-calls and the linear-algebra ops have files of their own.
#include "sim/cost/op_counts.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/cost/op_counts_internal.h"
#include "sim/cost/shape_bytes.h"
#include "sim/cost/window_counts.h"
#include "sim/ir/collective_groups.h"

namespace perfsim {
namespace cost_internal {

int64_t Log2Ceiling(int64_t n) {
  int64_t bits = 0;
  while (bits < 63 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

int64_t DotFlops(const Shape& lhs, int64_t result_elements, const DotDimensionNumbers& dnums) {
  int64_t reduction = 1;
  for (int64_t d : dnums.lhs_contracting_dimensions) {
    if (d >= 0 && d < lhs.rank()) reduction *= lhs.dimensions(d);
  }
  return kFmaFlops * result_elements * reduction;
}

namespace {

// XLA's transcendental set (HandleElementwiseOp): these count as transcendentals, not flops.
bool IsTranscendental(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAtan2:
    case Opcode::kCbrt:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kPower:
    case Opcode::kRsqrt:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh:
      return true;
    default:
      return false;
  }
}

// ragged-dot flops. XLA deletes output dimensions [0, #rhs_group_dims) before GetDotFlops: in
// the MoE mode ([M,K] x [G,K,N] -> [M,N]) that removes M, not G. The true count keeps every
// output element; in the ragged-contracting mode ([M,K] x [K,N] -> [G,M,N]) each group
// contracts only its own slice of K, so the K sum runs once over all groups, not G times.
int64_t RaggedDotFlops(const Instruction& dot, bool xla) {
  if (dot.operand_count() < 2 || !dot.shape().IsArray()) return 0;
  const RaggedDotDimensionNumbers rdn =
      dot.attributes().ragged_dot_dimension_numbers.value_or(RaggedDotDimensionNumbers{});
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& out = dot.shape();
  int64_t out_elements = out.ElementCount();
  if (xla) {
    int64_t deleted = 1;
    const int64_t groups = static_cast<int64_t>(rdn.rhs_group_dimensions.size());
    for (int64_t i = 0; i < groups && i < out.rank(); ++i) deleted *= out.dimensions(i);
    out_elements = deleted == 0 ? 0 : out_elements / deleted;
    return DotFlops(lhs, out_elements, rdn.dot);
  }
  const bool ragged_contracting =
      !rdn.lhs_ragged_dimensions.empty() &&
      std::find(rdn.dot.lhs_contracting_dimensions.begin(),
                rdn.dot.lhs_contracting_dimensions.end(),
                rdn.lhs_ragged_dimensions[0]) != rdn.dot.lhs_contracting_dimensions.end();
  if (ragged_contracting && out.rank() > 0 && out.dimensions(0) > 0) {
    out_elements /= out.dimensions(0);  // the leading group dimension of the result
  }
  return DotFlops(lhs, out_elements, rdn.dot);
}

// Positions of b/f (or i/o) and the spatial digits in one side of conv dim_labels.
struct ConvSide {
  int64_t first = -1;
  int64_t second = -1;
  std::vector<int64_t> spatial;  // position of spatial dimension 0, 1, ...
};

ConvSide ParseConvSide(absl::string_view text, char first, char second) {
  ConvSide side;
  side.spatial.assign(text.size(), -1);
  int64_t count = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == first) side.first = static_cast<int64_t>(pos);
    if (c == second) side.second = static_cast<int64_t>(pos);
    if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < text.size()) {
      side.spatial[c - '0'] = static_cast<int64_t>(pos);
      ++count;
    }
  }
  side.spatial.resize(count);
  return side;
}

// XLA's GetConvolutionFlops: 2 · (Cin / feature groups) · Cout · (N / batch groups) · the
// product over spatial dimensions of the (output, kernel) position pairs that read a real
// (not padding, not dilation-hole) input element, counted in closed form (window_counts.h).
// A double: the product can exceed int64.
double ConvolutionFlops(const Instruction& conv) {
  if (conv.operand_count() < 2 || !conv.shape().IsArray()) return 0;
  const Shape& lhs = conv.operand(0)->shape();
  const Shape& rhs = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  const InstructionAttributes& attrs = conv.attributes();
  const absl::string_view labels = attrs.dim_labels;
  const size_t underscore = labels.find('_');
  const size_t arrow = labels.find("->");
  if (underscore == absl::string_view::npos || arrow == absl::string_view::npos) return 0;
  const ConvSide in = ParseConvSide(labels.substr(0, underscore), 'b', 'f');
  const ConvSide kernel = ParseConvSide(labels.substr(underscore + 1, arrow - underscore - 1), 'i', 'o');
  const ConvSide result = ParseConvSide(labels.substr(arrow + 2), 'b', 'f');
  if (in.first < 0 || in.second < 0 || result.second < 0) return 0;
  const std::vector<WindowDimension> window = attrs.window.value_or(std::vector<WindowDimension>{});
  double positions = 1;
  for (size_t s = 0; s < window.size() && s < in.spatial.size() && s < kernel.spatial.size() &&
                     s < result.spatial.size();
       ++s) {
    const ConvDimensionSizes sizes{.input = lhs.dimensions(in.spatial[s]),
                                   .kernel = rhs.dimensions(kernel.spatial[s]),
                                   .output = out.dimensions(result.spatial[s])};
    positions *= static_cast<double>(ConvValidPositions(sizes, window[s]));
  }
  const int64_t fgc = std::max<int64_t>(1, attrs.feature_group_count);
  const int64_t bgc = std::max<int64_t>(1, attrs.batch_group_count);
  return static_cast<double>(kFmaFlops) *
         static_cast<double>(lhs.dimensions(in.second) / fgc) *
         static_cast<double>(out.dimensions(result.second)) *
         static_cast<double>(lhs.dimensions(in.first) / bgc) * positions;
}

// XLA's ShapeUtil::TransposeIsBitcast: the transpose only renames dimensions when the physical
// order of the data stays the same (dims composed with the output layout equals the input
// layout). XLA's cost analysis then treats it as a bitcast.
bool TransposeIsBitcast(const Instruction& transpose) {
  if (transpose.operand_count() != 1) return false;
  const Shape& in = transpose.operand(0)->shape();
  const Shape& out = transpose.shape();
  if (!in.IsArray() || !out.IsArray() || in.element_type() != out.element_type()) return false;
  const std::vector<int64_t> dims =
      transpose.attributes().dimensions.value_or(std::vector<int64_t>{});
  const std::vector<int64_t> in_order = in.EffectiveLayout().minor_to_major;
  const std::vector<int64_t> out_order = out.EffectiveLayout().minor_to_major;
  if (dims.size() != out_order.size() || in_order.size() != out_order.size()) return false;
  for (size_t i = 0; i < out_order.size(); ++i) {
    const int64_t o = out_order[i];
    if (o < 0 || o >= static_cast<int64_t>(dims.size()) || dims[o] != in_order[i]) return false;
  }
  return true;
}

// A reshape whose operand and result are both in the default (row-major), untiled layout and of
// one element type: the data does not move.
bool ReshapeIsBitcast(const Instruction& reshape) {
  if (reshape.operand_count() != 1) return false;
  const Shape& in = reshape.operand(0)->shape();
  const Shape& out = reshape.shape();
  return in.IsArray() && out.IsArray() && in.element_type() == out.element_type() &&
         in.EffectiveLayout().minor_to_major == Layout::Default(in.rank()).minor_to_major &&
         out.EffectiveLayout().minor_to_major == Layout::Default(out.rank()).minor_to_major &&
         in.EffectiveLayout().tiles.empty() && out.EffectiveLayout().tiles.empty();
}

}  // namespace

bool IsSliceView(const Instruction& instruction) {
  if (instruction.operand_count() < 2) return false;
  const Shape& buffer = instruction.operand(0)->shape();
  if (instruction.opcode() == Opcode::kDynamicSlice) {
    return instruction.shape().IsArray() &&
           IsContiguousBlock(buffer, instruction.shape().dimensions());
  }
  if (instruction.opcode() == Opcode::kDynamicUpdateSlice) {
    const Shape& update = instruction.operand(1)->shape();
    return update.IsArray() && IsContiguousBlock(buffer, update.dimensions());
  }
  return false;
}

bool IsBitcastLike(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  return op == Opcode::kBitcast || (op == Opcode::kReshape && ReshapeIsBitcast(instruction)) ||
         (op == Opcode::kTranspose && TransposeIsBitcast(instruction));
}

// XLA's Preprocess: read every operand (a tuple operand is its pointer table), write every
// array of the result.
OpCounts Counter::Default(const Instruction& instruction) {
  OpCounts c;
  c.output_bytes = R(static_cast<double>(LeafBytes(instruction.shape())));
  c.bytes_accessed = c.output_bytes;
  for (const Instruction* operand : instruction.operands()) {
    const double bytes = R(static_cast<double>(ShapeSizeBytes(operand->shape())));
    c.operand_bytes.push_back(bytes);
    Add(c.bytes_accessed, bytes);
  }
  return c;
}

OpCounts Counter::Count(const Instruction& instruction) {
  OpCounts c = Default(instruction);
  const Shape& shape = instruction.shape();
  const auto zero_everything = [&]() {
    return OpCounts{.operand_bytes = std::vector<double>(instruction.operand_count(), 0.0)};
  };
  switch (instruction.opcode()) {
    // No computation and no memory traffic.
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kGetTupleElement:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kDomain:
    case Opcode::kBitcast:
      return zero_everything();

    // Data movement: reads its operands, writes its result, no flops.
    case Opcode::kBroadcast:
    case Opcode::kDynamicReshape:
    case Opcode::kCopy:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kIota:
    case Opcode::kOptimizationBarrier:
    case Opcode::kGetDimensionSize:
    case Opcode::kSetDimensionSize:
    case Opcode::kCopyStart:
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kRngGetAndUpdateState:
      return c;
    case Opcode::kCopyDone:
      return xla() ? c : zero_everything();
    case Opcode::kTranspose:
      return TransposeIsBitcast(instruction) ? zero_everything() : c;
    case Opcode::kReshape:
      // XLA charges every reshape; a reshape between row-major layouts keeps the bytes in
      // place, so accelerators make it a bitcast.
      return !xla() && ReshapeIsBitcast(instruction) ? zero_everything() : c;

    // Collectives: XLA's HloCostAnalysis has no network model, only the default bytes.
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllToAll:
    case Opcode::kRaggedAllToAll:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kSend:
    case Opcode::kRecv:
      return c;
    // The end of an asynchronous op: XLA charges its operand and result again; the data moved
    // at the start, so the true count is 0.
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kSendDone:
    case Opcode::kRecvDone:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      return xla() ? c : zero_everything();
    case Opcode::kReduceScatter:
      if (!xla()) {
        // Each device adds N-1 partial shards into its own output shard.
        const int64_t n = CollectiveGroupSize(instruction, options_.num_devices);
        c.flops = static_cast<double>(ElementsInRecursive(shape) * std::max<int64_t>(0, n - 1));
      }
      return c;
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart: {
      // XLA assumes two replicas: one addition per output element (its TODO b/33004697).
      double elements = static_cast<double>(ElementsInRecursive(shape));
      if (!xla()) {
        const int64_t n = CollectiveGroupSize(instruction, options_.num_devices);
        elements = elements * static_cast<double>(std::max<int64_t>(0, n - 1)) /
                   static_cast<double>(std::max<int64_t>(1, n));
      }
      c.flops = R(elements);
      return c;
    }

    // Elementwise: one operation per output element, transcendental or not.
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kBitcastConvert:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClamp:
    case Opcode::kClz:
    case Opcode::kCompare:
    case Opcode::kConvert:
    case Opcode::kCos:
    case Opcode::kDivide:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kPopcnt:
    case Opcode::kPower:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRemainder:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSelect:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kStochasticConvert:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kXor:
      if (IsTranscendental(instruction.opcode())) {
        c.transcendentals = R(static_cast<double>(ElementsIn(shape)));
      } else {
        c.flops = R(static_cast<double>(ElementsIn(shape)));
      }
      return c;
    case Opcode::kRng:
      c.transcendentals = R(static_cast<double>(ElementsIn(shape)));
      return c;
    case Opcode::kRngBitGenerator:
      c.transcendentals = R(static_cast<double>(ElementsInRecursive(shape)));
      return c;

    case Opcode::kDot:
      if (instruction.operand_count() >= 1 && shape.IsArray()) {
        c.flops = R(static_cast<double>(DotFlops(
            instruction.operand(0)->shape(), shape.ElementCount(),
            instruction.attributes().dot_dimension_numbers.value_or(DotDimensionNumbers{}))));
      }
      return c;
    case Opcode::kRaggedDot:
      c.flops = R(static_cast<double>(RaggedDotFlops(instruction, xla())));
      return c;
    case Opcode::kConvolution:
      c.flops = R(ConvolutionFlops(instruction));
      return c;

    case Opcode::kReduce: {
      // The reducer runs E(input) - E(output) times; it already counts every variadic operand.
      if (instruction.operand_count() == 0) return c;
      const Shape& out0 = shape.IsTuple() && shape.tuple_size() > 0 ? shape.tuple_shapes(0) : shape;
      const double count = static_cast<double>(ElementsIn(instruction.operand(0)->shape()) -
                                               ElementsIn(out0));
      ScaleSubcomputation(instruction.to_apply(), count, c, /*accumulate=*/false);
      return c;
    }
    case Opcode::kReduceWindow: {
      if (instruction.operand_count() == 0) return c;
      const Shape& out0 = shape.IsTuple() && shape.tuple_size() > 0 ? shape.tuple_shapes(0) : shape;
      const std::vector<WindowDimension> window =
          instruction.attributes().window.value_or(std::vector<WindowDimension>{});
      // XLA recognises a full reduce along one dimension broadcast back and charges
      // E(out)/N + (N-1) applications (xla_cost_model.md 1.2, window_counts.h).
      const double count = xla() ? XlaReduceWindowApplications(window, out0, shape.IsArray())
                                 : ReduceWindowApplications(window, ElementsIn(out0));
      ScaleSubcomputation(instruction.to_apply(), count, c, /*accumulate=*/false);
      return c;
    }
    case Opcode::kSelectAndScatter: {
      // Per source element: window-1 selects and one scatter.
      if (instruction.operand_count() < 2) return c;
      const double source = static_cast<double>(ElementsIn(instruction.operand(1)->shape()));
      const double window_elements = WindowElements(
          instruction.attributes().window.value_or(std::vector<WindowDimension>{}));
      ScaleSubcomputation(instruction.select(), source * (window_elements - 1), c,
                          /*accumulate=*/true);
      ScaleSubcomputation(instruction.scatter(), source, c, /*accumulate=*/true);
      return c;
    }
    case Opcode::kMap:
      ScaleSubcomputation(instruction.to_apply(), static_cast<double>(ElementsIn(shape)), c,
                          /*accumulate=*/false);
      return c;
    case Opcode::kSort: {
      if (instruction.operand_count() == 0) return c;
      const Shape& keys = instruction.operand(0)->shape();
      const int64_t elements = ElementsIn(keys);
      if (xla()) {
        // A comparison sort over all elements, the comparator not visited.
        c.flops = R(static_cast<double>(elements * Log2Ceiling(elements)));
        return c;
      }
      // Each row along the sort dimension is sorted on its own.
      const std::vector<int64_t> dims = instruction.attributes().dimensions.value_or(
          std::vector<int64_t>{keys.rank() > 0 ? keys.rank() - 1 : 0});
      const int64_t d = dims.empty() ? 0 : dims[0];
      const int64_t length = d >= 0 && d < keys.rank() ? keys.dimensions(d) : elements;
      const double comparator = instruction.to_apply() ? Sum(*instruction.to_apply()).flops : 0.0;
      c.flops = static_cast<double>(elements * Log2Ceiling(length)) * std::max(1.0, comparator);
      return c;
    }
    case Opcode::kTopK:
      if (!xla() && instruction.operand_count() == 1) {
        const int64_t k = instruction.attributes().k.value_or(1);
        c.flops = static_cast<double>(ElementsIn(instruction.operand(0)->shape()) *
                                      std::max<int64_t>(1, Log2Ceiling(k)));
      }
      return c;  // XLA: 0 flops (a TODO upstream).

    // Ops that read only part of an operand.
    case Opcode::kSlice: {
      const double out = R(static_cast<double>(ShapeSizeBytes(shape)));
      c.operand_bytes.assign(instruction.operand_count(), 0.0);
      if (!c.operand_bytes.empty()) c.operand_bytes[0] = out;
      c.output_bytes = out;
      c.bytes_accessed = R(2 * out);
      return c;
    }
    case Opcode::kDynamicSlice: {
      // Reads the slice and (XLA) the first index operand; the true count reads every index.
      // (XLA's per-operand entries of the other indices keep their default, unread sizes.)
      // True count: a contiguous block (one layer of a stacked [N, ...] array) is an address
      // offset, not a copy (IsSliceView).
      if (!xla() && IsSliceView(instruction)) return zero_everything();
      const double out = R(static_cast<double>(ShapeSizeBytes(shape)));
      if (c.operand_bytes.empty()) return c;
      c.operand_bytes[0] = out;
      c.output_bytes = out;
      c.bytes_accessed = R(2 * out);
      for (int64_t i = 1; i < instruction.operand_count() && (i == 1 || !xla()); ++i) {
        Add(c.bytes_accessed, c.operand_bytes[i]);
      }
      return c;
    }
    case Opcode::kDynamicUpdateSlice: {
      // In place: the operand is aliased to the result, only the update is read and written.
      // True count: a contiguous block is written where it lies by the kernel that produces
      // it, so the update moves no further bytes (IsSliceView).
      if (instruction.operand_count() < 2) return c;
      if (!xla() && IsSliceView(instruction)) return zero_everything();
      // (XLA's per-operand entries of the indices after the first keep their default sizes.)
      const double update = R(static_cast<double>(ShapeSizeBytes(instruction.operand(1)->shape())));
      c.operand_bytes[0] = 0;
      c.output_bytes = update;
      c.bytes_accessed = R(2 * update);
      for (int64_t i = 2; i < instruction.operand_count() && (i == 2 || !xla()); ++i) {
        Add(c.bytes_accessed, c.operand_bytes[i]);
      }
      return c;
    }
    case Opcode::kGather: {
      if (instruction.operand_count() < 2) return c;
      const double out = R(static_cast<double>(ShapeSizeBytes(shape)));
      const double indices = R(static_cast<double>(ShapeSizeBytes(instruction.operand(1)->shape())));
      c.operand_bytes = {out, indices};
      c.output_bytes = out;
      c.bytes_accessed = R(R(2 * out) + indices);
      return c;
    }
    case Opcode::kScatter: {
      // Operands (inputs..., indices, updates...): reads and writes the updated regions of the
      // inputs and reads the updates, 3 x updates in all, plus the indices.
      const int64_t n = (instruction.operand_count() - 1) / 2;
      if (n < 1) return c;
      c.operand_bytes.assign(instruction.operand_count(), 0.0);
      double total_update = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double update =
            R(static_cast<double>(ShapeSizeBytes(instruction.operand(n + 1 + i)->shape())));
        c.operand_bytes[i] = update;
        c.operand_bytes[n + 1 + i] = update;
        Add(total_update, update);
      }
      const double indices = R(static_cast<double>(ShapeSizeBytes(instruction.operand(n)->shape())));
      c.operand_bytes[n] = indices;
      c.bytes_accessed = R(indices + R(3 * total_update));
      c.output_bytes = total_update;
      c.flops = 0;
      c.transcendentals = 0;
      ScaleSubcomputation(instruction.to_apply(),
                          static_cast<double>(ElementsIn(instruction.operand(n + 1)->shape())), c,
                          /*accumulate=*/false);
      return c;
    }

    case Opcode::kTuple:
      // XLA writes the tuple's pointer table (8 B per element); on an accelerator a tuple is
      // bookkeeping and moves no data.
      c.operand_bytes.assign(instruction.operand_count(), 0.0);
      c.output_bytes = xla() ? R(static_cast<double>(ShapeSizeBytes(shape))) : 0.0;
      c.bytes_accessed = c.output_bytes;
      return c;

    case Opcode::kFusion:
      return CountFusion(instruction);
    case Opcode::kCall:
      return instruction.to_apply() ? Sum(*instruction.to_apply()) : c;
    case Opcode::kAsyncStart:
      return instruction.calls().empty() || instruction.calls()[0] == nullptr
                 ? c
                 : Sum(*instruction.calls()[0]);
    case Opcode::kWhile:
      return CountWhile(instruction);
    case Opcode::kConditional:
      return CountConditional(instruction);
    case Opcode::kCustomCall:
      return CountCustomCall(instruction, c);
    case Opcode::kBatchNormGrad:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormTraining:
    case Opcode::kCholesky:
    case Opcode::kComplex:
    case Opcode::kFft:
    case Opcode::kScaledDot:
    case Opcode::kScan:
    case Opcode::kTriangularSolve:
      return CountLinalg(instruction, c);
  }
  return c;
}

}  // namespace cost_internal

OpCounts CountInstruction(const Instruction& instruction, const CountOptions& options) {
  cost_internal::Counter counter(options);
  return counter.Count(instruction);
}

OpCounts CountComputation(const Computation& computation, const CountOptions& options) {
  cost_internal::Counter counter(options);
  return counter.Sum(computation);
}

int64_t CollectiveGroupSize(const Instruction& instruction, int64_t num_devices) {
  const Opcode op = instruction.opcode();
  if (op == Opcode::kCollectivePermute || op == Opcode::kCollectivePermuteStart) return 2;
  const std::optional<ReplicaGroups>& groups = instruction.attributes().replica_groups;
  const Module* module = instruction.parent() != nullptr ? instruction.parent()->parent() : nullptr;
  if (module != nullptr && module->replica_count() * module->num_partitions() > 1) {
    // The header gives the device grid: XLA's group size for the collective's mode
    // (collective_groups.h), e.g. listed replicas x num_partitions for an all-gather with a
    // channel_id and no use_global_device_ids.
    const absl::StatusOr<CollectiveOpGroupMode> mode = GroupModeOf(instruction);
    if (mode.ok()) {
      const int64_t size =
          SubgroupSize(groups.has_value() ? absl::MakeConstSpan(groups->groups)
                                          : absl::Span<const std::vector<int64_t>>(),
                       *mode, module->replica_count(), module->num_partitions());
      if (size >= 1) return size;
    }
  }
  if (groups.has_value() && !groups->groups.empty() && !groups->groups[0].empty()) {
    return static_cast<int64_t>(groups->groups[0].size());
  }
  return std::max<int64_t>(1, num_devices);
}

}  // namespace perfsim
