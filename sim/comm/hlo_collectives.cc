// HLO collective instructions -> CollectiveCost (hlo_collectives.h): reads bytes from shapes,
// resolves replica groups into topology device ids, and calls the collective models.
#include "sim/comm/hlo_collectives.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/group.h"
#include "sim/ir/collective_groups.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The devices the module runs on and how its collective ids map to them
// (sim/interp/collectives.h describes the same modes for the interpreter).
struct DeviceGrid {
  int64_t replicas = 1;
  int64_t partitions = 1;
  bool flat = true;  // the module gives neither count: ids are device ids
  int64_t devices = 1;
};

absl::StatusOr<DeviceGrid> GridOf(const Instruction& instruction, const Topology& topology) {
  DeviceGrid grid;
  const Module* module = instruction.parent() != nullptr ? instruction.parent()->parent() : nullptr;
  if (module != nullptr) {
    grid.replicas = module->replica_count();
    grid.partitions = module->num_partitions();
  }
  grid.flat = grid.replicas == 1 && grid.partitions == 1;
  grid.devices = grid.flat ? topology.num_devices() : grid.replicas * grid.partitions;
  if (grid.devices > topology.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        instruction.name(), ": expected the module's replica_count * num_partitions = ",
        grid.replicas, " * ", grid.partitions, " devices to fit the ", topology.num_devices(),
        " devices of ", topology.chip_name(), " ", topology.slice_shape(), "; got ", grid.devices));
  }
  return grid;
}

bool UsesPartitionIdsWithChannel(Opcode opcode) {
  return opcode == Opcode::kAllToAll || opcode == Opcode::kRaggedAllToAll ||
         opcode == Opcode::kCollectivePermute || opcode == Opcode::kCollectivePermuteStart;
}

// collective-permute's id space: id i of copy c is device base[c] + i * stride.
struct IdSpace {
  int64_t size = 0;
  int64_t stride = 1;
  std::vector<int64_t> bases;
};

IdSpace IdSpaceOf(const Instruction& instruction, const DeviceGrid& grid) {
  const InstructionAttributes& attrs = instruction.attributes();
  IdSpace space;
  if (grid.flat) {
    space.size = grid.devices;
    space.bases = {0};
    return space;
  }
  const bool channel = attrs.channel_id.has_value();
  const bool partition_opcode = UsesPartitionIdsWithChannel(instruction.opcode());
  if (channel && attrs.use_global_device_ids && !partition_opcode) {
    space.size = grid.devices;  // global ids
    space.bases = {0};
  } else if (channel) {
    space.size = grid.partitions;  // partition ids, one copy per replica
    for (int64_t r = 0; r < grid.replicas; ++r) space.bases.push_back(r * grid.partitions);
  } else {
    space.size = grid.replicas;  // replica ids, one copy per partition
    space.stride = grid.partitions;
    for (int64_t p = 0; p < grid.partitions; ++p) space.bases.push_back(p);
  }
  return space;
}

absl::Status CheckId(const Instruction& instruction, const IdSpace& space, int64_t id) {
  if (id < 0 || id >= space.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        instruction.name(), ": expected device ids in [0, ", space.size, "); got ", id));
  }
  return absl::OkStatus();
}

// Every group of the instruction as topology device ids, in XLA's group mode
// (sim/ir/collective_groups.h): an all-gather with a channel_id and no use_global_device_ids
// spans its listed replicas in every partition.
absl::StatusOr<std::vector<std::vector<int64_t>>> DeviceGroups(const Instruction& instruction,
                                                               const DeviceGrid& grid) {
  const auto& replica_groups = instruction.attributes().replica_groups;
  const absl::Span<const std::vector<int64_t>> listed =
      replica_groups.has_value() ? absl::MakeConstSpan(replica_groups->groups)
                                 : absl::Span<const std::vector<int64_t>>();
  absl::StatusOr<std::vector<std::vector<int64_t>>> groups;
  if (grid.flat) {
    groups = ParticipatingDeviceGroups(listed, CollectiveOpGroupMode::kCrossReplica, grid.devices,
                                       1);
  } else {
    PERFSIM_ASSIGN_OR_RETURN(CollectiveOpGroupMode mode, GroupModeOf(instruction));
    groups = ParticipatingDeviceGroups(listed, mode, grid.replicas, grid.partitions);
  }
  if (!groups.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": ", groups.status().message()));
  }
  std::vector<std::vector<int64_t>> out;
  for (std::vector<int64_t>& group : *groups) {
    if (!group.empty()) out.push_back(std::move(group));
  }
  return out;
}

