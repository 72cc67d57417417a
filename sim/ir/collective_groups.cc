// Collective group modes and participating devices (collective_groups.h), following XLA's
// collective_op_group_mode.cc, collective_ops_utils.cc GetParticipatingDevicesGroups and
// replica_group.cc MeshAxesReplicaGroupList.
#include "sim/ir/collective_groups.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/instruction.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

absl::Status IdOutOfRange(absl::string_view kind, int64_t id, int64_t limit) {
  return absl::InvalidArgumentError(absl::StrCat("replica_groups: expected ", kind, " ids in [0, ",
                                                 limit, "); got ", id));
}

// [0, n) as one group.
std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

std::string AxisRefText(const ReplicaGroups::MeshAxes& mesh, const ReplicaGroups::MeshAxes::AxisRef& ref) {
  const std::string name =
      ref.axis >= 0 && ref.axis < static_cast<int64_t>(mesh.axes.size())
          ? absl::StrCat("'", mesh.axes[ref.axis].name, "'")
          : absl::StrCat("axis ", ref.axis);
  if (ref.size == 0) return name;
  return absl::StrCat(name, ":(", ref.pre_size, ")", ref.size);
}

}  // namespace

absl::string_view CollectiveOpGroupModeName(CollectiveOpGroupMode mode) {
  switch (mode) {
    case CollectiveOpGroupMode::kCrossReplica:
      return "cross_replica";
    case CollectiveOpGroupMode::kCrossPartition:
      return "cross_partition";
    case CollectiveOpGroupMode::kCrossReplicaAndPartition:
      return "cross_replica_and_partition";
    case CollectiveOpGroupMode::kFlattenedId:
      return "flattened_id";
  }
  return "unknown";
}

absl::StatusOr<CollectiveOpGroupMode> GroupModeFor(bool has_channel_id,
                                                   std::optional<bool> use_global_device_ids) {
  if (!has_channel_id) {
    if (use_global_device_ids.value_or(false)) {
      return absl::InvalidArgumentError(
          "expected a channel_id with use_global_device_ids=true; got none");
    }
    return CollectiveOpGroupMode::kCrossReplica;
  }
  if (!use_global_device_ids.has_value()) return CollectiveOpGroupMode::kCrossPartition;
  return *use_global_device_ids ? CollectiveOpGroupMode::kFlattenedId
                                : CollectiveOpGroupMode::kCrossReplicaAndPartition;
}

bool CarriesUseGlobalDeviceIds(Opcode opcode) {
  return opcode == Opcode::kAllGather || opcode == Opcode::kAllGatherStart ||
         opcode == Opcode::kAllReduce || opcode == Opcode::kAllReduceStart ||
         opcode == Opcode::kReduceScatter;
}

absl::StatusOr<CollectiveOpGroupMode> GroupModeOf(const Instruction& instruction) {
  const InstructionAttributes& attrs = instruction.attributes();
  std::optional<bool> global;
  if (CarriesUseGlobalDeviceIds(instruction.opcode())) global = attrs.use_global_device_ids;
  absl::StatusOr<CollectiveOpGroupMode> mode = GroupModeFor(attrs.channel_id.has_value(), global);
  if (!mode.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": ", mode.status().message()));
  }
  return mode;
}

