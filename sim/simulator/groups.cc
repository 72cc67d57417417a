// Collective device groups for the schedule (groups.h).
#include "sim/simulator/groups.h"

#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "sim/ir/collective_groups.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The collective a (possibly async) instruction stands for; null for none.
const Instruction* CollectiveOf(const Instruction& instruction) {
  if (IsCollective(instruction.opcode())) return &instruction;
  if (instruction.opcode() != Opcode::kAsyncStart || instruction.calls().empty() ||
      instruction.calls()[0] == nullptr) {
    return nullptr;
  }
  for (const auto& inner : instruction.calls()[0]->instructions()) {
    if (IsCollective(inner->opcode())) return inner.get();
  }
  return nullptr;
}

bool IsPermute(Opcode opcode) {
  return opcode == Opcode::kCollectivePermute || opcode == Opcode::kCollectivePermuteStart;
}

int64_t Find(std::vector<int64_t>& parent, int64_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> PermuteGroups(const Instruction& instruction,
                                                                int64_t num_devices) {
  const Module* module = instruction.parent() != nullptr ? instruction.parent()->parent() : nullptr;
  const int64_t replicas = module != nullptr ? module->replica_count() : 1;
  const int64_t partitions = module != nullptr ? module->num_partitions() : 1;
  // The id space of the pairs: id i of copy c is device bases[c] + i * stride.
  int64_t size = num_devices, stride = 1;
  std::vector<int64_t> bases = {0};
  if (replicas * partitions > 1) {
    bases.clear();
    if (instruction.attributes().channel_id.has_value()) {
      size = partitions;
      for (int64_t r = 0; r < replicas; ++r) bases.push_back(r * partitions);
    } else {
      size = replicas;
      stride = partitions;
      for (int64_t p = 0; p < partitions; ++p) bases.push_back(p);
    }
  }
  std::vector<int64_t> parent(num_devices);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<bool> touched(num_devices, false);
  const auto& pairs = instruction.attributes().source_target_pairs;
  if (!pairs.has_value()) return std::vector<std::vector<int64_t>>();
  for (const auto& [source, target] : *pairs) {
    for (int64_t id : {source, target}) {
      if (id < 0 || id >= size) {
        return absl::InvalidArgumentError(absl::StrCat(
            instruction.name(), ": expected device ids in [0, ", size, "); got ", id));
      }
    }
    for (int64_t base : bases) {
      const int64_t a = base + source * stride, b = base + target * stride;
      if (a >= num_devices || b >= num_devices) {
        return absl::InvalidArgumentError(absl::StrCat(instruction.name(), ": expected devices below ",
                                                       num_devices, "; got ", std::max(a, b)));
      }
      touched[a] = touched[b] = true;
      parent[Find(parent, a)] = Find(parent, b);
    }
  }
  std::map<int64_t, std::vector<int64_t>> by_root;
  for (int64_t d = 0; d < num_devices; ++d) {
    if (touched[d]) by_root[Find(parent, d)].push_back(d);
  }
  std::vector<std::vector<int64_t>> groups;
  for (auto& [root, members] : by_root) {
    if (members.size() >= 2) groups.push_back(std::move(members));
  }
  return groups;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> SyncGroups(const Instruction& instruction,
                                                             int64_t num_devices) {
  return CollectiveGroups(instruction, num_devices, /*keep_single=*/false);
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveGroups(const Instruction& instruction,
                                                                   int64_t num_devices,
                                                                   bool keep_single) {
  const Instruction* collective = CollectiveOf(instruction);
  if (collective == nullptr) return std::vector<std::vector<int64_t>>();
  if (IsPermute(collective->opcode())) return PermuteGroups(*collective, num_devices);
  const Module* module = collective->parent() != nullptr ? collective->parent()->parent() : nullptr;
  const int64_t replicas = module != nullptr ? module->replica_count() : 1;
  const int64_t partitions = module != nullptr ? module->num_partitions() : 1;
  const auto& replica_groups = collective->attributes().replica_groups;
  const absl::Span<const std::vector<int64_t>> listed =
      replica_groups.has_value() ? absl::MakeConstSpan(replica_groups->groups)
                                 : absl::Span<const std::vector<int64_t>>();
  absl::StatusOr<std::vector<std::vector<int64_t>>> groups;
  if (replicas * partitions == 1) {
    groups = ParticipatingDeviceGroups(listed, CollectiveOpGroupMode::kCrossReplica, num_devices, 1);
  } else {
    PERFSIM_ASSIGN_OR_RETURN(CollectiveOpGroupMode mode, GroupModeOf(*collective));
    groups = ParticipatingDeviceGroups(listed, mode, replicas, partitions);
  }
  if (!groups.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": ", groups.status().message()));
  }
  std::vector<std::vector<int64_t>> out;
  for (std::vector<int64_t>& group : *groups) {
    for (int64_t d : group) {
      if (d >= num_devices) {
        return absl::InvalidArgumentError(absl::StrCat(
            instruction.name(), ": expected devices below ", num_devices, "; got ", d));
      }
    }
    if (keep_single || group.size() >= 2) out.push_back(std::move(group));
  }
  return out;
}

}  // namespace perfsim