double OperandBytes(const Instruction& instruction, int64_t first, int64_t count) {
  double bytes = 0;
  for (int64_t i = first; i < first + count && i < instruction.operand_count(); ++i) {
    bytes += static_cast<double>(instruction.operand(i)->shape().ByteSize());
  }
  return bytes;
}

double AllOperandBytes(const Instruction& instruction) {
  return OperandBytes(instruction, 0, instruction.operand_count());
}

using GroupCollective = absl::StatusOr<CollectiveTime> (*)(double, absl::Span<const int64_t>,
                                                           const Topology&);

}  // namespace

struct CollectiveTimeMemo::State {
  // (collective, payload bytes, scaled by the group size, group mode, replica groups as
  // written) -> cost.
  using Key = std::tuple<GroupCollective, double, bool, int, std::vector<std::vector<int64_t>>>;
  absl::flat_hash_map<Key, CollectiveCost> costs;
};

CollectiveTimeMemo::CollectiveTimeMemo() : state_(std::make_unique<State>()) {}
CollectiveTimeMemo::~CollectiveTimeMemo() = default;

namespace {

absl::StatusOr<CollectiveCost> CostGroupsUncached(const Instruction& instruction,
                                                  const Topology& topology,
                                                  GroupCollective collective, double bytes,
                                                  bool scale_by_group_size);

// CostGroupsUncached through `memo` when there is one.
absl::StatusOr<CollectiveCost> CostGroups(const Instruction& instruction, const Topology& topology,
                                          GroupCollective collective, double bytes,
                                          bool scale_by_group_size, CollectiveTimeMemo* memo) {
  absl::StatusOr<CollectiveOpGroupMode> mode = GroupModeOf(instruction);
  if (memo == nullptr || !mode.ok()) {
    return CostGroupsUncached(instruction, topology, collective, bytes, scale_by_group_size);
  }
  const auto& groups = instruction.attributes().replica_groups;
  CollectiveTimeMemo::State::Key key{collective, bytes, scale_by_group_size,
                                     static_cast<int>(*mode),
                                     groups.has_value() ? groups->groups
                                                        : std::vector<std::vector<int64_t>>()};
  auto& costs = memo->state().costs;
  if (auto it = costs.find(key); it != costs.end()) return it->second;
  PERFSIM_ASSIGN_OR_RETURN(
      CollectiveCost cost,
      CostGroupsUncached(instruction, topology, collective, bytes, scale_by_group_size));
  costs.emplace(std::move(key), cost);
  return cost;
}

// Costs every group and keeps the slowest. With `scale_by_group_size` the payload is `bytes`
// times the group size (all-gather's result is n shards of the operand).
absl::StatusOr<CollectiveCost> CostGroupsUncached(const Instruction& instruction,
                                                  const Topology& topology,
                                                  GroupCollective collective, double bytes,
                                                  bool scale_by_group_size) {
  PERFSIM_ASSIGN_OR_RETURN(DeviceGrid grid, GridOf(instruction, topology));
  PERFSIM_ASSIGN_OR_RETURN(auto groups, DeviceGroups(instruction, grid));
  CollectiveCost cost;
  cost.num_groups = static_cast<int64_t>(groups.size());
  bool first = true;
  // A regular group's time depends only on how it lies on the topology (group.h), so groups of
  // one layout (the many groups of one mesh axis) are costed once. A group that is the first
  // regular group shifted by a device offset without a carry in any coordinate lies the same
  // way, which a look at its ids shows without analysing it.
  std::map<std::pair<std::vector<int64_t>, double>, CollectiveTime> by_layout;
  std::vector<int64_t> layout_key;
  struct Reference {
    const std::vector<int64_t>* devices = nullptr;
    std::vector<int64_t> max_position;  // per dimension, over the group
    double payload = 0;
    CollectiveTime time;
  };
  std::optional<Reference> reference;
  auto shifted_reference = [&](const std::vector<int64_t>& group, double payload) {
    if (!reference.has_value() || payload != reference->payload ||
        group.size() != reference->devices->size()) {
      return false;
    }
    const int64_t delta = group[0] - (*reference->devices)[0];
    if (delta < 0 || delta >= topology.num_devices()) return false;
    for (size_t k = 0; k < group.size(); ++k) {
      if (group[k] != (*reference->devices)[k] + delta) return false;
    }
    for (int64_t i = 0; i < topology.rank(); ++i) {
      const TopologyDimension& dim = topology.dimension(i);
      if (reference->max_position[i] + (delta / dim.device_stride) % dim.size >= dim.size) {
        return false;
      }
    }
    return true;
  };
  for (const std::vector<int64_t>& group : groups) {
    const double payload = scale_by_group_size ? bytes * static_cast<double>(group.size()) : bytes;
    absl::StatusOr<CollectiveTime> time;
    if (shifted_reference(group, payload)) {
      time = reference->time;
    } else {
      absl::StatusOr<GroupLayout> layout = AnalyzeGroup(topology, group);
      if (!layout.ok()) return Annotate(layout.status(), instruction.name());
      layout_key.clear();
      for (const DimensionSpan& span : layout->spans) {
        layout_key.insert(layout_key.end(),
                          {span.dimension, span.size, span.stride, span.closed_ring ? 1 : 0});
      }
      layout_key.push_back(layout->size);
      auto memo = layout->regular ? by_layout.find({layout_key, payload}) : by_layout.end();
      time = memo != by_layout.end() ? absl::StatusOr<CollectiveTime>(memo->second)
                                     : collective(payload, group, topology);
      if (!time.ok()) return Annotate(time.status(), instruction.name());
      if (layout->regular && memo == by_layout.end()) {
        by_layout.emplace(std::make_pair(layout_key, payload), *time);
      }
      if (layout->regular && !reference.has_value()) {
        reference.emplace();
        reference->devices = &group;
        reference->payload = payload;
        reference->time = *time;
        reference->max_position.assign(topology.rank(), 0);
        for (int64_t d : group) {
          for (int64_t i = 0; i < topology.rank(); ++i) {
            const TopologyDimension& dim = topology.dimension(i);
            reference->max_position[i] =
                std::max(reference->max_position[i], (d / dim.device_stride) % dim.size);
          }
        }
      }
    }
    cost.group_size = std::max<int64_t>(cost.group_size, static_cast<int64_t>(group.size()));
    if (first || time->seconds > cost.seconds) {
      first = false;
      cost.seconds = time->seconds;
      cost.bytes_per_device = payload;
      cost.time = *std::move(time);
    }
  }
  return cost;
}

absl::StatusOr<CollectiveCost> CostPermute(const Instruction& instruction,
                                           const Topology& topology) {
  PERFSIM_ASSIGN_OR_RETURN(DeviceGrid grid, GridOf(instruction, topology));
  const IdSpace space = IdSpaceOf(instruction, grid);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const auto& written = instruction.attributes().source_target_pairs;
  if (written.has_value()) {
    for (int64_t base : space.bases) {
      for (const auto& [source, target] : *written) {
        PERFSIM_RETURN_IF_ERROR(CheckId(instruction, space, source));
        PERFSIM_RETURN_IF_ERROR(CheckId(instruction, space, target));
        pairs.emplace_back(base + source * space.stride, base + target * space.stride);
      }
    }
  }
  const double bytes = OperandBytes(instruction, 0, 1);
  absl::StatusOr<CollectiveTime> time = CollectivePermuteTime(bytes, pairs, topology);
  if (!time.ok()) return Annotate(time.status(), instruction.name());
  CollectiveCost cost;
  cost.seconds = time->seconds;
  cost.bytes_per_device = bytes;
  cost.group_size = 2;
  cost.num_groups = static_cast<int64_t>(pairs.size());
  cost.time = *std::move(time);
  return cost;
}

absl::StatusOr<CollectiveCost> CostRagged(const Instruction& instruction, const Topology& topology,
                                          const CollectiveCostOptions& options) {
  PERFSIM_ASSIGN_OR_RETURN(DeviceGrid grid, GridOf(instruction, topology));
  PERFSIM_ASSIGN_OR_RETURN(auto groups, DeviceGroups(instruction, grid));
  std::vector<int64_t> devices;
  for (const auto& g : groups) devices.insert(devices.end(), g.begin(), g.end());
  std::vector<int64_t> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        instruction.name(), ": expected each device in one replica group; got one in several"));
  }
  absl::flat_hash_map<int64_t, int64_t> index;
  for (size_t i = 0; i < devices.size(); ++i) index[devices[i]] = static_cast<int64_t>(i);
  absl::flat_hash_map<int64_t, int64_t> given_index;
  if (options.traffic != nullptr) {
    const TrafficMatrix& t = *options.traffic;
    if (static_cast<int64_t>(t.bytes.size()) != t.size() * t.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(instruction.name(), ": traffic matrix: expected ", t.size() * t.size(),
                       " entries; got ", t.bytes.size()));
    }
    for (int64_t i = 0; i < t.size(); ++i) given_index[t.devices[i]] = i;
  }

  const double input_bytes = OperandBytes(instruction, 0, 1);
  const double output_bytes = OperandBytes(instruction, 1, 1);
  TrafficMatrix matrix = TrafficMatrix::Zero(devices);
  for (const auto& group : groups) {
    const double n = static_cast<double>(group.size());
    for (int64_t s : group) {
      for (int64_t d : group) {
        double bytes = 0;
        if (options.traffic != nullptr) {
          auto si = given_index.find(s);
          auto di = given_index.find(d);
          if (si == given_index.end() || di == given_index.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat(instruction.name(), ": traffic matrix: expected an entry for devices ",
                             s, " -> ", d, "; got none"));
          }
          bytes = options.traffic->get(si->second, di->second);
        } else if (options.ragged_traffic == RaggedTraffic::kUniformInput) {
          bytes = input_bytes / n;
        } else {
          bytes = output_bytes / n;
        }
        matrix.set(index[s], index[d], bytes);
      }
    }
  }
  absl::StatusOr<TrafficTime> routed = RouteTraffic(matrix, topology);
  if (!routed.ok()) return Annotate(routed.status(), instruction.name());
  CollectiveCost cost;
  cost.seconds = routed->seconds;
  cost.num_groups = static_cast<int64_t>(groups.size());
  for (const auto& g : groups) {
    cost.group_size = std::max<int64_t>(cost.group_size, static_cast<int64_t>(g.size()));
  }
  for (const DeviceTraffic& d : routed->devices) {
    cost.bytes_per_device = std::max(cost.bytes_per_device, d.send_bytes);
  }
  cost.time.algorithm =
      routed->busiest_link_bytes > 0 ? CollectiveAlgorithm::kDirect : CollectiveAlgorithm::kNone;
  cost.time.seconds = routed->seconds;
  cost.time.fixed_seconds = routed->fixed_seconds;
  cost.time.transfer_seconds = routed->transfer_seconds;
  cost.time.latency_seconds = routed->latency_seconds;
  cost.time.busiest_link_bytes = routed->busiest_link_bytes;
  cost.time.busiest_link = routed->busiest_link;
  return cost;
}

