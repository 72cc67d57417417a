// `perfsim predict`: the MoE step's time on a described cluster, with a breakdown.
//
//   PredictOptions o = DefaultPredictOptions();       // DeepSeek-V3, fwd_bwd, v7x 4x8x8
//   PERFSIM_ASSIGN_OR_RETURN(Prediction p, Predict(o));
//   p.step_seconds; p.mfu; p.phases; p.ops (the slowest device's timeline)
//
// In two stages, for callers that evaluate many routings of one scenario (sim/sweep):
//   PERFSIM_ASSIGN_OR_RETURN(PreparedStep step, PrepareStep(o));          // routing ignored
//   PredictCache cache;                                                   // optional
//   PERFSIM_ASSIGN_OR_RETURN(Prediction p, PredictWithRouting(step, routing,
//                                          {.detail = false, .cache = &cache}));
// Predict(o) is PredictWithRouting(PrepareStep(o), o.routing, {}) and gives the same bits, and
// so does every evaluation without detail or with a cache, whatever the cache holds: sim/sweep
// ranks plans with this one model of the step time.
//
// Pipeline: StepSpec -> lowering (the backend's per-device module, annotated with what it holds:
// sim/lowering/annotations.h) -> the model-agnostic simulator (sim/simulator/simulator.h:
// per-instruction cost on the chip, collectives on the slice's topology, the ragged parts drawn
// from the routing matrix, the schedule on every device) -> this report: the slowest device's
// timeline, per-phase subtotals (phases from the stage annotations), MFU (the model's useful
// FLOPs), HBM use (the parameters' roles). predict reads the module only through the
// simulator, so `perfsim lower FLAGS | perfsim predict --hlo - --hw H --mesh M` is the same
// step as `perfsim predict FLAGS` (tests/simulator/lower_predict_routing_test.cc).
//
// Fusion: the lowering emits one instruction per elementwise op, as XLA's HLO before fusion.
// The simulator models XLA's fusion when costing (sim/simulator/fusion.h
// PlanFusion, FusedCost): an elementwise op, convert, broadcast, iota or constant whose users
// are all such ops, dots or reduces is fused into them, as XLA fuses a convert into the dot
// that reads it — its result is not written to HBM, its consumers do not read it, and it pays
// no kernel overhead (its arithmetic and the reads of its own inputs still count). Gathers,
// sorts, grouped matmuls and collectives take no producers.
//
// The incoming cotangent (fwd_bwd; the simulator's rule, simulator.h step 7): the entry
// parameter annotated ROLE_COTANGENT (dy) is not available at time 0. In a whole step it arrives after the rest of the network's forward and
// the backward of the layers above; for one layer the earliest honest time is when the
// layer's forward output is complete. So dy gets schedule edges from the forward's outputs:
// the root's elements (through tuples) annotated PHASE_FORWARD (y), or, when the root holds
// none, every forward-phase instruction no other forward-phase instruction reads. Every op
// that reads dy, directly or not, starts after they finish; forward work that y does not need
// (values saved only for the backward) may still overlap the backward. A forward output that
// reads dy is a cycle: InvalidArgument.
//
// Routing enters in two places, per device:
//   - grouped matmuls (ragged-dot, perfsim.gmm/tgmm): their group sizes are the device's rows
//     per expert: the token shard's own assignments when the op has E groups (data-parallel
//     backends), or the assignments every token shard of its expert-parallel group sends to
//     its E/EP local experts when the op has E/EP groups; cost by the grouped-matmul model
//     (tile waste, visited tiles, weight re-reads, grid steps) with the op's tiling. A kernel
//     custom-call carries its tiling (the --tiling-wi/--tiling-wo knobs). A ragged-dot on a
//     TPU runs with its projection's forward knob, which MaxText passes as ragged_dot_tiling
//     XLA metadata (sim/simulator/routed.h RaggedDotGroupedSpec); on a GPU the CTA tile of
//     the grouped-GEMM kernel.
//   - ragged-all-to-all: the bytes each device of an EP group sends each other, from the same
//     matrix (dispatch: rows for the receiver's experts; combine: the transpose), routed over
//     the topology (most loaded link). Its row's HBM bytes are the rows it really reads and
//     writes (sent plus received, its own share included), not its buffers.
// Device classes: every data-parallel replica sees the same routing unless a file gives
// different rows per token shard; then only the first replica's EP·TP devices are simulated
// (sim/simulator/routed.h, "Replicas")
// (their collectives over dp act within it; collective times still come from the full groups
// on the full topology). Among the simulated devices, the schedule runs once per class of
// devices with identical timelines (sim/schedule/schedule.h).
// Model FLOPs (for MFU) are the useful ones: tokens·(routed + shared + router FLOPs per token)
// (×3 for fwd_bwd), divided over the devices; peak is the chip's bf16 (or f32) matrix peak per
// device.
// HBM per device: parameters and gradients of the step's module (its entry parameters and
// gradient outputs: none for DeepSeek-V3's score-correction bias, which is not trained),
// optimizer state if asked (Adam: two f32 moments per trained parameter), and the peak of the
// other live buffers (activations, residuals kept for the backward, communication buffers):
// the simulator's liveness peak, the interpreter's memory plan (sim/interp/memory_plan.h), plus
// the inputs x and dy.
#ifndef PERFSIM_SIM_PREDICT_PREDICT_H_
#define PERFSIM_SIM_PREDICT_PREDICT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cost/cost_types.h"
#include "sim/hw/chip.h"
#include "sim/moe/routing.h"
#include "sim/moe/step_spec.h"
#include "sim/schedule/schedule.h"
#include "sim/simulator/simulator.h"

