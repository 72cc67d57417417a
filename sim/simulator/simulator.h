// The model-agnostic step simulator: any verified HLO module, one chip, one slice -> the
// timeline of every distinct device, step time, exposed communication and HBM peak.
//
//   PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip("tpu_v5p"));
//   PERFSIM_ASSIGN_OR_RETURN(Topology topology, TopologyForModule(module, chip, /*mesh=*/""));
//   PERFSIM_ASSIGN_OR_RETURN(Timeline t, SimulateModule(module, chip, topology, {}));
//   t.step_seconds;                  // the slowest device's finish time
//   t.exposed_communication;         // communication the schedule failed to hide
//   t.ops[i];                        // schedule op i (steps 1, 7): duration, stream, bound ...
//   t.schedule.device(d).start[i];   // when it starts on simulated device d
// Many routings of one module: PrepareModule once, then Simulate per routing (below).
//
// What it reads: nothing but the module and its annotations (no model, no lowering). What it
// does:
//   1. Every instruction of the entry computation is one schedule op (sim/schedule), and so
//      is every instruction of a computation the entry calls (`call`, inlined recursively: a
//      shard_map's all-reduce inside a call is a collective of its own, on the communication
//      stream, not compute inside a kernel); the called instructions come in front of their
//      call, named "call.3/all-reduce.1", their parameters wait for the call's operands, and
//      the call itself takes no time and waits for its root. An op's
//      duration is sim/cost's true-mode time (CostInstruction) on one device of `chip`, with
//      collectives timed on `topology`: a fusion, a custom-call, a call, a conditional (its
//      slowest branch) and an async computation are one kernel each; a while counts its body
//      and condition `trips` and `trips + 1` times, the trip count being XLA's
//      known_trip_count or, failing that, the counted-loop pattern the interpreter recognises
//      (StaticTripCount, sim/cost/trip_count.h); an unknown trip count counts one trip and
//      the op is listed in `untimed` as a lower bound.
//   2. An unfused module (no fusion, not is_scheduled) is loop-fused first (fusion.h):
//      elementwise producers fused into their elementwise, dot and reduce consumers are not
//      written to HBM. Calls, loop bodies, conditions and branches are timed with the same
//      fusion and trip-count rules inside (computation_time.h).
//   3. Collectives (and the -start of an async pair) run on the communication stream and
//      synchronise their groups: replica_groups in XLA's group mode (channel_id,
//      use_global_device_ids, the header's replica_count x num_partitions), a
//      collective-permute's source-target pairs joined into connected groups. The -done of a
//      pair costs 0 and waits for its start, so compute that depends on neither overlaps.
//      Ops of zero duration (parameters, tuples, bitcasts, -done halves) occupy no stream.
//   4. SimulateSchedule runs one static issue order on every device of the module (one
//      simulation per class of identical devices; SPMD: every device has the same durations).
//   5. HBM: entry parameters plus the interpreter's static liveness peak over its own
//      evaluation order (constants included; sim/interp/memory_plan.h, through
//      ComputeMemoryNeed), so the two agree on what is live.
//   6. Ragged sizes are run-time values, drawn from options.routing (default uniform) where
//      the module says what they hold (routed.h): grouped matmuls (ragged-dot, perfsim.gmm /
//      tgmm) whose group-sizes operand carries a RaggedSizes annotation with its routing are
//      timed per device with that device's group sizes, and ragged-all-to-alls with a
//      RaggedTransfer annotation with the routing's traffic, group by group. Devices with other
//      sizes get other durations, so the schedule has several device classes. Without these
//      annotations (any module not lowered by perfsim) the ops keep sim/cost's static time:
//      a ragged-dot as one dot with up to G - 1 row tiles of waste, a gmm / tgmm with unknown
//      sizes (every group boundary splitting a tile), a ragged-all-to-all as its operand's
//      rows spread evenly over its group. When every replica routes alike only the first
//      data-parallel replica is simulated (routed.h, "Replicas").
//   7. The incoming cotangent: an entry parameter annotated ROLE_COTANGENT (a backward's dy)
//      is not available at time 0. In a whole step it arrives after the rest of the network's
//      forward and the backward of the layers above; for one layer the earliest honest time is
//      when the layer's forward output is complete. So it waits for the forward's outputs
//      (cotangent.h): the root's elements (through tuples) annotated PHASE_FORWARD, or, when
//      the root holds none, every forward-phase instruction no other forward-phase
//      instruction reads. Forward work the outputs do not need may still overlap the backward.
// Never a silent 0: an instruction whose time sim/cost cannot give, a custom-call of a target
// perfsim does not model (its time is then only its HBM traffic), or a call, loop or
// conditional holding such an op is listed in `untimed` and marked lower_bound.
//
// Errors: InvalidArgument for a module without an entry, calls nested deeper than
// kMaxCallDepth (sim/ir/verifier.h: the liveness pass recurses), a module of more devices than the
// topology has, a collective whose groups name devices out of range, an instruction sim/cost
// refuses, a forward output that reads the cotangent (a cycle), or an annotated routing the
// routing spec cannot fill (routed.h) (the message names the instruction, with its
// line:column when the text gave one).
#ifndef PERFSIM_SIM_SIMULATOR_SIMULATOR_H_
#define PERFSIM_SIM_SIMULATOR_SIMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/comm/topology.h"
#include "sim/cost/cost_types.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"
#include "sim/moe/routing.h"
#include "sim/schedule/schedule.h"