int64_t SubgroupSize(absl::Span<const std::vector<int64_t>> replica_groups,
                     CollectiveOpGroupMode mode, int64_t replica_count, int64_t num_partitions) {
  const int64_t listed =
      replica_groups.empty() ? -1 : static_cast<int64_t>(replica_groups[0].size());
  switch (mode) {
    case CollectiveOpGroupMode::kCrossReplica:
      return listed < 0 ? replica_count : listed;
    case CollectiveOpGroupMode::kCrossReplicaAndPartition:
      return (listed < 0 ? replica_count : listed) * num_partitions;
    case CollectiveOpGroupMode::kCrossPartition:
      return listed < 0 ? num_partitions : listed;
    case CollectiveOpGroupMode::kFlattenedId:
      return listed < 0 ? replica_count * num_partitions : listed;
  }
  return listed;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ParticipatingDeviceGroups(
    absl::Span<const std::vector<int64_t>> replica_groups, CollectiveOpGroupMode mode,
    int64_t replica_count, int64_t num_partitions) {
  const int64_t r_count = replica_count;
  const int64_t p_count = num_partitions;
  // The groups as written, or the one group of every id when none are (no copy of the groups:
  // a large mesh lists hundreds).
  std::vector<std::vector<int64_t>> every_id;
  absl::Span<const std::vector<int64_t>> listed = replica_groups;
  auto default_to_every = [&](int64_t n) {
    if (!listed.empty()) return;
    every_id.push_back(Iota(n));
    listed = every_id;
  };
  std::vector<std::vector<int64_t>> out;
  switch (mode) {
    case CollectiveOpGroupMode::kCrossReplica: {
      default_to_every(r_count);
      out.reserve(listed.size() * p_count);
      for (const std::vector<int64_t>& group : listed) {
        for (int64_t r : group) {
          if (r < 0 || r >= r_count) return IdOutOfRange("replica", r, r_count);
        }
        for (int64_t p = 0; p < p_count; ++p) {
          std::vector<int64_t>& devices = out.emplace_back();
          devices.reserve(group.size());
          for (int64_t r : group) devices.push_back(r * p_count + p);
        }
      }
      return out;
    }
    case CollectiveOpGroupMode::kCrossPartition: {
      default_to_every(p_count);
      out.reserve(listed.size() * r_count);
      for (const std::vector<int64_t>& group : listed) {
        for (int64_t p : group) {
          if (p < 0 || p >= p_count) return IdOutOfRange("partition", p, p_count);
        }
        for (int64_t r = 0; r < r_count; ++r) {
          std::vector<int64_t>& devices = out.emplace_back();
          devices.reserve(group.size());
          for (int64_t p : group) devices.push_back(r * p_count + p);
        }
      }
      return out;
    }
    case CollectiveOpGroupMode::kCrossReplicaAndPartition: {
      default_to_every(r_count);
      for (const std::vector<int64_t>& group : listed) {
        std::vector<int64_t>& devices = out.emplace_back();
        for (int64_t r : group) {
          if (r < 0 || r >= r_count) return IdOutOfRange("replica", r, r_count);
          for (int64_t p = 0; p < p_count; ++p) devices.push_back(r * p_count + p);
        }
      }
      return out;
    }
    case CollectiveOpGroupMode::kFlattenedId: {
      if (listed.empty()) {
        return absl::InvalidArgumentError(
            "replica_groups: expected explicit groups in flattened-id mode "
            "(use_global_device_ids=true); got {}");
      }
      const int64_t devices = r_count * p_count;
      for (const std::vector<int64_t>& group : listed) {
        for (int64_t id : group) {
          if (id < 0 || id >= devices) return IdOutOfRange("global device", id, devices);
        }
      }
      return std::vector<std::vector<int64_t>>(listed.begin(), listed.end());
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ExpandMeshAxesReplicaGroups(
    const ReplicaGroups::MeshAxes& mesh) {
  using AxisRef = ReplicaGroups::MeshAxes::AxisRef;
  const int64_t num_axes = static_cast<int64_t>(mesh.axes.size());
  int64_t devices = 1;
  for (const auto& axis : mesh.axes) {
    if (axis.size <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replica_groups: expected positive mesh axis sizes; got '", axis.name, "'=", axis.size));
    }
    devices *= axis.size;
  }
  // Per mesh axis: its sub-dimensions (major to minor) and, per reference, which one it groups.
  std::vector<std::vector<int64_t>> sub_dims(num_axes);
  std::vector<int64_t> ref_sub_dim(mesh.group_axes.size(), -1);
  for (int64_t a = 0; a < num_axes; ++a) {
    const int64_t full = mesh.axes[a].size;
    std::vector<std::pair<AxisRef, size_t>> refs;  // (ref as pre/size, position written)
    for (size_t k = 0; k < mesh.group_axes.size(); ++k) {
      const AxisRef& ref = mesh.group_axes[k];
      if (ref.axis < 0 || ref.axis >= num_axes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica_groups: expected mesh axes of the mesh's ", num_axes, "; got axis ", ref.axis));
      }
      if (ref.axis != a) continue;
      AxisRef whole = ref;
      if (ref.size == 0) {
        whole.pre_size = 1;
        whole.size = full;
      } else if (ref.pre_size < 1 || ref.size < 2 || ref.size >= full ||
                 full % (ref.pre_size * ref.size) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("replica_groups: expected a sub-axis (pre)size with pre*size dividing the "
                         "axis size ",
                         full, " and 1 < size < ", full, "; got ", AxisRefText(mesh, ref)));
      }
      refs.emplace_back(whole, k);
    }
    if (refs.empty()) {
      sub_dims[a] = {full};
      continue;
    }
    std::sort(refs.begin(), refs.end(), [](const auto& x, const auto& y) {
      return x.first.pre_size < y.first.pre_size;
    });
    int64_t prefix = 1;
    for (const auto& [ref, position] : refs) {
      if (ref.pre_size < prefix || ref.pre_size % prefix != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replica_groups: expected axes that do not overlap; got ",
            AxisRefText(mesh, mesh.group_axes[position]), " on axis '", mesh.axes[a].name, "'"));
      }
      if (ref.pre_size != prefix) {
        sub_dims[a].push_back(ref.pre_size / prefix);
        prefix = ref.pre_size;
      }
      ref_sub_dim[position] = static_cast<int64_t>(sub_dims[a].size());
      sub_dims[a].push_back(ref.size);
      prefix *= ref.size;
    }
    if (full % prefix != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replica_groups: expected sub-axes that fit axis '", mesh.axes[a].name, "' of size ",
          full, "; they span ", prefix));
    }
    if (prefix != full) sub_dims[a].push_back(full / prefix);
  }
  // The reshaped device array, row-major strides, and the grouped dimensions in written order.
  std::vector<int64_t> dims;
  std::vector<int64_t> offsets(num_axes, 0);
  for (int64_t a = 0; a < num_axes; ++a) {
    offsets[a] = static_cast<int64_t>(dims.size());
    dims.insert(dims.end(), sub_dims[a].begin(), sub_dims[a].end());
  }
  std::vector<int64_t> grouped;
  int64_t group_size = 1;
  for (size_t k = 0; k < mesh.group_axes.size(); ++k) {
    grouped.push_back(offsets[mesh.group_axes[k].axis] + ref_sub_dim[k]);
    group_size *= dims[grouped.back()];
  }
  std::vector<int64_t> order;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (std::find(grouped.begin(), grouped.end(), d) == grouped.end()) order.push_back(d);
  }
  order.insert(order.end(), grouped.begin(), grouped.end());
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  // Walk the transposed array in row-major order (an odometer over `order`).
  std::vector<int64_t> index(order.size(), 0);
  std::vector<std::vector<int64_t>> groups;
  for (int64_t n = 0; n < devices; ++n) {
    if (n % group_size == 0) groups.emplace_back();
    int64_t id = 0;
    for (size_t k = 0; k < order.size(); ++k) id += index[k] * strides[order[k]];
    groups.back().push_back(id);
    for (int64_t k = static_cast<int64_t>(order.size()) - 1; k >= 0; --k) {
      if (++index[k] < dims[order[k]]) break;
      index[k] = 0;
    }
  }
  return groups;
}

std::string MeshAxesReplicaGroupsText(const ReplicaGroups::MeshAxes& mesh_axes) {
  std::string text = "mesh[";
  for (size_t a = 0; a < mesh_axes.axes.size(); ++a) {
    absl::StrAppend(&text, a == 0 ? "" : ",", "'", mesh_axes.axes[a].name, "'=",
                    mesh_axes.axes[a].size);
  }
  text += "] {";
  for (size_t k = 0; k < mesh_axes.group_axes.size(); ++k) {
    absl::StrAppend(&text, k == 0 ? "" : ",", AxisRefText(mesh_axes, mesh_axes.group_axes[k]));
  }
  return text + "}";
}

}  // namespace perfsim
