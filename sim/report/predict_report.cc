#include "sim/report/predict_report.h"

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/routing.h"

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

std::string Num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string Scenario(const Prediction& p) {
  const StepSpec& s = p.options.spec;
  return fmt::format(
      "{} MoE layer, {}, batch {} x seq {} = {} tokens ({} per device), backend {}, {}, "
      "{} {} ({} devices), routing {}",
      s.model.name(), std::string(PhaseName(s.phase)), s.batch, s.seq, s.tokens(), s.tokens_per_device(),
      s.backend, ParallelismToString(s.parallelism), p.chip, p.mesh, p.num_devices,
      RoutingSpecToString(p.options.routing));
}

}  // namespace

std::string FormatPredictionTable(const Prediction& p) {
  std::string out = absl::StrCat(Scenario(p), "\n\n");
  absl::StrAppend(&out, fmt::format("timeline of device {} (the slowest)\n", p.slowest_device));
  absl::StrAppend(&out, fmt::format("{:>10} {:>10}  {:<7} {:<13} {:<12} {:<18} {:<28} {:>9} {:>10}\n",
                                    "start us", "dur us", "stream", "bound", "stage", "op",
                                    "name", "GFLOP", "MB"));
  for (const OpRow& r : p.ops) {
    absl::StrAppend(&out, fmt::format("{:>10} {:>10}  {:<7} {:<13} {:<12} {:<18} {:<28} {:>9.3f} {:>10.2f}\n",
                                      Us(r.start), Us(r.seconds), r.stream, std::string(BoundName(r.bound)),
                                      r.stage, r.opcode, r.name.substr(0, 28), r.flops / 1e9,
                                      r.bytes / 1e6));
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
  absl::StrAppend(&out, fmt::format("exposed communication  {} us ({:.1f}% of the step)\n",
                                    Us(p.exposed_communication),
                                    p.step_seconds > 0 ? 100 * p.exposed_communication / p.step_seconds : 0));
  if (p.peak_flops_per_device > 0) {
    absl::StrAppend(&out, fmt::format("MFU                    {:.1f}% ({:.4f} TFLOP model flops per "
                                      "device, peak {:.1f} TFLOP/s per device)\n",
                                      100 * p.mfu, p.model_flops_per_device / 1e12,
                                      p.peak_flops_per_device / 1e12));
  } else {
    absl::StrAppend(&out, "MFU                    n/a (the chip description has no matrix peak "
                          "for the model's dtype)\n");
  }
  const MemoryUse& m = p.memory;
  absl::StrAppend(&out, fmt::format("HBM per device         {} of {} ({}): parameters {}, gradients {}, "
                                    "optimizer {}, activations and buffers {}\n",
                                    Bytes(m.total), Bytes(m.capacity),
                                    m.fits ? "fits" : "OVER CAPACITY", Bytes(m.parameters),
                                    Bytes(m.gradients), Bytes(m.optimizer), Bytes(m.activations)));
  if (!p.unknown_rates.empty()) {
    absl::StrAppend(&out, "note: the chip description lacks ");
    for (size_t i = 0; i < p.unknown_rates.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", p.unknown_rates[i]);
    }
    absl::StrAppend(&out, "; work needing them is not timed (times are lower bounds)\n");
  }
  return out;
}

std::string PredictionJson(const Prediction& p) {
  const StepSpec& s = p.options.spec;
  std::string out = "{\"scenario\": {";
  absl::StrAppend(&out, "\"model\": ", Json(s.model.name()), ", \"phase\": ", Json(PhaseName(s.phase)),
                  ", \"batch\": ", s.batch, ", \"seq\": ", s.seq, ", \"backend\": ",
                  Json(s.backend), ", \"parallelism\": ", Json(ParallelismToString(s.parallelism)),
                  ", \"hw\": ", Json(p.chip), ", \"mesh\": ", Json(p.mesh), ", \"devices\": ",
                  p.num_devices, ", \"routing\": ", Json(RoutingSpecToString(p.options.routing)),
                  "},\n");
  absl::StrAppend(&out, "\"step_seconds\": ", Num(p.step_seconds), ", \"slowest_device\": ",
                  p.slowest_device, ", \"compute_busy_seconds\": ", Num(p.compute_busy),
                  ", \"communication_busy_seconds\": ", Num(p.communication_busy),
                  ", \"exposed_communication_seconds\": ", Num(p.exposed_communication),
                  ", \"mfu\": ", Num(p.mfu), ", \"model_flops_per_device\": ",
                  Num(p.model_flops_per_device), ", \"peak_flops_per_device\": ",
                  Num(p.peak_flops_per_device), ",\n\"phases\": [");
  for (size_t i = 0; i < p.phases.size(); ++i) {
    const PhaseTotal& t = p.phases[i];
    absl::StrAppend(&out, i ? ", " : "", "{\"phase\": ", Json(t.phase), ", \"seconds\": ",
                    Num(t.seconds), ", \"flops\": ", Num(t.flops), ", \"bytes\": ", Num(t.bytes),
                    "}");
  }
  const MemoryUse& m = p.memory;
  absl::StrAppend(&out, "],\n\"memory\": {\"parameters\": ", Num(m.parameters),
                  ", \"gradients\": ", Num(m.gradients), ", \"optimizer\": ", Num(m.optimizer),
                  ", \"activations\": ", Num(m.activations), ", \"total\": ", Num(m.total),
                  ", \"capacity\": ", Num(m.capacity), ", \"fits\": ", m.fits ? "true" : "false",
                  "},\n\"ops\": [");
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const OpRow& r = p.ops[i];
    absl::StrAppend(&out, i ? ",\n  " : "\n  ", "{\"name\": ", Json(r.name), ", \"opcode\": ",
                    Json(r.opcode), ", \"stage\": ", Json(r.stage), ", \"phase\": ",
                    Json(r.phase), ", \"stream\": ", Json(r.stream), ", \"start\": ",
                    Num(r.start), ", \"seconds\": ", Num(r.seconds), ", \"bound\": ",
                    Json(BoundName(r.bound)), ", \"flops\": ", Num(r.flops), ", \"bytes\": ",
                    Num(r.bytes), "}");
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

std::string PredictionTrace(const Prediction& p, int max_devices) {
  std::set<int64_t> devices = {p.slowest_device, 0};
  // Simulated devices (one data-parallel replica when the replicas are identical, predict.h).
  const int64_t n = static_cast<int64_t>(p.schedule.devices.size());
  for (int64_t k = 0; static_cast<int64_t>(devices.size()) < std::min<int64_t>(max_devices, n); ++k) {
    devices.insert(k * n / std::max(1, max_devices - 1) % n);
    if (k > 4 * max_devices) break;
  }
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  bool first = true;
  auto event = [&](const std::string& text) {
    absl::StrAppend(&out, first ? "\n  " : ",\n  ", text);
    first = false;
  };
  for (int64_t d : devices) {
    event(fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": \"device {}{}\"}}}}",
                      d, d, d == p.slowest_device ? " (slowest)" : ""));
    event(fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": \"compute\"}}}}", d));
    event(fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": 1, \"args\": {{\"name\": \"comm\"}}}}", d));
    const DeviceSchedule& ds = p.schedule.devices[d];
    for (int64_t i : p.schedule.order) {
      const OpRow& info = p.op_info[i];
      const double dur = ds.finish[i] - ds.start[i];
      if (dur <= 0) continue;
      event(fmt::format("{{\"ph\": \"X\", \"name\": {}, \"cat\": {}, \"pid\": {}, \"tid\": {}, "
                        "\"ts\": {:.4f}, \"dur\": {:.4f}, \"args\": {{\"opcode\": {}, \"bound\": {}}}}}",
                        Json(info.name), Json(info.phase), d, info.stream == "comm" ? 1 : 0,
                        ds.start[i] * 1e6, dur * 1e6, Json(info.opcode), Json(BoundName(info.bound))));
    }
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

}  // namespace perfsim