namespace perfsim {

struct SimulatorOptions {
  // Devices the module runs on; 0: ModuleDeviceCount (header counts or the largest device id
  // its collectives name, plus one). At most topology.num_devices().
  int64_t num_devices = 0;
  // Every device class's full timeline (a trace of several devices); false completes only the
  // slowest device's (SimulateOptions::every_class).
  bool every_class = true;
  // The distribution ragged sizes are drawn from (sim/moe/routing.h: uniform, zipf:S, hot:P,
  // file:PATH), for the ops annotated with what their sizes hold (step 6 above).
  RoutingSpec routing;
};

// One schedule op: an entry instruction or one of an inlined call's, as simulated. Times are
// the same on every device (SPMD) but for routed ops (step 6), whose figures here are the
// slowest device's and device_seconds has every device's; where an op starts differs per
// device and is in Timeline::schedule.
struct TimelineOp {
  const Instruction* instruction = nullptr;
  std::string name;  // the instruction's; "call.3/all-reduce.1" inside an inlined call.3
  std::string opcode;
  std::string op_name;  // metadata op_name, "" when none
  Stream stream = Stream::kNone;
  double seconds = 0;  // duration
  Bound bound = Bound::kNone;
  double flops = 0;  // true counts (loops times their trips)
  double bytes = 0;  // HBM bytes read and written, after fusion
  bool fused = false;        // interior of a loop fusion (fusion.h): no HBM write, no launch
  bool lower_bound = false;  // untimed work or a chip rate missing: the time is a lower bound
  std::vector<std::vector<int64_t>> groups;  // collectives: the device groups it synchronises
  // Routed ops: the duration on each simulated device (Timeline::simulated_devices entries);
  // empty otherwise.
  std::vector<double> device_seconds;
  // Routed ragged-all-to-alls: bytes sent to other devices (the slowest device's, and the most
  // any device sends).
  double sent_bytes = 0;
  double max_sent_bytes = 0;

  // Device d of the module (the replicas beyond the simulated ones repeat them).
  double SecondsOn(int64_t device) const {
    return device_seconds.empty()
               ? seconds
               : device_seconds[device % static_cast<int64_t>(device_seconds.size())];
  }
};

// Busy time and work of a set of ops on the slowest device (Timeline::subtotals): the busy
// time (finish − start) of its ops on a stream, the FLOPs and HBM bytes of all of them (fused
// interior ops included: their work happens inside their consumer's kernel).
struct Subtotal {
  bool present = false;  // some op of the set takes time, does work or is not fully timed
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
};

struct Timeline {
  std::string module;
  int64_t num_devices = 1;
  // Devices the schedule simulates: num_devices, or the first data-parallel replica's when
  // every replica routes alike (routed.h); device d has the timeline of d % simulated_devices.
  int64_t simulated_devices = 1;
  // The entry's instructions in text order, each inlined call's instructions (by the same
  // rule) in front of the call, and a cotangent parameter with what reads it moved after the
  // forward outputs it waits for (step 7). Empty when Simulate ran without detail.
  std::vector<TimelineOp> ops;
  // Issue order, device classes and each class's start/finish per op (schedule.h).
  Schedule schedule;
  // The slowest device's figures.
  int64_t slowest_device = 0;
  double step_seconds = 0;  // makespan
  double compute_busy = 0;
  double communication_busy = 0;
  double exposed_communication = 0;
  // Every op one after another on the slowest device (what `perfsim cost` sums, but for loop
  // fusion and routed sizes).
  double serial_seconds = 0;
  // HBM per device: entry parameters, and the peak of the other live buffers (constants
  // included) with where it happens ("while.2 > dot.7").
  int64_t parameter_bytes = 0;
  int64_t peak_buffer_bytes = 0;
  std::string peak_at;
  // Names of the instructions whose time is not (fully) known; see the header comment.
  std::vector<std::string> untimed;
  std::vector<std::string> unknown_rates;  // chip rates the costs needed and the chip lacks, sorted
  // FLOP the module executes on the slowest device (true counts, every op, loops times their
  // trips): the "model flops" of a real module, recomputation included.
  double flops = 0;
  bool fused = false;  // loop fusion applied (the module was not fused)
  // The routing the ragged sizes were drawn from, and how many ops it timed (step 6); 0 when
  // the module says nothing about its ragged sizes.
  RoutingSpec routing;
  int64_t routed_ops = 0;
  // Per subtotal the caller asked for (SimulationRun::subtotal_of), on the slowest device.
  std::vector<Subtotal> subtotals;
};

// The slice for a module: `mesh` when given (Topology::Create), else TopologyForDevices of its
// ModuleDeviceCount (sim/cost/module_cost.h). InvalidArgument when a given mesh has fewer
// devices than the module names.
absl::StatusOr<Topology> TopologyForModule(const Module& module, const Chip& chip,
                                           absl::string_view mesh);

// SimulateModule in two stages, for callers that simulate one module under many routings
// (sim/predict, sim/sweep): PrepareModule does everything that does not depend on the
// routing (flattening, fusion, every op's static cost, groups, the schedule graph, the HBM
// liveness peak, which ops are routed); Simulate draws the ragged sizes and runs the schedule.
//
//   PERFSIM_ASSIGN_OR_RETURN(PreparedModule prepared, PrepareModule(module, chip, topology));
//   SimulatorCache cache;                                               // optional
//   PERFSIM_ASSIGN_OR_RETURN(Timeline t, Simulate(prepared, {.routing = r, .cache = &cache}));
//
// SimulateModule(m, c, t, o) is Simulate(PrepareModule(m, c, t, o.num_devices), {o.routing,
// o.every_class}) and gives the same bits; so does every Simulate with any cache or none.
struct PreparedModuleData;
class PreparedModule {
 public:
  int64_t num_ops() const;
  // Op i (issue order) with its routing-independent figures: name, opcode, op_name,
  // instruction, stream, static duration, bound, flops, bytes, groups.
  const TimelineOp& op(int64_t i) const;
  int64_t num_devices() const;
  const PreparedModuleData& data() const { return *data_; }