// The collective an async-start runs: the root of its called computation.
const Instruction* AsyncWrapped(const Instruction& instruction) {
  if (instruction.calls().empty() || instruction.calls()[0] == nullptr) return nullptr;
  const Instruction* root = instruction.calls()[0]->root();
  if (root == nullptr || !IsCollective(root->opcode())) return nullptr;
  return root;
}

}  // namespace

bool IsCollectiveInstruction(const Instruction& instruction) {
  // async-update and async-done follow their start (or the update before them): walk back
  // to it iteratively, since the chain's length comes from the input.
  const Instruction* start = &instruction;
  while (start->opcode() == Opcode::kAsyncUpdate || start->opcode() == Opcode::kAsyncDone) {
    if (start->operand_count() != 1 || start->operand(0) == nullptr) return false;
    start = start->operand(0);
  }
  switch (start->opcode()) {
    case Opcode::kAsyncStart:
      return AsyncWrapped(*start) != nullptr;
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      return false;  // not reached: the loop above walked past them
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
      return true;
    default:
      return IsCollective(start->opcode());
  }
}

absl::StatusOr<CollectiveCost> CostCollectiveInstruction(const Instruction& instruction,
                                                         const Topology& topology,
                                                         const CollectiveCostOptions& options) {
  switch (instruction.opcode()) {
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
      return CostGroups(instruction, topology, AllGatherTime, AllOperandBytes(instruction),
                        /*scale_by_group_size=*/true, options.memo);
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
      return CostGroups(instruction, topology, AllReduceTime, AllOperandBytes(instruction), false,
                        options.memo);
    case Opcode::kCollectiveBroadcast:
      // Scatter from the root then all-gather: per link the bytes of an all-reduce.
      return CostGroups(instruction, topology, AllReduceTime, AllOperandBytes(instruction), false,
                        options.memo);
    case Opcode::kReduceScatter:
      return CostGroups(instruction, topology, ReduceScatterTime, AllOperandBytes(instruction),
                        false, options.memo);
    case Opcode::kAllToAll:
      return CostGroups(instruction, topology, AllToAllTime, AllOperandBytes(instruction), false,
                        options.memo);
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
      return CostPermute(instruction, topology);
    case Opcode::kRaggedAllToAll:
      return CostRagged(instruction, topology, options);
    case Opcode::kAsyncStart: {
      const Instruction* wrapped = AsyncWrapped(instruction);
      if (wrapped == nullptr) break;
      return CostCollectiveInstruction(*wrapped, topology, options);
    }
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduceDone:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      if (IsCollectiveInstruction(instruction)) return CollectiveCost();
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      instruction.name(), ": expected a collective; got ", OpcodeSpelling(instruction.opcode())));
}

}  // namespace perfsim
