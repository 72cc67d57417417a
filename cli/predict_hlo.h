// `perfsim predict --hlo FILE`: a real XLA module's step on a chip and slice, through the
// model-agnostic simulator (sim/simulator/simulator.h), reported as `perfsim predict` reports
// its own lowering (sim/report/predict_report.h: the same table, JSON keys and trace).
//
//   PERFSIM_ASSIGN_OR_RETURN(HloSimulation s, SimulateHlo(module, chip, topology, routing));
//   PERFSIM_ASSIGN_OR_RETURN(Prediction p, PredictionFromTimeline(module,
//                            std::move(s.timeline), s.phases, chip, topology));
//   io.out << PredictionJson(p);
//
// The report's parts for a module with no model behind it:
//   scenario  model = the module's name, backend "hlo"; phase, batch, seq and parallelism are
//             empty (the JSON's scenario has them as "" and 0); routing is --routing's
//             (default uniform) when the module's annotations say what its ragged sizes hold
//             (a module `perfsim lower` printed: simulator.h step 6), else empty;
//   phases    per-op_name subtotals: the first path component of the op's metadata op_name
//             after JAX's outer "jit(NAME)/" (HloPhaseOf), e.g. "jvp()" (the forward) and
//             "transpose(jvp())" (the backward) of a jax.grad module; "other" without one;
//             in the order of their first op;
//   ops       the slowest device's ops that take time or are not fully timed, by start; the
//             stage column is the phase; lower_bound marks untimed work (simulator.h);
//   MFU       from the FLOP the module executes (every op, loops times their trips) over the
//             chip's bf16 matrix peak per device (f32 when every matrix op is f32);
//   memory    parameters = the entry parameters; activations = the liveness peak of the other
//             buffers (constants included); no gradients or optimizer state are assumed.
#ifndef PERFSIM_CLI_PREDICT_HLO_H_
#define PERFSIM_CLI_PREDICT_HLO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/cli.h"
#include "cli/flags.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/predict/predict.h"
#include "sim/simulator/simulator.h"

namespace perfsim {

// "jit(f)/jvp(layer)/dot_general" -> "jvp(layer)"; "jit(f)/sort" -> "jit(f)"; "add" or "" ->
// "other". Components are split at '/' outside parentheses; the last one (the primitive) is
// dropped.
std::string HloPhaseOf(absl::string_view op_name);

// Each op's phase (HloPhaseOf its op_name): the distinct names in the order of their first op.
struct HloPhases {
  std::vector<std::string> names;
  std::vector<int32_t> of;         // per op: its index in names
  std::vector<std::string> stage;  // per op: its phase's name (the rows' stage column)
  int32_t count() const { return static_cast<int32_t>(names.size()); }
};
HloPhases HloPhasesOf(const PreparedModule& prepared);

// PrepareModule, HloPhasesOf and Simulate with those phases as subtotals: what predict --hlo
// runs before its report (the module, chip and topology must outlive the result).
struct HloSimulation {
  HloPhases phases;
  Timeline timeline;
};
absl::StatusOr<HloSimulation> SimulateHlo(const Module& module, const Chip& chip,
                                          const Topology& topology, const RoutingSpec& routing);

// The report's Prediction of a module simulated with `phases` as its subtotals (the parts
// listed above; ReportTimeline, sim/predict/predict.h). Its options hold predict's embedded
// default scenario as a stand-in: a Prediction cannot be without one; the callers replace the
// scenario line and the JSON scenario. Fails only if that default does.
absl::StatusOr<Prediction> PredictionFromTimeline(const Module& module, Timeline timeline,
                                                  const HloPhases& phases, const Chip& chip,
                                                  const Topology& topology);

// The --hlo branch of RunPredictCommand, with its flags already parsed.
int RunPredictHlo(const ParsedFlags& flags, CliIo& io);

}  // namespace perfsim

#endif  // PERFSIM_CLI_PREDICT_HLO_H_
