// Whole-module cost (module_cost.h).
#include "sim/cost/module_cost.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/comm/topology.h"
#include "sim/cost/op_cost.h"
#include "sim/cost/op_counts.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

bool HasCollective(const Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (IsCollectiveInstruction(*instruction)) return true;
    }
  }
  return false;
}

// The largest device id `instruction`'s replica groups and source-target pairs name, -1 for
// none.
int64_t LargestDeviceId(const Instruction& instruction) {
  int64_t largest = -1;
  const InstructionAttributes& a = instruction.attributes();
  if (a.replica_groups.has_value()) {
    for (const std::vector<int64_t>& group : a.replica_groups->groups) {
      for (int64_t id : group) largest = std::max(largest, id);
    }
  }
  if (a.source_target_pairs.has_value()) {
    for (const auto& [source, target] : *a.source_target_pairs) {
      largest = std::max({largest, source, target});
    }
  }
  return largest;
}

// InvalidArgument naming the first instruction whose collective names a device id at or beyond
// kMaxSliceDevices: the slice such a module needs is larger than any perfsim models, and
// building or searching for it would take time and memory in proportion to the id, not to the
// module.
absl::Status CheckDeviceIds(const Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const int64_t id = LargestDeviceId(*instruction);
      if (id < kMaxSliceDevices) continue;
      const SourceLocation& at = instruction->location();
      return absl::InvalidArgumentError(absl::StrCat(
          at.line > 0 ? absl::StrCat(at.line, ":", at.column, ": ") : std::string(),
          instruction->name(), ": expected device ids below ", kMaxSliceDevices,
          " (the largest slice perfsim models); got device ", id));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t ModuleDeviceCount(const Module& module) {
  int64_t devices = 1;
  if (!TryMul(module.replica_count(), module.num_partitions(), &devices)) devices = kInt64Max;
  devices = std::max<int64_t>(1, devices);
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const int64_t id = LargestDeviceId(*instruction);
      if (id >= devices) devices = id == kInt64Max ? id : id + 1;
    }
  }
  return devices;
}

absl::StatusOr<std::string> SliceShapeForDevices(const Chip& chip, int64_t devices) {
  if (devices <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: expected a positive device count; got ", devices));
  }
  if (chip.is_gpu()) return absl::StrCat(devices);
  const int64_t per_chip = std::max<int64_t>(1, chip.proto().compute().devices_per_chip());
  if (devices % per_chip != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: expected a multiple of the ", per_chip, " devices per chip of ",
                     chip.name(), "; got ", devices));
  }
  int64_t chips = devices / per_chip;
  const int64_t rank = std::max<int>(1, chip.proto().interconnect().dimensions_size());
  std::vector<int64_t> primes;
  for (int64_t p = 2; p * p <= chips; ++p) {
    while (chips % p == 0) {
      primes.push_back(p);
      chips /= p;
    }
  }
  if (chips > 1) primes.push_back(chips);
  std::sort(primes.rbegin(), primes.rend());
  std::vector<int64_t> dims(rank, 1);
  for (int64_t p : primes) {
    *std::min_element(dims.begin(), dims.end()) *= p;
  }
  std::sort(dims.rbegin(), dims.rend());
  return absl::StrJoin(dims, "x");
}

absl::StatusOr<Topology> TopologyForDevices(const Chip& chip, int64_t devices,
                                            bool allow_larger) {
  const int64_t per_chip = std::max<int64_t>(1, chip.proto().compute().devices_per_chip());
  if (devices > 0 && devices < per_chip) {
    Topology::Options options;
    options.devices_per_chip = devices;
    return Topology::Create(chip, chip.is_gpu() ? "1" : "1x1x1", options);
  }
  absl::StatusOr<std::string> shape = SliceShapeForDevices(chip, devices);
  absl::Status first_error = shape.status();
  if (shape.ok()) {
    absl::StatusOr<Topology> exact = Topology::Create(chip, *shape);
    if (exact.ok()) return exact;
    first_error = exact.status();
  }
  if (devices <= 0 || devices > kMaxSliceDevices || !allow_larger) return first_error;
  // The next count the slice rules allow is close: a multiple of 4 chips per torus axis, or of
  // the NVLink domain. The window is bounded so that a count no slice allows (beyond the
  // chip's domain) costs a few thousand tries, not a number proportional to the count.
  const int64_t last = std::min({2 * devices + 1024, devices + 4096, kMaxSliceDevices});
  for (int64_t n = devices + 1; n <= last; ++n) {
    absl::StatusOr<std::string> larger = SliceShapeForDevices(chip, n);
    if (!larger.ok()) continue;
    absl::StatusOr<Topology> topology = Topology::Create(chip, *larger);
    if (topology.ok()) return topology;
  }
  return first_error;
}

absl::StatusOr<ModuleCost> CostModule(const Module& module, const Chip& chip,
                                      const ModuleCostOptions& options) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.name(), ": expected an entry computation; got none"));
  }
  ModuleCost result;
  PERFSIM_RETURN_IF_ERROR(CheckDeviceIds(module));
  result.num_devices = options.num_devices > 0 ? options.num_devices : ModuleDeviceCount(module);

  // Collectives need a slice to run on; a module without them needs none.
  std::optional<Topology> topology;
  if (HasCollective(module)) {
    PERFSIM_ASSIGN_OR_RETURN(
        Topology t, TopologyForDevices(chip, result.num_devices,
                                       /*allow_larger=*/options.num_devices <= 0));
    result.topology = t.ToString();
    topology = std::move(t);
  }

  // One memo for the module: each called computation is timed once, callees first.
  CostMemo memo;
  const CostOptions cost_options{.mode = options.mode,
                                 .num_devices = result.num_devices,
                                 .topology = topology.has_value() ? &*topology : nullptr,
                                 .memo = &memo};
  for (const auto& instruction : module.entry()->instructions()) {
    absl::StatusOr<OpCost> cost = CostInstruction(*instruction, chip, cost_options);
    if (!cost.ok()) return cost.status();
    if (cost->seconds.has_value()) {
      result.seconds += *cost->seconds;
    } else {
      ++result.untimed_instructions;
    }
    for (const std::string& rate : cost->unknown_rates) {
      if (std::find(result.unknown_rates.begin(), result.unknown_rates.end(), rate) ==
          result.unknown_rates.end()) {
        result.unknown_rates.push_back(rate);
      }
    }
    result.instructions.push_back({instruction.get(), *std::move(cost)});
  }
  result.totals = CountComputation(
      *module.entry(), CountOptions{.mode = options.mode, .num_devices = result.num_devices});
  return result;
}

}  // namespace perfsim
