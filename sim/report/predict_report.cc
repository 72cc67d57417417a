#include "sim/report/predict_report.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/routing.h"
#include "sim/predict/choose_scenario.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

std::string Us(double seconds) { return fmt::format("{:.2f}", seconds * 1e6); }

std::string Bytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

std::string Json(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}


}  // namespace

std::string PredictionScenarioLine(const Prediction& p, ScenarioLineStyle style) {
  const StepSpec& s = p.options.spec;
  const bool summary = style == ScenarioLineStyle::kSummary;
  return fmt::format(
      "{} MoE layer, {}, batch {} x seq {} = {} tokens ({} per device), {}{}, {}, "
      "{} {} ({} devices), routing {}",
      s.model.name(), std::string(PhaseName(s.phase)), s.batch, s.seq, s.tokens(),
      s.tokens_per_device(), summary ? "" : "backend ", s.backend,
      summary ? CompactParallelism(s.parallelism) : ParallelismToString(s.parallelism), p.chip,
      p.mesh, p.num_devices, RoutingSpecToString(p.options.routing));
}

std::string FormatPredictionTable(const Prediction& p) {
  std::string out =
      absl::StrCat(PredictionScenarioLine(p, ScenarioLineStyle::kTimeline), "\n\n");
  absl::StrAppend(&out, fmt::format("timeline of device {} (the slowest)\n", p.slowest_device));
  absl::StrAppend(
      &out, fmt::format("{:>10} {:>11}  {:<7} {:<13} {:<12} {:<18} {:<28} {:>9} {:>10} {:>9}\n",
                        "start us", "dur us", "stream", "bound", "stage", "op", "name", "GFLOP",
                        "HBM MB", "net MB"));
  bool lower_bounds = false;
  for (const OpRow& r : p.ops) {
    // '*': the time leaves out work for a rate the chip description lacks (a lower bound).
    lower_bounds = lower_bounds || r.lower_bound;
    const std::string net =
        r.stream == "comm" && r.sent_bytes > 0 ? fmt::format("{:.2f}", r.sent_bytes / 1e6) : "";
    absl::StrAppend(
        &out, fmt::format(
                  "{:>10} {:>10}{:1}  {:<7} {:<13} {:<12} {:<18} {:<28} {:>9.3f} {:>10.2f} {:>9}\n",
                  Us(r.start), Us(r.seconds), r.lower_bound ? "*" : "", r.stream,
                  std::string(BoundName(r.bound)), r.stage, r.opcode, r.name.substr(0, 28),
                  r.flops / 1e9, r.bytes / 1e6, net));
  }
  absl::StrAppend(&out,
                  "HBM MB: bytes the op reads and writes in this device's HBM (after loop "
                  "fusion; a ragged all-to-all: the rows it sends and receives). net MB: "
                  "bytes it sends to other devices (ragged all-to-all).\n");
  if (lower_bounds) {
    absl::StrAppend(&out,
                    "* lower bound: the chip description lacks a rate this op needs "
                    "(see the note below); that part of its work is not timed.\n");
  }
  absl::StrAppend(&out, "\nper phase (busy time on the slowest device, both streams)\n");
  for (const PhaseTotal& t : p.phases) {
    absl::StrAppend(&out, fmt::format("  {:<10} {:>12} us {:>12.3f} GFLOP {:>12.2f} MB\n", t.phase,
                                      Us(t.seconds), t.flops / 1e9, t.bytes / 1e6));
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, fmt::format("step time              {} us\n", Us(p.step_seconds)));
  absl::StrAppend(&out, fmt::format("compute busy           {} us\n", Us(p.compute_busy)));
  absl::StrAppend(&out, fmt::format("communication busy     {} us\n", Us(p.communication_busy)));
  absl::StrAppend(
      &out, fmt::format("exposed communication  {} us ({:.1f}% of the step)\n",
                        Us(p.exposed_communication),
                        p.step_seconds > 0 ? 100 * p.exposed_communication / p.step_seconds : 0));
  if (p.peak_flops_per_device > 0) {
    absl::StrAppend(
        &out,
        fmt::format("MFU                    {:.1f}% ({:.4f} TFLOP model flops per "
                    "device, peak {:.1f} TFLOP/s per device)\n",
                    100 * p.mfu, p.model_flops_per_device / 1e12, p.peak_flops_per_device / 1e12));
  } else {
    absl::StrAppend(&out,
                    "MFU                    n/a (the chip description has no matrix peak "
                    "for the model's dtype)\n");
  }
  const MemoryUse& m = p.memory;
  absl::StrAppend(&out,
                  fmt::format("HBM per device         {} of {} ({}): parameters {}, gradients {}, "
                              "optimizer {}, activations and buffers {}\n",
                              Bytes(m.total), Bytes(m.capacity), m.fits ? "fits" : "OVER CAPACITY",
                              Bytes(m.parameters), Bytes(m.gradients), Bytes(m.optimizer),
                              Bytes(m.activations)));
  if (!p.unknown_rates.empty()) {
    absl::StrAppend(&out, "note: the chip description lacks ");
    for (size_t i = 0; i < p.unknown_rates.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", p.unknown_rates[i]);
    }
    absl::StrAppend(&out, "; work needing them is not timed (times are lower bounds)\n");
  }
  return out;
}