namespace perfsim {

struct PredictOptions {
  StepSpec spec;
  std::string hw = "tpu_v7x";
  // The chip itself, when it is neither a built-in nor a file: e.g. a built-in with other
  // efficiency factors (`perfsim accuracy` predicts its block rows with fitted ones). When set,
  // PrepareStep uses it instead of resolving hw.
  std::optional<Chip> chip;
  std::string mesh;  // physical slice, e.g. "4x8x8"; empty: the chip's default slice
  RoutingSpec routing;
  bool adam = false;  // count Adam's optimizer state in HBM
};

// The embedded default scenario: DeepSeek-V3 MoE layer, fwd_bwd, TPU v7x 4x8x8 (512 devices),
// ep_ragged_a2a with ep=256, dp=2, batch 512 × seq 4096 (4096 tokens per device), uniform
// routing.
absl::StatusOr<PredictOptions> DefaultPredictOptions();

struct OpRow {
  std::string name;
  std::string opcode;
  std::string stage;   // "router", "dispatch", ... (the lowering's op_name scope)
  std::string phase;   // router, permute, dispatch, experts, combine, shared, backward
  std::string stream;  // "compute" or "comm"
  double start = 0;
  double seconds = 0;
  Bound bound = Bound::kNone;
  double flops = 0;
  // HBM bytes the op reads and writes on this device (after loop fusion; grouped matmuls by
  // the tiling's traffic; ragged-all-to-all: the rows it sends and receives, not its buffers).
  double bytes = 0;
  // Collectives: bytes this device sends to other devices (ragged-all-to-all: from the
  // routing's traffic; other collectives: 0, not broken out), and the most any device sends.
  double sent_bytes = 0;
  double max_sent_bytes = 0;
  // The time leaves out work for a rate the chip description lacks (a lower bound).
  bool lower_bound = false;
};

// The phases of Prediction::phases, in report order (each appears when some op has it).
inline constexpr int kNumPredictPhases = 8;
inline constexpr const char* kPredictPhaseNames[kNumPredictPhases] = {
    "router", "permute", "dispatch", "experts", "combine", "shared", "backward", "other"};

struct PhaseTotal {
  std::string phase;
  double seconds = 0;  // busy time of the phase's ops on the slowest device (both streams)
  double flops = 0;
  double bytes = 0;
};

struct MemoryUse {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;  // peak of the other live buffers
  double total = 0;
  double capacity = 0;  // HBM per device
  bool fits = true;
};

struct Prediction {
  PredictOptions options;
  std::string chip;
  std::string mesh;
  int64_t num_devices = 0;
  int64_t slowest_device = 0;
  std::vector<OpRow> ops;  // the slowest device, by start time (empty without detail)
  std::vector<PhaseTotal> phases;
  double step_seconds = 0;
  double compute_busy = 0;
  double communication_busy = 0;
  double exposed_communication = 0;
  double model_flops_per_device = 0;
  double peak_flops_per_device = 0;
  double mfu = 0;
  MemoryUse memory;
  std::vector<std::string> unknown_rates;  // chip rates the costs needed but the chip lacks
  // For the trace (empty without detail): the schedule of the simulated devices, ids
  // 0 .. schedule.num_devices() − 1, and the ops in schedule index order (start/seconds
  // unset). Device d has the timeline of simulated device d % schedule.num_devices().
  Schedule schedule;
  std::vector<OpRow> op_info;
};

// Where PrepareStep failed (sim/sweep sorts its infeasible points by it).
enum class PrepareStage {
  kScenario,  // chip, slice, device count, batch split
  kLower,     // the backend's lowering (LowerStep)
  kFit,       // a kernel tiling that does not fit, or a kernel the chip cannot run
  kCost,      // per-instruction costs
};

// Everything about a scenario that does not depend on its routing: the chip, the slice, the
// lowered module, the kernel fit check, every instruction's routing-independent cost (loop
// fusion applied), the ragged-dots' tilings, the schedule graph and the static HBM terms.
// Immutable once made; copies share it.
struct PreparedStepData;
class PreparedStep {
 public:
  const PredictOptions& options() const;
  int64_t num_instructions() const;
  const PreparedStepData& data() const { return *data_; }

