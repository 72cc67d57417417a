// Names of the cost model's enums (cost_types.h).
#include "sim/cost/cost_types.h"

namespace perfsim {

absl::string_view CostModeName(CostMode mode) {
  switch (mode) {
    case CostMode::kTrue:
      return "true";
    case CostMode::kXlaCompatible:
      return "xla-compatible";
  }
  return "?";
}

absl::string_view BoundName(Bound bound) {
  switch (bound) {
    case Bound::kNone:
      return "none";
    case Bound::kCompute:
      return "compute";
    case Bound::kMemory:
      return "memory";
    case Bound::kCommunication:
      return "communication";
    case Bound::kOverhead:
      return "overhead";
  }
  return "?";
}

}  // namespace perfsim