 private:
  friend absl::StatusOr<PreparedModule> PrepareModule(const Module& module, const Chip& chip,
                                                      const Topology& topology,
                                                      int64_t num_devices);
  std::shared_ptr<const PreparedModuleData> data_;
};

// `module`, `chip` and `topology` must outlive the result. num_devices as
// SimulatorOptions::num_devices. Errors as SimulateModule's, but for those of the routing.
absl::StatusOr<PreparedModule> PrepareModule(const Module& module, const Chip& chip,
                                             const Topology& topology, int64_t num_devices = 0);

// What callers simulating many routings keep between Simulate calls: pure functions of their
// keys, so results are the same bits with any cache, a fresh one or none.
//   - grouped-matmul costs by (spec, group sizes) and ragged-all-to-all costs by (group, row
//     bytes, direction, each member's EP rank and routing row): shared by every PreparedModule
//     of one chip description and slice; a module of another chip or slice empties them;
//   - per (PreparedModule, routing): every op's routing-dependent durations and costs, so that
//     a routing seen before costs one schedule simulation (the last 64 are kept).
// Not thread-safe: one per thread.
class SimulatorCache {
 public:
  SimulatorCache();
  ~SimulatorCache();
  SimulatorCache(const SimulatorCache&) = delete;
  SimulatorCache& operator=(const SimulatorCache&) = delete;
  struct Stats {
    int64_t routing_hits = 0, routing_misses = 0;  // (module, routing) memos
    int64_t grouped_hits = 0, grouped_misses = 0;  // grouped-matmul costs
    int64_t ragged_hits = 0, ragged_misses = 0;    // ragged all-to-all costs
  };
  Stats stats() const;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct SimulationRun {
  RoutingSpec routing;
  // Timeline::ops and every class's full timeline. Without detail a Timeline has its totals,
  // subtotals, HBM and untimed list only, and only the slowest device's class is completed.
  bool detail = true;
  // Per op of the PreparedModule: the index of the subtotal it counts in (-1: none), and how
  // many subtotals there are. Null: no subtotals.
  const std::vector<int32_t>* subtotal_of = nullptr;
  int32_t num_subtotals = 0;
  SimulatorCache* cache = nullptr;  // null: a fresh one per call
};

// InvalidArgument for a routing the annotated layouts cannot take (a routing file of the wrong
// width or row count), naming the first instruction that annotates the layout.
absl::StatusOr<Timeline> Simulate(const PreparedModule& prepared, const SimulationRun& run);

absl::StatusOr<Timeline> SimulateModule(const Module& module, const Chip& chip,
                                        const Topology& topology,
                                        const SimulatorOptions& options = {});

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_SIMULATOR_H_
