// Predict (sim/predict/predict.h) split into the stage that does not depend on the routing and
// the stage that does, so a sweep lowers and costs a module once and re-does only the ragged
// parts per routing.
//
//   PERFSIM_ASSIGN_OR_RETURN(StagedStep step, PrepareStagedStep(spec, chip, topology,
//   /*adam=*/false)); StagedCaches caches;                             // reused across points and
//   blocks PERFSIM_ASSIGN_OR_RETURN(StagedResult r,
//                            EvaluateStagedRouting(step, routing, "zipf:1.0", caches));
//   r.step_seconds;   // == Predict(options).step_seconds, bit for bit
//
// Stages and what each depends on (the cache key):
//   PrepareStagedStep      (spec, chip, topology, adam): lowering, kernel fit, the schedule graph,
//                    every instruction's cost with loop fusion applied (Predict's "base"), the
//                    grouped-matmul specs (everything but the group sizes), collective groups,
//                    the static HBM terms (parameters, gradients, optimizer), model FLOPs.
//   routing matrix   (routing, sources, tokens per source, K, E)      StagedCaches::matrices
//   grouped matmul   (the GroupedMatmulSpec with its group sizes)     StagedCaches::grouped
//   ragged a2a       (instruction shapes, group, direction, parallelism, routing matrix key)
//                                                                     StagedCaches::a2a
//                    and, on a miss, (instruction shapes, group, the traffic matrix itself,
//                    compared in full on a hit)              StagedCaches::a2a_by_traffic
//   schedule, phases, MFU, HBM peak: per point (they depend on every duration).
//
// This mirrors Predict's costing rule for rule (TODO(issue 8): replace with the hook requested
// in /work/notes/requests_sweep.md once sim/predict exposes its stages);
// tests/sweep/staged_predict_test.cc checks that both give the same bits on several scenarios.
//
// The schedule is simulated on device *classes*: devices whose durations are equal on every op
// and whose collective groups meet the same classes have identical timelines (by induction over
// the issue order), so one representative per class (its lowest device id) is simulated. The
// issue order (HLFET on mean durations over all devices) and every reported figure are the
// same as SimulateSchedule's on all devices; uniform routing gives one class.
#ifndef PERFSIM_SIM_SWEEP_STAGED_PREDICT_H_
#define PERFSIM_SIM_SWEEP_STAGED_PREDICT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "sim/comm/topology.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/routing.h"
#include "sim/moe/step_spec.h"
#include "sim/schedule/schedule.h"

namespace perfsim {

// Predict's phases, in its report order.
inline constexpr int kNumSweepPhases = 8;
inline constexpr const char* kSweepPhaseNames[kNumSweepPhases] = {
    "router", "permute", "dispatch", "experts", "combine", "shared", "backward", "other"};

struct StagedOp {
  enum class Kind : uint8_t { kPlain, kGroupedMatmul, kRaggedA2a };
  Kind kind = Kind::kPlain;
  Stream stream = Stream::kNone;
  int8_t phase = kNumSweepPhases - 1;
  bool collective = false;
  bool in_memory = true;    // counts in the live-buffer peak (not parameter/tuple/gte/bitcast)
  double live_bytes = 0;    // its result's bytes when it does
  double base_seconds = 0;  // Predict's per-op time (loop fusion applied)
  std::vector<int64_t> operands;  // operands, then control predecessors (schedule edges)
  // Collectives: every replica group (device ids over the whole mesh).
  std::vector<std::vector<int64_t>> groups;
  // Grouped matmuls: the spec without group sizes (or why there is none) and G.
  std::optional<GroupedMatmulSpec> grouped;
  absl::Status grouped_status;
  int64_t total_groups = 0;
  // Ragged all-to-all.
  const Instruction* instruction = nullptr;
  bool to_experts = false;
  double row_bytes = 0;
  std::string a2a_signature;  // shapes of the operands and result
};

struct StagedStep {
  StepSpec spec;
  const Chip* chip = nullptr;
  const Topology* topology = nullptr;
  std::shared_ptr<LoweredStep> lowered;  // owns the module the ops point into
  std::vector<StagedOp> ops;
  std::vector<int64_t> user_begin;  // users of op i: users[user_begin[i] .. user_begin[i+1])
  std::vector<int64_t> users;
  std::vector<std::string> unknown_rates;
  // The devices Predict simulates when every data-parallel replica routes alike (ep·tp), and
  // each op's collective groups restricted to them.
  int64_t simulated_devices = 0;
  std::vector<std::vector<std::vector<int64_t>>> simulated_groups;
  // HBM per device, bytes (Predict's MemoryUse without the live peak).
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double input_activations = 0;  // x and dy
  double capacity = 0;
  double model_flops_per_device = 0;
  double peak_flops_per_device = 0;
  // Cost of the preparation itself, for the sweep's statistics.
  int64_t num_instructions = 0;
};

// The stage a preparation failed in.
enum class StagedPrepareStage { kLower, kFit, kCost };

// Lowering failures keep LowerStep's status; a kernel tiling that does not fit VMEM is the
// misfit-marked status of CheckModuleFits (IsMisfit), and a kernel the chip cannot run (a TPU
// kernel on a GPU) its unmarked error. On failure `*failed` (when given) says which stage.
// `chip` and `topology` must outlive the result; the topology's device count must equal the
// spec's.
absl::StatusOr<StagedStep> PrepareStagedStep(const StepSpec& spec, const Chip& chip,
                                             const Topology& topology, bool adam,
                                             StagedPrepareStage* failed = nullptr);

struct StagedResult {
  double step_seconds = 0;
  double compute_busy = 0;
  double communication_busy = 0;
  double exposed_communication = 0;
  int64_t slowest_device = 0;
  std::array<double, kNumSweepPhases> phase_seconds{};
  std::array<bool, kNumSweepPhases> phase_present{};
  double mfu = 0;
  // HBM per device, bytes.
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double hbm_total = 0;
  double hbm_capacity = 0;
  int64_t device_classes = 0;  // devices simulated (see the file comment)
};

// Caches of the routing-dependent stages, keyed on everything each value depends on, so one
// instance may serve every block of a space (not thread-safe: one per thread).
struct StagedCaches {
  absl::flat_hash_map<std::string, std::shared_ptr<const RoutingMatrix>> matrices;
  // Rows each expert receives from an EP group: (matrix key, ep, dp replica). A node map:
  // evaluations hold pointers to its values while adding others.
  absl::node_hash_map<std::string, std::vector<int64_t>> received;
  absl::flat_hash_map<std::string, GroupedMatmulCost> grouped;
  absl::flat_hash_map<std::string, double> a2a;
  absl::flat_hash_map<std::string, std::pair<std::vector<double>, double>> a2a_by_traffic;
  int64_t grouped_hits = 0, grouped_misses = 0, a2a_hits = 0, a2a_misses = 0;
};

// `routing_key` identifies `routing` in the caches (e.g. its text).
absl::StatusOr<StagedResult> EvaluateStagedRouting(const StagedStep& step,
                                                   const RoutingSpec& routing,
                                                   const std::string& routing_key,
                                                   StagedCaches& caches);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_STAGED_PREDICT_H_
