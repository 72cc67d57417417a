#include "absl/strings/string_view.h"
#include "sim/ir/opcode.h"

#include "absl/container/flat_hash_map.h"

namespace perfsim {
namespace {

struct OpcodeInfo {
  absl::string_view spelling;
  int arity;
};

constexpr OpcodeInfo kOpcodeInfos[] = {
#define PERFSIM_OPCODE(name, spelling, arity, infer) {spelling, arity},
#include "sim/ir/opcode.def"
#undef PERFSIM_OPCODE
};

static_assert(sizeof(kOpcodeInfos) / sizeof(kOpcodeInfos[0]) == kOpcodeCount);

}  // namespace

absl::string_view OpcodeSpelling(Opcode opcode) {
  return kOpcodeInfos[static_cast<int>(opcode)].spelling;
}

int OpcodeArity(Opcode opcode) { return kOpcodeInfos[static_cast<int>(opcode)].arity; }

std::optional<Opcode> ParseOpcode(absl::string_view spelling) {
  static const auto* const kBySpelling = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, Opcode>();
    for (int i = 0; i < kOpcodeCount; ++i) {
      map->emplace(kOpcodeInfos[i].spelling, static_cast<Opcode>(i));
    }
    map->emplace("optimization-barrier", Opcode::kOptimizationBarrier);
    return map;
  }();
  auto it = kBySpelling->find(spelling);
  if (it == kBySpelling->end()) return std::nullopt;
  return it->second;
}

bool IsElementwiseUnary(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAbs:
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClz:
    case Opcode::kConvert:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kPopcnt:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kCompare:
    case Opcode::kDivide:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kOr:
    case Opcode::kPower:
    case Opcode::kRemainder:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kSubtract:
    case Opcode::kXor:
      return true;
    default:
      return false;
  }
}

bool IsCollective(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllToAll:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kRaggedAllToAll:
    case Opcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

bool IsAsyncStart(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllGatherStart:
    case Opcode::kAllReduceStart:
    case Opcode::kAsyncStart:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCopyStart:
      return true;
    default:
      return false;
  }
}

bool IsAsyncDone(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kAsyncDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kCopyDone:
      return true;
    default:
      return false;
  }
}

}  // namespace perfsim
