// Pipeline-parallel schedules (issue 13): which forward and backward a pipeline device runs
// when, for GPipe, 1F1B, Megatron's interleaved 1F1B and DeepSeek-V3's DualPipe, and the bubble
// they leave.
//
// Needs: a PipelineSpec (p stages = devices, m micro-batches, v model chunks per device, the
// schedule) and PipelineStageCosts (per model chunk, the seconds of one micro-batch's forward
// and backward through it, and the seconds of one activation or gradient send between
// consecutive chunks). The model is cut into p*v chunks; chunk c runs on device c % p, as
// Megatron places virtual stages (chunk c = vp_stage * p + rank; see pipeline_schedule.cc).
//
// DualPipe (v = 1) is bidirectional: the model is cut into p chunks and every device holds two
// of them, chunk r and its mirror p-1-r (two copies of the model over the pipeline, "2x
// parameters"). Micro-batches 0 .. m/2-1 enter at device 0 and run chunk c on device c;
// micro-batches m/2 .. m-1 enter at device p-1 and run chunk c on device p-1-c. Its order
// splits some backwards zero-bubble style: a backward with weight_deferred computes the input
// gradient only, and a later kWeight task of the same (chunk, micro-batch) computes the weight
// gradient (PipelineStageCosts::weight_seconds; without them the split is not modelled: the
// backward is whole and the kWeight task takes 0 s). What DualPipe overlaps inside a device (one
// chunk's forward with another's backward, to hide expert-parallel all-to-all) is not modelled:
// the device runs them one after the other, so its "F&B" is F + B here.
//
// Returns: a PipelineTimeline, every task (device, chunk, micro-batch, forward/backward, start
// and end in seconds) per device in the device's order, the step time (the last end), each
// device's busy seconds and bubble fraction 1 - busy / step, and each device's peak number of
// (chunk, micro-batch) activations held between a forward and its backward.
//
// The ORDER of tasks on a device is the schedule's; the TIMES come from an event simulation: a
// device runs its tasks one at a time in that order, each as soon as the device is free and
// its input has arrived (a forward needs the previous chunk's forward of the same micro-batch
// plus send_seconds; a backward needs the next chunk's backward plus send_seconds and its own
// forward; a weight task needs its own input-gradient backward). Optimizer, data-parallel
// reductions and overlap of sends with compute are not modelled here: a send delays its
// receiver by send_seconds and occupies no device.
//
// Example (p = 2, m = 2, 1F1B, forward 1 s and backward 2 s per stage, no send time):
//
//   PipelineSpec spec{.stages = 2, .microbatches = 2, .kind = PipelineScheduleKind::kOneFOneB};
//   PERFSIM_ASSIGN_OR_RETURN(PipelineTimeline t,
//                            SimulatePipeline(spec, PipelineStageCosts::Uniform(spec, 1, 2, 0)));
//   t.step_seconds;                 // 9 = (m + p - 1) * (1 + 2)
//   t.bubble_fraction[0];           // 1/3 = AnalyticBubbleFraction(spec) = (p-1)/(m+p-1)
//   t.device_tasks[1][0];           // device 1's first task: F chunk 1 mb 0, [1, 2)
#ifndef PERFSIM_SIM_STEP_PIPELINE_SCHEDULE_H_
#define PERFSIM_SIM_STEP_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfsim {

enum class PipelineScheduleKind {
  kGpipe,                // all forwards, then all backwards (fill, drain)
  kOneFOneB,             // PipeDream-flush / Megatron's non-interleaved 1F1B
  kInterleavedOneFOneB,  // Megatron's interleaved 1F1B over v chunks per device
  kDualPipe,             // DeepSeek-V3's bidirectional schedule (deepseek-ai/DualPipe)
};

// "gpipe", "1f1b", "interleaved_1f1b", "dualpipe": the flag spellings.
absl::string_view PipelineScheduleKindName(PipelineScheduleKind kind);
// The inverse of PipelineScheduleKindName; InvalidArgument naming the accepted spellings.
absl::StatusOr<PipelineScheduleKind> ParsePipelineScheduleKind(absl::string_view name);

struct PipelineSpec {
  int64_t stages = 1;          // p: pipeline devices
  int64_t microbatches = 1;    // m: micro-batches per step
  int64_t virtual_stages = 1;  // v: model chunks per device; 1 = not interleaved
  PipelineScheduleKind kind = PipelineScheduleKind::kOneFOneB;