 private:
  friend absl::StatusOr<PreparedStep> PrepareStep(const PredictOptions& options,
                                                  PrepareStage* failed_stage);
  std::shared_ptr<const PreparedStepData> data_;
};

// InvalidArgument (exit 2) for unknown chips, meshes that do not match the parallelism's device
// count, specs the backend refuses, ...; a kernel tiling that does not fit is a failed check
// (sim/fit IsMisfit). options.routing is not read. On failure `*failed_stage`, when given,
// says which stage failed.
absl::StatusOr<PreparedStep> PrepareStep(const PredictOptions& options,
                                         PrepareStage* failed_stage = nullptr);

// What callers evaluating many routings keep between PredictWithRouting calls: pure functions
// of their keys, so results are the same bits with any cache, a fresh one or none.
//   - grouped-matmul costs by (the op's GroupedMatmulSpec, group sizes), and ragged all-to-all
//     costs by (group, row bytes, direction, EP, each member's expert shard and routing row):
//     shared by every PreparedStep of one chip description and slice (the steps of a sweep);
//     a step of another chip or slice empties them;
//   - per (PreparedStep, routing): every op's routing-dependent durations and costs, so that a
//     routing seen before costs one schedule simulation (the last 64 are kept).
// Not thread-safe: one per thread.
class PredictCache {
 public:
  PredictCache();
  ~PredictCache();
  PredictCache(const PredictCache&) = delete;
  PredictCache& operator=(const PredictCache&) = delete;
  using Stats = SimulatorCache::Stats;
  Stats stats() const;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct EvaluateOptions {
  // Per-op rows, op_info and the schedule for the trace. Without them a Prediction has totals,
  // phases, memory and MFU only (what a sweep reads), and only the slowest device's timeline
  // is completed (SimulateOptions::every_class = false).
  bool detail = true;
  PredictCache* cache = nullptr;  // null: a fresh one per call
};

// The routing-dependent rest of Predict. InvalidArgument for a routing file whose shape does
// not match the scenario.
absl::StatusOr<Prediction> PredictWithRouting(const PreparedStep& step, const RoutingSpec& routing,
                                              const EvaluateOptions& options = {});

// The part of a Prediction a simulated timeline gives (sim/simulator/simulator.h), one report
// for predict and predict --hlo: slowest device, step time, busy times, exposed
// communication, unknown rates; the phases from t.subtotals (subtotal k named phase_names[k],
// those with ops in index order); and when t has its ops (Simulate with detail) the rows:
// op_info in index order, labelled stage_of[i] and phase_names[phase_of[i]] ("other" for -1),
// ops (the slowest device's ops that take time or are not fully timed) by start, and the
// schedule. Scenario, MFU and memory are the caller's.
void ReportTimeline(Timeline t, const std::vector<std::string>& phase_names,
                    const std::vector<int32_t>& phase_of, const std::vector<std::string>& stage_of,
                    Prediction& p);

absl::StatusOr<Prediction> Predict(const PredictOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_PREDICT_H_
