// Internals of sim/simulator shared by its two stages (prepare.cc: PrepareModule; simulator.cc
// and routed.cc: Simulate). Not an API.
#ifndef PERFSIM_SIM_SIMULATOR_PREPARED_H_
#define PERFSIM_SIM_SIMULATOR_PREPARED_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/annotation.pb.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"
#include "sim/moe/ragged_sizes.h"
#include "sim/schedule/schedule.h"
#include "sim/simulator/routed.h"
#include "sim/simulator/simulator.h"

namespace perfsim {

// An op whose sizes are run-time values drawn from the routing (simulator.h step 6): what
// Simulate needs to time it on any device, read from its annotations once.
struct RoutedOpSpec {
  int64_t op = 0;      // index into PreparedModuleData::ops
  int32_t layout = 0;  // index into PreparedModuleData::layouts
  enum class Kind { kGroupedMatmul, kRaggedAllToAll } kind = Kind::kGroupedMatmul;
  // Grouped matmuls: the spec with its tiling but no group sizes, and what the group-sizes
  // operand holds.
  GroupedMatmulSpec grouped;
  RaggedSizes sizes;
  // Ragged-all-to-alls: the direction, bytes per row and every replica group (single members
  // kept: a lone member still copies its own rows).
  RaggedTransfer::Direction direction = RaggedTransfer::DIRECTION_UNSPECIFIED;
  double row_bytes = 0;
  std::vector<std::vector<int64_t>> groups;
};

struct PreparedModuleData {
  uint64_t id = 0;  // unique in the process (SimulatorCache keys its memos by it)
  const Module* module = nullptr;
  const Chip* chip = nullptr;
  const Topology* topology = nullptr;
  // The chip description and slice costs are for (the cache's cost memos hold for one).
  std::string cost_context;
  int64_t num_devices = 1;
  // Every schedule op with its routing-independent figures (routed ops: sim/cost's static
  // time, replaced per device by Simulate), in issue order.
  std::vector<TimelineOp> ops;
  // The schedule problem over all num_devices devices (durations unset), and its graph.
  ScheduleProblem problem;
  std::shared_ptr<const ScheduleGraph> graph;
  // The routed ops, and per op its index among them (-1: not routed).
  std::vector<RoutedOpSpec> routed;
  std::vector<int32_t> routed_of;
  // The distinct routing layouts the annotations name, each with the first instruction that
  // names it (for errors).
  std::vector<RoutingLayout> layouts;
  std::vector<std::string> layout_named_by;
  std::vector<std::string> untimed;
  std::vector<std::string> unknown_rates;
  bool fused = false;
  int64_t parameter_bytes = 0;
  int64_t peak_buffer_bytes = 0;
  std::string peak_at;
};

// One routed op's costs on the simulated devices: its distinct costs, and per device the one
// it has (empty: the routing does not say, and the op keeps its static time).
struct RoutedTime {
  std::vector<RoutedWork> work;
  std::vector<int32_t> work_of_device;
};

// Everything Simulate derives from a routing before it runs the schedule: the simulated
// devices (the first data-parallel replica when every replica routes alike), their graph,
// every op's durations and the routed ops' costs.
struct RoutedCosts {
  uint64_t prepared_id = 0;
  RoutingSpec routing;
  int64_t num_devices = 0;  // simulated
  std::shared_ptr<const ScheduleGraph> graph;
  ScheduleDurations durations;
  std::vector<RoutedTime> routed;  // per PreparedModuleData::routed entry
};

struct SimulatorCache::Impl {
  std::string context;  // the cost_context the cost memos hold for
  // Key: the spec's shape, tiling and types, then the group sizes.
  absl::flat_hash_map<std::vector<int64_t>, RoutedWork> grouped;
  // Key: (group, row bytes, EP), then the direction, each member's (EP rank, index of its
  // routing row among the distinct rows) and the distinct rows' counts.
  struct RaggedEntry {
    double seconds = 0;
    std::vector<double> sent;  // per member, to other devices
    std::vector<double> hbm;   // per member: rows read (sent, own share included) + received
  };
  absl::flat_hash_map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
                      std::shared_ptr<const RaggedEntry>>
      ragged;
  std::deque<std::shared_ptr<const RoutedCosts>> routed;  // most recent last
  // Restricted schedule graphs by (prepared id, simulated devices).
  std::deque<std::pair<std::pair<uint64_t, int64_t>, std::shared_ptr<const ScheduleGraph>>>
      graphs;
  Stats stats;
};

// The routing's costs on `data`, from the cache when it has them (routed.cc).
absl::StatusOr<std::shared_ptr<const RoutedCosts>> RoutedCostsFor(const PreparedModuleData& data,
                                                                  const RoutingSpec& routing,
                                                                  SimulatorCache::Impl& cache);

// The routed-op description of an instruction (routed.cc), nullopt when it is not routed (no
// annotation saying what its sizes hold, or a form the grouped model does not read). Adds the
// annotated routing layout to data.layouts when new; InvalidArgument naming the instruction for
// a malformed layout or one whose devices are not the module's.
absl::StatusOr<std::optional<RoutedOpSpec>> DescribeRoutedOp(const Instruction& instruction,
                                                              int64_t op, PreparedModuleData& data);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_PREPARED_H_