  int64_t num_chunks() const { return stages * virtual_stages; }
  // Every problem at once, each naming the numbers: p, m, v >= 1; v > 1 only with
  // interleaved_1f1b; interleaved_1f1b needs p >= 2 and m a multiple of p (Megatron's rules);
  // dualpipe needs p even and m even and >= 2p (dualpipe.py's asserts).
  absl::Status Validate() const;
};

struct PipelineStageCosts {
  // Per model chunk c in [0, p*v): one micro-batch's forward / backward through chunk c.
  std::vector<double> forward_seconds;
  std::vector<double> backward_seconds;
  // One activation (forward) or gradient (backward) send between chunks c and c + 1.
  double send_seconds = 0;
  // Optional, per chunk: the part of backward_seconds[c] that computes weight gradients (W in
  // the zero-bubble papers), <= backward_seconds[c]. Only DualPipe splits it off (a backward
  // with weight_deferred then takes backward - weight, its kWeight task weight). Empty: 0.
  std::vector<double> weight_seconds;

  // Every chunk costs the same. forward/backward are per CHUNK (a device's share of a
  // micro-batch is v times that).
  static PipelineStageCosts Uniform(const PipelineSpec& spec, double forward_seconds,
                                    double backward_seconds, double send_seconds);
};

// kWeight: the weight-gradient half of a split backward (DualPipe only).
enum class PipelinePass { kForward, kBackward, kWeight };

struct PipelineTask {
  int64_t device = 0;
  int64_t chunk = 0;  // global chunk index in [0, p*v)
  int64_t microbatch = 0;
  PipelinePass pass = PipelinePass::kForward;
  // kBackward only: the weight gradient is left to a later kWeight task, so this task computes
  // the input gradient alone (DualPipe's zero-bubble backwards).
  bool weight_deferred = false;
  double start_seconds = 0;
  double end_seconds = 0;
};

struct PipelineTimeline {
  // Per device, its tasks in the schedule's order (2 * m * v each, plus DualPipe's kWeight
  // tasks, one per weight_deferred backward).
  std::vector<std::vector<PipelineTask>> device_tasks;
  double step_seconds = 0;              // the last task's end
  std::vector<double> busy_seconds;     // per device: sum of its task durations
  std::vector<double> bubble_fraction;  // per device: 1 - busy / step (0 when step is 0)
  double max_bubble_fraction = 0;
  double mean_bubble_fraction = 0;
  // Per device: the most (chunk, micro-batch) forwards done whose backward is not, i.e. how
  // many chunk activations the device holds at its peak (1F1B: min(p - rank, m); GPipe: m;
  // DualPipe: p + 1 on every device). A kWeight task does not change the count.
  std::vector<int64_t> max_in_flight;
};

// The schedule's order of tasks per device, times left 0. `spec` must be valid.
std::vector<std::vector<PipelineTask>> PipelineOrder(const PipelineSpec& spec);

// Validates both inputs (every problem at once) and simulates one step.
absl::StatusOr<PipelineTimeline> SimulatePipeline(const PipelineSpec& spec,
                                                  const PipelineStageCosts& costs);

// The bubble fraction of a uniform pipeline (every chunk the same cost, no send time):
// (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v*m+p-1) for interleaved 1F1B (derivations in
// pipeline_schedule.cc), whatever f/b. DualPipe's depends on f, b and w: this overload takes
// b = 2f and w = 0 for it (see the next). `spec` must be valid.
double AnalyticBubbleFraction(const PipelineSpec& spec);
// The same for chunk costs f (forward), b (whole backward) and w (its weight part, 0 <= w <= b).
// DualPipe: every device idles (p/2 - 1)(f + 2b - 3w) of a step whose work is m(f + b), the
// DualPipe README's (PP/2-1)(F&B+B-3W) with F&B = f + b (no intra-device overlap); the fraction
// is idle / (idle + m(f+b)). The others ignore f, b, w.
double AnalyticBubbleFraction(const PipelineSpec& spec, double forward_seconds,
                              double backward_seconds, double weight_seconds);

}  // namespace perfsim

#endif  // PERFSIM_SIM_STEP_PIPELINE_SCHEDULE_H_