report::PredictReport PredictionReport(const Prediction& p) {
  report::PredictReport r;
  const StepSpec& s = p.options.spec;
  report::PredictScenario& scenario = *r.mutable_scenario();
  scenario.set_model(s.model.name());
  scenario.set_phase(std::string(PhaseName(s.phase)));
  scenario.set_batch(s.batch);
  scenario.set_seq(s.seq);
  scenario.set_backend(s.backend);
  scenario.set_parallelism(ParallelismToString(s.parallelism));
  scenario.set_hw(p.chip);
  scenario.set_mesh(p.mesh);
  scenario.set_devices(p.num_devices);
  scenario.set_routing(RoutingSpecToString(p.options.routing));
  r.set_step_seconds(p.step_seconds);
  r.set_slowest_device(p.slowest_device);
  r.set_compute_busy_seconds(p.compute_busy);
  r.set_communication_busy_seconds(p.communication_busy);
  r.set_exposed_communication_seconds(p.exposed_communication);
  r.set_mfu(p.mfu);
  r.set_model_flops_per_device(p.model_flops_per_device);
  r.set_peak_flops_per_device(p.peak_flops_per_device);
  for (const PhaseTotal& t : p.phases) {
    report::PredictPhase& phase = *r.add_phases();
    phase.set_phase(t.phase);
    phase.set_seconds(t.seconds);
    phase.set_flops(t.flops);
    phase.set_bytes(t.bytes);
  }
  const MemoryUse& m = p.memory;
  report::PredictMemory& memory = *r.mutable_memory();
  memory.set_parameters(m.parameters);
  memory.set_gradients(m.gradients);
  memory.set_optimizer(m.optimizer);
  memory.set_activations(m.activations);
  memory.set_total(m.total);
  memory.set_capacity(m.capacity);
  memory.set_fits(m.fits);
  for (const OpRow& row : p.ops) {
    report::PredictOp& op = *r.add_ops();
    op.set_name(row.name);
    op.set_opcode(row.opcode);
    op.set_stage(row.stage);
    op.set_phase(row.phase);
    op.set_stream(row.stream);
    op.set_start(row.start);
    op.set_seconds(row.seconds);
    op.set_bound(std::string(BoundName(row.bound)));
    op.set_flops(row.flops);
    op.set_bytes(row.bytes);
    op.set_sent_bytes(row.sent_bytes);
    op.set_max_sent_bytes(row.max_sent_bytes);
    op.set_lower_bound(row.lower_bound);
  }
  for (const std::string& rate : p.unknown_rates) r.add_unknown_rates(rate);
  return r;
}

std::string PredictionJson(const Prediction& p) { return ReportJson(PredictionReport(p)); }

absl::StatusOr<TraceDevices> ParseTraceDevices(absl::string_view text, int64_t num_devices) {
  TraceDevices devices;
  if (text == "all") {
    devices.all = true;
    return devices;
  }
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace-devices: expected all, or device ids and ranges in [0, ", num_devices,
                     ") such as 0,7,100-103; got '", what, "'"));
  };
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(part, absl::MaxSplits('-', 1));
    int64_t first = 0, last = 0;
    if (!absl::SimpleAtoi(ends[0], &first)) return bad(part);
    last = first;
    if (ends.size() == 2 && !absl::SimpleAtoi(ends[1], &last)) return bad(part);
    if (first < 0 || last >= num_devices || first > last) return bad(part);
    for (int64_t d = first; d <= last; ++d) devices.ids.push_back(d);
  }
  return devices;
}

std::string PredictionTrace(const Prediction& p, const TraceDevices& which) {
  // Device d runs the timeline of simulated device d % n (predict.h).
  const int64_t n = p.schedule.num_devices();
  std::set<int64_t> devices(which.ids.begin(), which.ids.end());
  if (which.all) {
    for (int64_t d = 0; d < p.num_devices; ++d) devices.insert(d);
  } else if (devices.empty()) {
    // The default sample: the slowest device, device 0, and up to max_devices in all spread
    // evenly over the simulated devices.
    const int max_devices = which.max_devices;
    devices = {p.slowest_device, 0};
    for (int64_t k = 0; static_cast<int64_t>(devices.size()) < std::min<int64_t>(max_devices, n);
         ++k) {
      devices.insert(k * n / std::max(1, max_devices - 1) % n);
      if (k > 4 * max_devices) break;
    }
  }
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  bool first = true;
  auto event = [&](const std::string& text) {
    absl::StrAppend(&out, first ? "\n  " : ",\n  ", text);
    first = false;
  };
  for (int64_t d : devices) {
    event(
        fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": "
                    "{{\"name\": \"device {}{}\"}}}}",
                    d, d, d == p.slowest_device ? " (slowest)" : ""));
    event(
        fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": 0, "
                    "\"args\": {{\"name\": \"compute\"}}}}",
                    d));
    event(
        fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": 1, "
                    "\"args\": {{\"name\": \"comm\"}}}}",
                    d));
    if (n == 0) break;
    const DeviceSchedule& ds = p.schedule.device(d % n);
    for (int64_t i : p.schedule.order) {
      const OpRow& info = p.op_info[i];
      const double dur = ds.finish[i] - ds.start[i];
      if (dur <= 0) continue;
      event(fmt::format(
          "{{\"ph\": \"X\", \"name\": {}, \"cat\": {}, \"pid\": {}, \"tid\": {}, "
          "\"ts\": {:.4f}, \"dur\": {:.4f}, \"args\": {{\"opcode\": {}, \"bound\": {}}}}}",
          Json(info.name), Json(info.phase), d, info.stream == "comm" ? 1 : 0, ds.start[i] * 1e6,
          dur * 1e6, Json(info.opcode), Json(BoundName(info.bound))));
    }
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

}  // namespace perfsim
