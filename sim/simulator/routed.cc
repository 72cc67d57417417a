// Per-device times of routed instructions (routed.h).
#include "sim/simulator/routed.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/traffic.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/simulator/groups.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The RaggedSizes of a grouped matmul's group-sizes operand, or null.
const RaggedSizes* GroupSizesAnnotation(const Instruction& instruction) {
  if (instruction.operand_count() < 3) return nullptr;
  const Annotation* a = instruction.operand(2)->annotation();
  if (a == nullptr || !a->has_ragged() || !a->ragged().has_routing()) return nullptr;
  return &a->ragged();
}

// Distinct costs by key, devices pointing at them.
template <typename Key>
class Distinct {
 public:
  explicit Distinct(int64_t num_devices) { time_.work_of_device.assign(num_devices, -1); }
  // The entry of `key`, nullptr when new (then Add it).
  bool Has(const Key& key, int64_t device) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    time_.work_of_device[device] = it->second;
    return true;
  }
  void Add(Key key, int64_t device, RoutedWork work) {
    const int32_t id = static_cast<int32_t>(time_.work.size());
    time_.work.push_back(std::move(work));
    index_.emplace(std::move(key), id);
    time_.work_of_device[device] = id;
  }
  RoutedTime Take() { return std::move(time_); }

 private:
  absl::flat_hash_map<Key, int32_t> index_;
  RoutedTime time_;
};

}  // namespace

std::optional<GroupedMatmulSpec> RaggedDotGroupedSpec(const Instruction& instruction,
                                                      const Chip& chip) {
  if (instruction.opcode() != Opcode::kRaggedDot || instruction.operand_count() != 3 ||
      !instruction.attributes().ragged_dot_dimension_numbers.has_value()) {
    return std::nullopt;
  }
  const RaggedDotDimensionNumbers& d = *instruction.attributes().ragged_dot_dimension_numbers;
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const Shape& gs = instruction.operand(2)->shape();
  if (lhs.rank() != 2 || gs.rank() != 1 || rhs.rank() < 2 || instruction.shape().rank() < 2 ||
      d.dot.lhs_contracting_dimensions.empty()) {
    return std::nullopt;
  }
  GroupedMatmulSpec spec;
  // A grouped-GEMM kernel, not a Pallas grid (grouped_matmul.h). XLA:GPU's own dense
  // expansion of jax.lax.ragged_dot (kXlaRaggedDot) is not chosen here yet.
  spec.implementation = GroupedMatmulImplementation::kGroupedGemmKernel;
  spec.num_groups = gs.dimensions(0);
  spec.lhs_type = lhs.element_type();
  spec.rhs_type = rhs.element_type();
  spec.out_type = instruction.shape().element_type();
  if (!d.rhs_group_dimensions.empty()) {
    spec.kind = GroupedMatmulKind::kGmm;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(d.dot.lhs_contracting_dimensions[0]);
    spec.n = instruction.shape().dimensions(1);
  } else {
    spec.kind = GroupedMatmulKind::kTgmm;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(1);
    spec.n = rhs.dimensions(1);
  }
  if (!chip.is_tpu()) {
    // The tile for m split evenly over the groups; CostGroupedMatmul picks again on the routed
    // sizes (a GPU runs its own grouped-GEMM kernel).
    const GpuGemmTile t = ChooseGpuGemmTile(GpuGemmsOf(spec), chip);
    spec.tm = t.tm;
    spec.tk = t.tk;
    spec.tn = t.tn;
    return spec;
  }
  const Annotation* a = instruction.annotation();
  const bool tiled = a != nullptr && a->has_kernel() && a->kernel().tm() > 0 &&
                     a->kernel().tk() > 0 && a->kernel().tn() > 0;
  spec.tm = tiled ? a->kernel().tm() : 128;
  spec.tk = tiled ? a->kernel().tk() : 128;
  spec.tn = tiled ? a->kernel().tn() : 128;
  return spec;
}

absl::StatusOr<std::optional<RoutedTime>> RoutedTimer::Time(const Instruction& instruction) {
  // Not a pass over every opcode: three ops have run-time sizes, everything else is static.
  const Opcode op = instruction.opcode();
  if (op == Opcode::kRaggedDot) return GroupedMatmul(instruction);
  if (op == Opcode::kRaggedAllToAll) return RaggedAllToAll(instruction);
  const std::string& target = instruction.attributes().custom_call_target;
  if (op == Opcode::kCustomCall && (target == kGmmTarget || target == kTgmmTarget)) {
    return GroupedMatmul(instruction);
  }
  return std::optional<RoutedTime>();
}

absl::StatusOr<const RoutedTimer::Routed*> RoutedTimer::RoutingFor(const Instruction& instruction,
                                                                   const RoutingShape& shape) {
  std::string key = shape.SerializeAsString();
  if (auto it = routed_.find(key); it != routed_.end()) return it->second.get();
  absl::StatusOr<RoutingLayout> layout = RoutingLayout::FromProto(shape);
  if (!layout.ok()) return Annotate(layout.status(), instruction.name());
  if (layout->num_devices() != num_devices_) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": expected an annotated routing over the module's ",
                     num_devices_, " devices; got token_shards · tp = ", layout->token_shards,
                     " · ", layout->tp, " = ", layout->num_devices()));
  }
  absl::StatusOr<RoutingMatrix> matrix = BuildLayoutRouting(routing_, *layout);
  if (!matrix.ok()) {
    return Annotate(matrix.status(), absl::StrCat(instruction.name(), ": --routing ",
                                                  RoutingSpecToString(routing_)));
  }
  auto routed = std::make_unique<Routed>(Routed{*layout, *std::move(matrix)});
  return routed_.emplace(std::move(key), std::move(routed)).first->second.get();
}

