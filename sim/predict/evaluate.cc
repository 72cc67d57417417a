// PredictWithRouting and Predict (predict.h): the routing-dependent stage, the simulator's
// Simulate on the prepared module and the report of its timeline.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/predict/predict.h"
#include "sim/predict/predict_internal.h"
#include "sim/util/status.h"

namespace perfsim {

PredictCache::PredictCache() : impl_(std::make_unique<Impl>()) {}
PredictCache::~PredictCache() = default;
PredictCache::Stats PredictCache::stats() const { return impl_->simulator.stats(); }

void ReportTimeline(Timeline t, const std::vector<std::string>& phase_names,
                    const std::vector<int32_t>& phase_of, const std::vector<std::string>& stage_of,
                    Prediction& p) {
  p.slowest_device = t.slowest_device;
  p.step_seconds = t.step_seconds;
  p.compute_busy = t.compute_busy;
  p.communication_busy = t.communication_busy;
  p.exposed_communication = t.exposed_communication;
  p.unknown_rates = t.unknown_rates;
  for (size_t k = 0; k < t.subtotals.size() && k < phase_names.size(); ++k) {
    const Subtotal& s = t.subtotals[k];
    if (!s.present) continue;
    p.phases.push_back(PhaseTotal{
        .phase = phase_names[k], .seconds = s.seconds, .flops = s.flops, .bytes = s.bytes});
  }
  if (t.ops.empty()) return;
  // Every op's row (op_info, in schedule index order), and the slowest device's timeline: the
  // ops that take time or are not fully timed, by start (ties in index order).
  const DeviceSchedule& slowest = t.schedule.device(t.slowest_device);
  p.op_info.reserve(t.ops.size());
  std::vector<int64_t> shown;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TimelineOp& op = t.ops[i];
    OpRow& row = p.op_info.emplace_back();
    row.name = op.name;
    row.opcode = op.opcode;
    row.stage = stage_of[i];
    const int32_t k = phase_of[i];
    row.phase = k >= 0 ? phase_names[k] : "other";
    row.stream = op.stream == Stream::kCommunication ? "comm" : "compute";
    row.seconds = op.seconds;
    row.bound = op.bound;
    row.flops = op.flops;
    row.bytes = op.bytes;
    row.sent_bytes = op.sent_bytes;
    row.max_sent_bytes = op.max_sent_bytes;
    row.lower_bound = op.lower_bound;
    if (op.stream != Stream::kNone || op.lower_bound) shown.push_back(static_cast<int64_t>(i));
  }
  std::stable_sort(shown.begin(), shown.end(), [&](int64_t a, int64_t b) {
    return slowest.start[a] < slowest.start[b];
  });
  p.ops.reserve(shown.size());
  for (int64_t i : shown) {
    OpRow& row = p.ops.emplace_back(p.op_info[i]);
    row.start = slowest.start[i];
    row.seconds = slowest.finish[i] - slowest.start[i];
  }
  p.schedule = std::move(t.schedule);
}

absl::StatusOr<Prediction> PredictWithRouting(const PreparedStep& prepared,
                                              const RoutingSpec& routing_spec,
                                              const EvaluateOptions& options) {
  const PreparedStepData& data = prepared.data();
  const StepSpec& spec = data.options.spec;
  PredictCache local_cache;
  PredictCache& cache = options.cache != nullptr ? *options.cache : local_cache;
  PERFSIM_ASSIGN_OR_RETURN(Timeline t,
                           Simulate(data.simulation, {.routing = routing_spec,
                                                      .detail = options.detail,
                                                      .subtotal_of = &data.phase,
                                                      .num_subtotals = kNumPredictPhases,
                                                      .cache = &cache.impl().simulator}));
  Prediction result{.options = data.options};
  result.options.routing = routing_spec;
  result.chip = data.chip->name();
  result.mesh = data.mesh;
  result.num_devices = spec.num_devices();
  static const std::vector<std::string>* phase_names =
      new std::vector<std::string>(std::begin(kPredictPhaseNames), std::end(kPredictPhaseNames));
  ReportTimeline(std::move(t), *phase_names, data.phase, data.stage, result);

  result.model_flops_per_device = data.model_flops_per_device;
  result.peak_flops_per_device = data.peak_flops_per_device;
  if (result.peak_flops_per_device > 0 && result.step_seconds > 0) {
    result.mfu =
        result.model_flops_per_device / (result.step_seconds * result.peak_flops_per_device);
  }

  // HBM: the static terms by the parameters' roles, and the peak of the other live buffers
  // (the simulator's, from the interpreter's memory plan).
  MemoryUse& mem = result.memory;
  mem.parameters = data.parameters;
  mem.gradients = data.gradients;
  mem.optimizer = data.optimizer;
  mem.activations = data.input_activations + static_cast<double>(t.peak_buffer_bytes);
  mem.total = mem.parameters + mem.gradients + mem.optimizer + mem.activations;
  mem.capacity = data.capacity;
  mem.fits = mem.total <= mem.capacity;

  // Never output a number that is not one: each op's time is checked as it is costed, so a
  // non-finite total means sums past the range of a double, from sizes or rates the input set.
  for (const auto& [what, value] :
       {std::pair<const char*, double>{"step time", result.step_seconds},
        {"HBM per device", result.memory.total},
        {"model flops per device", result.model_flops_per_device}}) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "predict: expected a finite ", what, "; got ", value,
          " (the scenario's sizes or the chip's rates are out of range)"));
    }
  }
  return result;
}

absl::StatusOr<Prediction> Predict(const PredictOptions& options) {
  PERFSIM_ASSIGN_OR_RETURN(PreparedStep step, PrepareStep(options));
  return PredictWithRouting(step, options.routing);
}

}  // namespace perfsim
