// Internals of sim/predict shared by its two stages (prepare.cc, evaluate.cc). Not an API.
#ifndef PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_
#define PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/routing.h"
#include "sim/predict/predict.h"
#include "sim/schedule/schedule.h"

namespace perfsim {

// One entry instruction, costed as far as it can be without the routing.
struct PreparedOp {
  enum class Kind { kPlain, kGroupedMatmul, kRaggedAllToAll };
  Kind kind = Kind::kPlain;
  const Instruction* instruction = nullptr;
  OpRow info;  // name, opcode, stage, phase, stream, bound, flops, bytes
  Stream stream = Stream::kNone;
  double base_seconds = 0;        // the routing-independent time (loop fusion applied)
  std::vector<int64_t> operands;  // schedule edges: operands, then control predecessors
  // Collectives: every replica group, device ids over the whole mesh: the instruction's own
  // list, or `owned_groups` (expanded iota groups; one group of all devices).
  const std::vector<std::vector<int64_t>>& groups() const {
    return listed_groups != nullptr ? *listed_groups : owned_groups;
  }
  const std::vector<std::vector<int64_t>>* listed_groups = nullptr;
  std::vector<std::vector<int64_t>> owned_groups;
  // Grouped matmuls: the spec with its tiling but no group sizes (nullopt: the routing does
  // not say, e.g. a shape the model does not read; the op keeps base_seconds), and G.
  std::optional<GroupedMatmulSpec> grouped;
  int64_t total_groups = 0;
  // What its group-sizes operand holds (that operand's annotation); nullopt: not annotated,
  // the routing does not say.
  std::optional<RaggedSizes> ragged;
  // Ragged all-to-all: towards the experts (dispatch, combine_bwd) or back, and bytes per row.
  bool to_experts = false;
  double row_bytes = 0;
  // HBM: whether the op's result counts in the live-buffer peak, and its bytes.
  bool in_memory = false;
  double result_bytes = 0;
};

struct PreparedStepData {
  PreparedStepData(PredictOptions o, LoweredStep s) : options(std::move(o)), step(std::move(s)) {}
  // Unique in the process (PredictCache keys its per-step memos by it).
  uint64_t id = 0;
  // The chip description and slice the costs are for (PredictCache's cost caches hold for one).
  std::string cost_context;
  PredictOptions options;
  std::unique_ptr<Chip> chip;
  std::unique_ptr<Topology> topology;
  std::string mesh;
  LoweredStep step;
  std::vector<PreparedOp> ops;
  // Per op: its index in kPredictPhaseNames (-1: none of them).
  std::vector<int8_t> phase;
  // The schedule graph of one data-parallel replica (devices 0 .. EP·TP − 1: what is simulated
  // when every replica routes alike), collective groups restricted to it.
  int64_t replica_devices = 0;
  std::shared_ptr<const ScheduleGraph> replica_graph;
  std::vector<std::string> unknown_rates;
  // Static HBM terms per device.
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double input_activations = 0;  // x and dy
  double capacity = 0;
  double model_flops_per_device = 0;
  double peak_flops_per_device = 0;
};

// Cached routing-dependent costs (PredictCache).
struct GroupedEntry {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
  Bound bound = Bound::kNone;
};
struct RaggedEntry {
  double seconds = 0;
  // Per member of the group, in group order.
  std::vector<double> sent;  // to other devices
  std::vector<double> hbm;   // rows read (sent, own share included) + rows received
  double max_sent = 0;
};

// The schedule graph of `n` simulated devices (ids 0 .. n − 1): every op's operands and stream,
// and each collective's groups restricted to those devices (a group left with fewer than two
// is dropped: a device alone waits for no one).
absl::StatusOr<ScheduleGraph> BuildScheduleGraph(const PreparedStepData& data, int64_t n);

// One routing's costs on one PreparedStep: what PredictWithRouting derives from the routing
// before it simulates the schedule.
struct RoutedOp {
  // Grouped matmuls: per simulated device, its entry in `grouped` (empty: the op keeps its
  // routing-independent time).
  std::vector<int32_t> grouped_of;
  std::vector<GroupedEntry> grouped;
  // Ragged all-to-all: per simulated device, its group's entry (null: in no simulated group)
  // and its place in the group.
  std::vector<std::shared_ptr<const RaggedEntry>> ragged;
  std::vector<int32_t> member;
};
struct RoutedCosts {
  uint64_t step_id = 0;
  RoutingSpec routing;
  int64_t num_devices = 0;  // simulated
  std::shared_ptr<const ScheduleGraph> graph;
  ScheduleDurations durations;
  std::vector<RoutedOp> ops;  // per op
};

struct PredictCache::Impl {
  std::string context;  // the cost_context the cost caches hold for
  // Key: the spec's shape, tiling and types, then the group sizes.
  absl::flat_hash_map<std::vector<int64_t>, GroupedEntry> grouped;
  // Key: (group, row bytes, EP), then the direction, each member's (expert shard, index of its
  // routing row among the distinct rows) and the distinct rows' counts: what the traffic is a
  // function of.
  absl::flat_hash_map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
                      std::shared_ptr<const RaggedEntry>>
      ragged;
  std::deque<std::shared_ptr<const RoutedCosts>> routed;  // most recent last
  Stats stats;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_PREDICT_INTERNAL_H_