absl::StatusOr<std::optional<RoutedTime>> RoutedTimer::GroupedMatmul(
    const Instruction& instruction) {
  const RaggedSizes* ragged = GroupSizesAnnotation(instruction);
  if (ragged == nullptr) return std::optional<RoutedTime>();
  std::optional<GroupedMatmulSpec> spec;
  if (instruction.opcode() == Opcode::kRaggedDot) {
    spec = RaggedDotGroupedSpec(instruction, chip_);
  } else {
    PERFSIM_ASSIGN_OR_RETURN(spec, GroupedMatmulSpecFromInstruction(instruction));
  }
  if (!spec.has_value()) return std::optional<RoutedTime>();
  PERFSIM_ASSIGN_OR_RETURN(const Routed* routed, RoutingFor(instruction, ragged->routing()));
  Distinct<std::vector<int64_t>> distinct(num_devices_);
  for (int64_t d = 0; d < num_devices_; ++d) {
    std::optional<std::vector<int64_t>> sizes =
        RaggedGroupSizes(*ragged, routed->matrix, routed->layout, d);
    // Sizes the annotation does not give (an unspecified rows, a group count out of range):
    // the op keeps its static time.
    if (!sizes.has_value()) return std::optional<RoutedTime>();
    // A buffer smaller than the routing keeps a prefix, as MaxText's _truncate_matrix does.
    std::vector<int64_t> truncated = TruncateGroupSizes(*std::move(sizes), spec->m);
    if (distinct.Has(truncated, d)) continue;
    GroupedMatmulSpec sized = *spec;
    sized.group_sizes = truncated;
    absl::StatusOr<GroupedMatmulCost> cost = CostGroupedMatmul(sized, chip_);
    if (!cost.ok()) return Annotate(cost.status(), instruction.name());
    distinct.Add(std::move(truncated), d,
                 RoutedWork{.seconds = cost->seconds,
                            .flops = cost->work.flops,
                            .bytes = cost->work.bytes_accessed,
                            .bound = cost->bound,
                            .unknown_rates = cost->unknown_rates});
  }
  return std::optional<RoutedTime>(distinct.Take());
}

absl::StatusOr<std::optional<RoutedTime>> RoutedTimer::RaggedAllToAll(
    const Instruction& instruction) {
  const Annotation* a = instruction.annotation();
  if (a == nullptr || !a->has_traffic() || !a->traffic().has_routing() ||
      a->traffic().direction() == RaggedTransfer::DIRECTION_UNSPECIFIED ||
      instruction.operand_count() < 1 || !instruction.operand(0)->shape().IsArray()) {
    return std::optional<RoutedTime>();
  }
  PERFSIM_ASSIGN_OR_RETURN(const Routed* routed, RoutingFor(instruction, a->traffic().routing()));
  const Shape& operand = instruction.operand(0)->shape();
  double row_bytes = static_cast<double>(ByteWidth(operand.element_type()));
  for (int64_t k = 1; k < operand.rank(); ++k) row_bytes *= operand.dimensions(k);
  PERFSIM_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> groups,
                           CollectiveGroups(instruction, num_devices_, /*keep_single=*/true));
  RoutedTime time;
  time.work_of_device.assign(num_devices_, -1);
  for (const std::vector<int64_t>& group : groups) {
    const std::vector<int64_t> rows =
        RaggedExchangeRows(a->traffic().direction(), group, routed->matrix, routed->layout);
    if (rows.empty()) return std::optional<RoutedTime>();
    const int64_t n = static_cast<int64_t>(group.size());
    TrafficMatrix traffic{.devices = group, .bytes = std::vector<double>(n * n)};
    for (int64_t k = 0; k < n * n; ++k) traffic.bytes[k] = static_cast<double>(rows[k]) * row_bytes;
    absl::StatusOr<TrafficTime> routed_time = RouteTraffic(traffic, topology_);
    if (!routed_time.ok()) return Annotate(routed_time.status(), instruction.name());
    for (int64_t i = 0; i < n; ++i) {
      // Rows read (sent, its own share included) and written (received, its own share too).
      double hbm = 0;
      for (int64_t j = 0; j < n; ++j) hbm += traffic.get(i, j) + traffic.get(j, i);
      time.work_of_device[group[i]] = static_cast<int32_t>(time.work.size());
      time.work.push_back(RoutedWork{.seconds = routed_time->seconds,
                                     .bytes = hbm,
                                     .sent_bytes = routed_time->devices[i].send_bytes,
                                     .bound = Bound::kCommunication});
    }
  }
  // A device in no group moves nothing.
  int32_t idle = -1;
  for (int32_t& w : time.work_of_device) {
    if (w >= 0) continue;
    if (idle < 0) {
      idle = static_cast<int32_t>(time.work.size());
      time.work.push_back(RoutedWork{.bound = Bound::kNone});
    }
    w = idle;
  }
  return std::optional<RoutedTime>(std::move(time));
}

}  // namespace perfsim
