// Result shapes the text leaves out, `n = negate(x)` or `add(x, negate(y))`: which ops may leave
// them out (XLA's parser's list, xla/hlo/parser/hlo_parser.cc CanInferShape), and their
// inference once the module is read, through the opcode table's inference functions.
//
// The inference functions give no layouts (the verifier compares without them), but XLA's
// parser keeps the layout its ShapeInference gives, and that is part of the module's meaning:
// `t = transpose(p), dimensions={1,0}` of `p = f32[2,3]{1,0}` is `f32[3,2]{0,1}` to XLA. So the
// parser adds XLA's layouts to the shapes it infers (WithXlaLayouts); written shapes stay as
// written. A shape without a layout stands for XLA's default (descending) one throughout.
// One written shape XLA ignores, a send's, is rebuilt here too (XlaSendShape).
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/ir/shape_inference.h"
#include "sim/util/status.h"

namespace perfsim {

bool ParserInfersShape(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAddDependency:
    case Opcode::kAfterAll:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kBatchNormGrad:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormTraining:
    case Opcode::kBroadcast:
    case Opcode::kCall:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kCholesky:
    case Opcode::kClamp:
    case Opcode::kClz:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kConcatenate:
    case Opcode::kConditional:
    case Opcode::kConvolution:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kDivide:
    case Opcode::kDomain:
    case Opcode::kDot:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFft:
    case Opcode::kFloor:
    case Opcode::kGather:
    case Opcode::kGetDimensionSize:
    case Opcode::kGetTupleElement:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kMap:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kPad:
    case Opcode::kPartitionId:
    case Opcode::kPopcnt:
    case Opcode::kPower:
    case Opcode::kRaggedDot:
    case Opcode::kReal:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kRemainder:
    case Opcode::kReplicaId:
    case Opcode::kReverse:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kScatter:
    case Opcode::kSelect:
    case Opcode::kSelectAndScatter:
    case Opcode::kSetDimensionSize:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSort:
    case Opcode::kSqrt:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kTopK:
    case Opcode::kTranspose:
    case Opcode::kTriangularSolve:
    case Opcode::kTuple:
    case Opcode::kWhile:
    case Opcode::kXor:
      return true;
    // XLA could infer these but always writes their shapes, and its parser requires them.
    // (opt-barrier is on XLA's CanInferShape list, but its parser then asks the unary-op rule,
    // which refuses it: "Unknown operation for unary shape inference", jaxlib 0.10.2.)
    case Opcode::kOptimizationBarrier:
    case Opcode::kAllGather:
    case Opcode::kAllGatherDone:
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceDone:
    case Opcode::kAllReduceStart:
    case Opcode::kAllToAll:
    case Opcode::kAsyncDone:
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCopyDone:
    case Opcode::kCopyStart:
    case Opcode::kDynamicReshape:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kRaggedAllToAll:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kReduceScatter:
    case Opcode::kScaledDot:
    case Opcode::kScan:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kSlice:
    // The result is an input: only the written shape says what it is.
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kConstant:
    case Opcode::kConvert:
    case Opcode::kCustomCall:
    case Opcode::kFusion:
    case Opcode::kInfeed:
    case Opcode::kIota:
    case Opcode::kOutfeed:
    case Opcode::kParameter:
    case Opcode::kReducePrecision:
    case Opcode::kReshape:
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kStochasticConvert:
      return false;
  }
  return false;
}

