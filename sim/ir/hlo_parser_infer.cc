// Result shapes the text leaves out, `n = negate(x)` or `add(x, negate(y))`: which ops may leave
// them out (XLA's parser's list, xla/hlo/parser/hlo_parser.cc CanInferShape), and their
// inference once the module is read, through the opcode table's inference functions.
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
    case Opcode::kOptimizationBarrier:
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

}  // namespace

absl::Status HloParser::InferMissingShapes() {
  // Iterative depth-first order (no recursion the input controls): an instruction is inferred
  // after every unshaped instruction its shape depends on. A dependency met again while still
  // on the path is a cycle, which no order resolves.
  enum class Mark : bool { kWaiting, kOnPath };
  absl::flat_hash_map<const Instruction*, Mark> unshaped;
  absl::flat_hash_map<const Instruction*, SourceLocation> locations;
  for (const Unshaped& entry : unshaped_) {
    unshaped.emplace(entry.instruction, Mark::kWaiting);
    locations.emplace(entry.instruction, entry.opcode_location);
  }
  for (const Unshaped& entry : unshaped_) {
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
      if (instruction->opcode() == Opcode::kBroadcast) {
        instruction->set_shape(XlaBroadcastShape(*instruction));
      }
      absl::StatusOr<Shape> shape = InferShape(*instruction);
      if (!shape.ok()) return ErrorAt(locations[instruction], shape.status().message());
      instruction->set_shape(*std::move(shape));
      unshaped.erase(it);
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
