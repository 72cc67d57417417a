// The model-agnostic step simulator's second stage, Simulate (simulator.h); PrepareModule is
// in prepare.cc, the routed ops' costs in routed.cc.
#include "sim/simulator/simulator.h"

#include <algorithm>
#include <utility>

#include "sim/simulator/prepared.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<Timeline> Simulate(const PreparedModule& prepared, const SimulationRun& run) {
  const PreparedModuleData& data = prepared.data();
  SimulatorCache local_cache;
  SimulatorCache::Impl& cache = run.cache != nullptr ? run.cache->impl() : local_cache.impl();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<const RoutedCosts> costs,
                           RoutedCostsFor(data, run.routing, cache));
  Timeline t;
  t.module = data.module->name();
  t.num_devices = data.num_devices;
  t.simulated_devices = costs->num_devices;
  t.routing = run.routing;
  t.fused = data.fused;
  t.untimed = data.untimed;
  t.unknown_rates = data.unknown_rates;
  t.parameter_bytes = data.parameter_bytes;
  t.peak_buffer_bytes = data.peak_buffer_bytes;
  t.peak_at = data.peak_at;
  PERFSIM_ASSIGN_OR_RETURN(t.schedule, SimulateSchedule(*costs->graph, costs->durations,
                                                        {.every_class = run.detail}));
  t.slowest_device = t.schedule.slowest_device;
  const DeviceSchedule& slowest = t.schedule.device(t.slowest_device);
  t.step_seconds = t.schedule.makespan;
  t.compute_busy = slowest.compute_busy;
  t.communication_busy = slowest.communication_busy;
  t.exposed_communication = slowest.exposed_communication;

  // Each op's figures on the slowest device: routed ops from its routed work.
  const int64_t num_ops = static_cast<int64_t>(data.ops.size());
  auto routed_time = [&](int64_t i) -> const RoutedTime* {
    const int32_t k = data.routed_of[i];
    if (k < 0 || costs->routed[k].work_of_device.empty()) return nullptr;
    return &costs->routed[k];
  };
  for (const RoutedTime& r : costs->routed) {
    if (r.work_of_device.empty()) continue;
    ++t.routed_ops;
    for (const RoutedWork& w : r.work) {
      for (const std::string& rate : w.unknown_rates) {
        if (std::find(t.unknown_rates.begin(), t.unknown_rates.end(), rate) ==
            t.unknown_rates.end()) {
          t.unknown_rates.push_back(rate);
        }
      }
    }
  }
  std::sort(t.unknown_rates.begin(), t.unknown_rates.end());
  if (run.subtotal_of != nullptr) t.subtotals.resize(run.num_subtotals);
  if (run.detail) t.ops.reserve(num_ops);
  for (int64_t i = 0; i < num_ops; ++i) {
    const TimelineOp& op = data.ops[i];
    const RoutedTime* r = routed_time(i);
    const RoutedWork* w = r != nullptr ? &r->work[r->work_of_device[t.slowest_device]] : nullptr;
    const double seconds = w != nullptr ? w->seconds : op.seconds;
    const double flops = w != nullptr ? w->flops : op.flops;
    const double bytes = w != nullptr ? w->bytes : op.bytes;
    bool lower_bound = op.lower_bound;
    if (r != nullptr) {
      for (const RoutedWork& any : r->work) lower_bound = lower_bound || !any.unknown_rates.empty();
    }
    t.serial_seconds += seconds;
    t.flops += flops;
    if (run.subtotal_of != nullptr && (*run.subtotal_of)[i] >= 0) {
      // Busy time of the ops on a stream; the work of every op (a fused interior op's
      // arithmetic and reads happen inside its consumer's kernel).
      Subtotal& total = t.subtotals[(*run.subtotal_of)[i]];
      const bool streamed = op.stream != Stream::kNone;
      total.present = total.present || streamed || lower_bound || flops > 0 || bytes > 0;
      if (streamed) total.seconds += slowest.finish[i] - slowest.start[i];
      total.flops += flops;
      total.bytes += bytes;
    }
    if (!run.detail) continue;
    TimelineOp& out = t.ops.emplace_back(op);
    out.lower_bound = lower_bound;
    if (w == nullptr) continue;
    out.seconds = w->seconds;
    out.flops = w->flops;
    out.bytes = w->bytes;
    out.bound = w->bound;
    out.sent_bytes = w->sent_bytes;
    for (const RoutedWork& any : r->work) {
      out.max_sent_bytes = std::max(out.max_sent_bytes, any.sent_bytes);
    }
    out.device_seconds.reserve(r->work_of_device.size());
    for (int32_t k : r->work_of_device) out.device_seconds.push_back(r->work[k].seconds);
  }
  return t;
}

absl::StatusOr<Timeline> SimulateModule(const Module& module, const Chip& chip,
                                        const Topology& topology,
                                        const SimulatorOptions& options) {
  PERFSIM_ASSIGN_OR_RETURN(PreparedModule prepared,
                           PrepareModule(module, chip, topology, options.num_devices));
  return Simulate(prepared, {.routing = options.routing, .detail = options.every_class});
}

}  // namespace perfsim