namespace {

// What an instruction's inferred shape is read from: its operands and the roots of the
// computations it calls (a call's result is its callee's root).
std::vector<Instruction*> ShapeDependencies(const Instruction& instruction) {
  std::vector<Instruction*> dependencies(instruction.operands().begin(),
                                         instruction.operands().end());
  for (const Computation* callee : instruction.called_computations()) {
    if (callee != nullptr && callee->root() != nullptr) dependencies.push_back(callee->root());
  }
  return dependencies;
}

// XLA's rule for a broadcast without a shape (ShapeInference::InferBroadcastShape): the
// `dimensions` are taken as sizes prepended to the operand's. Only `broadcast(f32[] x),
// dimensions={}` gives a broadcast the verifier accepts (a scalar); the rest fail it there,
// as in XLA.
Shape XlaBroadcastShape(const Instruction& broadcast) {
  const Shape& operand = broadcast.operand(0)->shape();
  if (!operand.IsArray()) return operand;
  std::vector<int64_t> dimensions;
  if (broadcast.attributes().dimensions.has_value()) dimensions = *broadcast.attributes().dimensions;
  dimensions.insert(dimensions.end(), operand.dimensions().begin(), operand.dimensions().end());
  for (int64_t& size : dimensions) size = std::max<int64_t>(size, 0);
  return Shape::Array(operand.element_type(), dimensions);
}

// --- XLA's layouts for inferred shapes ---

bool IsSubByte(PrimitiveType type) {
  const int bits = BitWidth(type);
  return bits > 0 && bits < 8;
}

// Gives `to` the layouts of `from`, which XLA's inference copies into its result, changing at
// most element types and sizes: `to` has from's structure (arrays of equal rank, tuples of as
// many elements). Where the element type changes, XLA's ShapeUtil::ChangeElementType keeps the
// element size `E(n)` only for a sub-byte result (`s4`), and drops it otherwise (a `pred` from
// comparing `s4{0:E(4)}` is `pred{0}`).
void TakeLayouts(const Shape& from, Shape* to) {
  if (from.IsArray() != to->IsArray() || from.element_type() == PrimitiveType::kToken) return;
  if (!from.IsArray()) {  // a tuple (or buffer): element by element
    if (from.element_type() != to->element_type() ||
        from.tuple_shapes().size() != to->tuple_shapes().size()) {
      return;
    }
    for (size_t i = 0; i < from.tuple_shapes().size(); ++i) {
      TakeLayouts(from.tuple_shapes()[i], &(*to->mutable_tuple_shapes())[i]);
    }
    return;
  }
  if (!from.has_layout() || from.rank() != to->rank()) return;
  Layout layout = *from.layout();
  if (from.element_type() != to->element_type() && !IsSubByte(to->element_type())) {
    layout.element_size_bits = 0;
  }
  to->set_layout(std::move(layout));
}

// XLA's InferTransposeShape: ShapeUtil::PermuteDimensions of the operand, whose layout keeps
// its tiles and the physical order of the dimensions (result dimension j is operand dimension
// dimensions[j]). An operand without a layout has the default one, so its transpose is the
// permuted default: `transpose(f32[2,3,4] p), dimensions={1,2,0}` is `f32[3,4,2]{1,0,2}`.
void TakeTransposedLayout(const Instruction& transpose, Shape* to) {
  const Shape& operand = transpose.operand(0)->shape();
  const std::vector<int64_t>& permutation = *transpose.attributes().dimensions;  // inferred
  std::vector<int64_t> result_dimension(permutation.size());
  for (size_t j = 0; j < permutation.size(); ++j) result_dimension[permutation[j]] = j;
  Layout layout = operand.EffectiveLayout();
  if (layout.minor_to_major.size() != permutation.size()) return;
  for (int64_t& dimension : layout.minor_to_major) dimension = result_dimension[dimension];
  if (!operand.has_layout() && layout == Layout::Default(to->rank())) return;
  to->set_layout(std::move(layout));
}

// XLA's InferSelectShape: the predicate's shape (on_true's for a scalar predicate) with
// on_true's element type and element size, `select(pred[10]{0} c, s4[10]{0:E(4)} a, b)` is
// `s4[10]{0:E(4)}`.
void TakeSelectLayout(const Instruction& select, Shape* to) {
  const Shape& predicate = select.operand(0)->shape();
  const Shape& on_true = select.operand(1)->shape();
  TakeLayouts(predicate.IsScalar() ? on_true : predicate, to);
  const int64_t element_size_bits = on_true.EffectiveLayout().element_size_bits;
  if (to->EffectiveLayout().element_size_bits == element_size_bits) return;
  Layout layout = to->EffectiveLayout();
  layout.element_size_bits = element_size_bits;
  to->set_layout(std::move(layout));
}

// Element i of a tuple result from operand i (tuple, variadic sort and scatter); a single
// result from operand 0.
void TakeOperandLayoutsByElement(const Instruction& instruction, Shape* to) {
  if (!to->IsTuple()) {
    TakeLayouts(instruction.operand(0)->shape(), to);
    return;
  }
  for (int64_t i = 0; i < to->tuple_size() && i < instruction.operand_count(); ++i) {
    TakeLayouts(instruction.operand(i)->shape(), &(*to->mutable_tuple_shapes())[i]);
  }
}

// `shape`, inferred for `instruction` without layouts, with the layouts XLA's ShapeInference
// gives it (xla/service/shape_inference.cc, checked against jaxlib 0.10.2's parser). The ops
// that build a new shape (ShapeUtil::MakeShape: dot, reduce, concatenate, pad, gather, ...)
// give the default layout, which a shape without layout already is.
Shape WithXlaLayouts(const Instruction& instruction, Shape shape) {
  switch (instruction.opcode()) {
    // The operand's shape, its element type changed: InferUnaryOpShape,
    // InferElementwiseBinaryOpShape (the lhs), InferClampShape (the operand),
    // InferTriangularSolveShape (b), InferFftShape and InferSetDimensionSizeShape (sizes
    // changed), InferWhileShape (the init value), and the ops that return an operand as it is.
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAddDependency:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kBatchNormInference:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kCholesky:
    case Opcode::kClz:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kDivide:
    case Opcode::kDomain:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFft:
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
    case Opcode::kOptimizationBarrier:
    case Opcode::kOr:
    case Opcode::kPopcnt:
    case Opcode::kPower:
    case Opcode::kReal:
    case Opcode::kRemainder:
    case Opcode::kReverse:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSelectAndScatter:
    case Opcode::kSetDimensionSize:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kSubtract:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kWhile:
    case Opcode::kXor:
      TakeLayouts(instruction.operand(0)->shape(), &shape);
      return shape;
    case Opcode::kClamp:
    case Opcode::kTriangularSolve:
      TakeLayouts(instruction.operand(1)->shape(), &shape);
      return shape;
    // MakeTupleShape of the operands (sort and scatter: of the operands they sort or update).
    case Opcode::kScatter:
    case Opcode::kSort:
    case Opcode::kTuple:
      TakeOperandLayoutsByElement(instruction, &shape);
      return shape;
    // The normalized operand, then scale and offset (or their gradients) made afresh.
    case Opcode::kBatchNormGrad:
    case Opcode::kBatchNormTraining:
      if (shape.IsTuple() && shape.tuple_size() > 0) {
        TakeLayouts(instruction.operand(0)->shape(), &(*shape.mutable_tuple_shapes())[0]);
      }
      return shape;
    case Opcode::kGetTupleElement:  // the element, index checked by the inference
      TakeLayouts(
          instruction.operand(0)->shape().tuple_shapes(*instruction.attributes().tuple_index),
          &shape);
      return shape;
    // The callee's result: to_apply's root, or the first branch's root.
    case Opcode::kCall: {
      const Computation* callee =
          instruction.to_apply() != nullptr ? instruction.to_apply() : instruction.calls()[0];
      TakeLayouts(callee->root()->shape(), &shape);
      return shape;
    }
    case Opcode::kConditional:
      TakeLayouts(instruction.branch_computations()[0]->root()->shape(), &shape);
      return shape;
    case Opcode::kSelect:
      TakeSelectLayout(instruction, &shape);
      return shape;
    case Opcode::kTranspose:
      TakeTransposedLayout(instruction, &shape);
      return shape;
    // A new shape in the default layout (or a scalar or token, whose layout says nothing).
    case Opcode::kAfterAll:
    case Opcode::kBroadcast:
    case Opcode::kConcatenate:
    case Opcode::kConvolution:
    case Opcode::kDot:
    case Opcode::kGather:
    case Opcode::kGetDimensionSize:
    case Opcode::kMap:
    case Opcode::kPad:
    case Opcode::kPartitionId:
    case Opcode::kRaggedDot:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kReplicaId:
    case Opcode::kTopK:
      return shape;
    // Never inferred by the parser (ParserInfersShape is false).
    case Opcode::kAllGather:
    case Opcode::kAllGatherDone:
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceDone:
    case Opcode::kAllReduceStart:
    case Opcode::kAllToAll:
    case Opcode::kAsyncDone:
    case Opcode::kAsyncStart:
    case Opcode::kAsyncUpdate:
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kConstant:
    case Opcode::kConvert:
    case Opcode::kCopyDone:
    case Opcode::kCopyStart:
    case Opcode::kCustomCall:
    case Opcode::kDynamicReshape:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kFusion:
    case Opcode::kInfeed:
    case Opcode::kIota:
    case Opcode::kOutfeed:
    case Opcode::kParameter:
    case Opcode::kRaggedAllToAll:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kReducePrecision:
    case Opcode::kReduceScatter:
    case Opcode::kReshape:
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kScaledDot:
    case Opcode::kScan:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kSlice:
    case Opcode::kStochasticConvert:
      return shape;
  }
  return shape;
}

// Equal to XLA once it has given every array without a layout the default one.
bool SameToXla(const Shape& a, const Shape& b) {
  if (a.element_type() != b.element_type()) return false;
  if (a.IsArray()) {
    return a.dimensions() == b.dimensions() && a.dynamic_dimensions() == b.dynamic_dimensions() &&
           a.EffectiveLayout() == b.EffectiveLayout();
  }
  if (a.tuple_shapes().size() != b.tuple_shapes().size()) return false;
  for (size_t i = 0; i < a.tuple_shapes().size(); ++i) {
    if (!SameToXla(a.tuple_shapes()[i], b.tuple_shapes()[i])) return false;
  }
  return true;
}

// XLA's parser ignores the shape written on a send: HloInstruction::CreateSend makes it
// `(operand 0's shape, u32[], token[])`. The written one is kept where it means the same, so
// prints keep it; otherwise (`send(token, data)`, operands swapped) XLA's replaces it, as
// instructions inferred from the send see XLA's.
Shape XlaSendShape(const Instruction& send) {
  Shape xla =
      Shape::Tuple({send.operand(0)->shape(), Shape::Scalar(PrimitiveType::kU32), Shape::Token()});
  return SameToXla(send.shape(), xla) ? send.shape() : xla;
}

}  // namespace

absl::Status HloParser::InferMissingShapes() {
  // Iterative depth-first order (no recursion the input controls): an instruction is inferred
  // after every unshaped instruction its shape depends on. A dependency met again while still
  // on the path is a cycle, which no order resolves.
  enum class Mark : bool { kWaiting, kOnPath };
  absl::flat_hash_map<const Instruction*, Mark> unshaped;
  absl::flat_hash_map<const Instruction*, SourceLocation> locations;
  std::vector<Unshaped> pending = unshaped_;
  // Sends are reshaped too (XlaSendShape), before what is inferred from them.
  const Computation* top_level = entry_ != nullptr ? entry_ : last_top_level_;
  if (top_level != nullptr && top_level->parent() != nullptr) {
    for (const auto& computation : top_level->parent()->computations()) {
      for (const auto& instruction : computation->instructions()) {
        if (instruction->opcode() != Opcode::kSend) continue;
        pending.push_back({instruction.get(), instruction->location()});
      }
    }
  }
  for (const Unshaped& entry : pending) {
    unshaped.emplace(entry.instruction, Mark::kWaiting);
    locations.emplace(entry.instruction, entry.opcode_location);
  }
  for (const Unshaped& entry : pending) {
    std::vector<Instruction*> stack = {entry.instruction};
    while (!stack.empty()) {
      Instruction* instruction = stack.back();
      auto it = unshaped.find(instruction);
      if (it == unshaped.end()) {  // inferred through another path
        stack.pop_back();
        continue;
      }
      if (it->second == Mark::kWaiting) {
        it->second = Mark::kOnPath;
        for (Instruction* dependency : ShapeDependencies(*instruction)) {
          auto found = unshaped.find(dependency);
          if (found == unshaped.end()) continue;
          if (found->second == Mark::kOnPath) {
            return ErrorAt(locations[instruction],
                           absl::StrCat(instruction->name(),
                                        ": expected a result shape that does not depend on "
                                        "itself; got a cycle through '",
                                        dependency->name(), "'"));
          }
          stack.push_back(dependency);
        }
        continue;
      }
      stack.pop_back();
      unshaped.erase(it);
      if (instruction->opcode() == Opcode::kSend) {
        instruction->set_shape(XlaSendShape(*instruction));
        continue;
      }
      if (instruction->opcode() == Opcode::kBroadcast) {
        instruction->set_shape(XlaBroadcastShape(*instruction));
      }
      absl::StatusOr<Shape> shape = InferShape(*instruction);
      if (!shape.ok()) return ErrorAt(locations[instruction], shape.status().message());
      instruction->set_shape(WithXlaLayouts(*instruction, *std::move(shape)));
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
