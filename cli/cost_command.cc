// `perfsim cost FILE.hlo --hw NAME`: per-instruction flops, bytes and time of a module.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "sim/cost/module_cost.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

constexpr char kCostUsage[] =
    R"(usage: perfsim cost FILE.hlo --hw NAME [--xla-compatible] [--devices N] [--format=table|json]

Costs every instruction of the module's entry computation on one device of chip NAME (a
built-in chip, see 'perfsim hw list', or a .textproto): flops, transcendentals, bytes read per
operand and written, time, and what bounds the time (compute, memory, communication,
overhead). A fusion, call, while or conditional is one row that includes what it calls.

  --hw NAME          chip to time on (required)
  --xla-compatible   count as XLA's HloCostAnalysis does (what JAX's cost_analysis() returns),
                     quirks included; default: the true cost (see sim/cost/op_counts.h)
  --devices N        devices the module runs on (collective groups and the slice they are
                     timed on); default: the module's replica_count x num_partitions, or the
                     largest device id its collectives name, plus one
  --format=json      machine-readable output (CostReport in proto/report.proto)

Times are per op, run one after another (no overlap). Work that needs a rate the chip
description lacks (0 in its textproto) is not timed; such rows are marked '*'.
FILE may be '-' for standard input.
)";

// Integral counts print as integers, others in the shortest exact form.
std::string Count(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value)) && std::abs(value) < 1e18) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return FormatDouble(value);
}

// "0", "0.0246 ns", "34.1 ns", "1.00 us", "3.412 ms", "1.250 s"; "n/a" when not timed.
std::string SecondsCell(const std::optional<double>& seconds) {
  if (!seconds.has_value()) return "n/a";
  const double s = *seconds;
  if (s == 0) return "0";
  if (s < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.2f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

// XLA's per-operand entries of the instruction's own operands (the list can be longer, see
// OpCounts::operand_bytes).
std::vector<double> OwnOperandBytes(const Instruction& instruction, const OpCounts& counts) {
  std::vector<double> out(counts.operand_bytes.begin(), counts.operand_bytes.end());
  out.resize(instruction.operand_count(), 0.0);
  return out;
}

report::CostReport CostReportOf(const Module& module, const Chip& chip, CostMode mode,
                                const ModuleCost& cost) {
  report::CostReport r;
  r.set_module(module.name());
  r.set_hw(chip.name());
  r.set_mode(std::string(CostModeName(mode)));
  r.set_devices(cost.num_devices);
  *r.mutable_topology() = StringOrNull(cost.topology);
  for (const InstructionCost& row : cost.instructions) {
    const Instruction& instruction = *row.instruction;
    const OpCost& c = row.cost;
    report::CostInstruction& out = *r.add_instructions();
    out.set_name(instruction.name());
    out.set_opcode(std::string(OpcodeSpelling(instruction.opcode())));
    out.set_flops(c.counts.flops);
    out.set_transcendentals(c.counts.transcendentals);
    out.set_bytes_accessed(c.counts.bytes_accessed);
    for (double bytes : OwnOperandBytes(instruction, c.counts)) {
      out.add_operand_bytes_accessed(bytes);
    }
    out.set_output_bytes_accessed(c.counts.output_bytes);
    *out.mutable_seconds() = NumberOrNull(c.seconds);
    out.set_bound(std::string(BoundName(c.bound)));
    out.set_compute_seconds(c.compute_seconds);
    out.set_memory_seconds(c.memory_seconds);
    out.set_communication_seconds(c.communication_seconds);
    out.set_overhead_seconds(c.overhead_seconds);
    for (const std::string& rate : c.unknown_rates) out.add_unknown_rates(rate);
  }
  report::CostTotals& totals = *r.mutable_totals();
  totals.set_flops(cost.totals.flops);
  totals.set_transcendentals(cost.totals.transcendentals);
  totals.set_bytes_accessed(cost.totals.bytes_accessed);
  totals.set_seconds(cost.seconds);
  totals.set_untimed_instructions(cost.untimed_instructions);
  for (const std::string& rate : cost.unknown_rates) r.add_unknown_rates(rate);
  return r;
}

void PrintTable(const Module& module, const Chip& chip, CostMode mode, const ModuleCost& cost,
                std::ostream& out) {
  out << fmt::format("module {} on {} ({} counts), {} device{}{}\n", module.name(), chip.name(),
                     std::string(CostModeName(mode)), cost.num_devices, cost.num_devices == 1 ? "" : "s",
                     cost.topology.empty() ? "" : ", collectives on " + cost.topology);
  size_t width = 4;
  for (const InstructionCost& row : cost.instructions) {
    width = std::max(width, row.instruction->name().size());
  }
  width = std::min<size_t>(width, 40);
  const std::string row_format =
      absl::StrCat("{:<", width, "} {:<18} {:>14} {:>10} {:>14} {:>13}  {}\n");
  out << fmt::format(fmt::runtime(row_format), "name", "opcode", "flops", "transc.", "bytes",
                     "time", "bound");
  bool marked = false;
  for (const InstructionCost& row : cost.instructions) {
    const OpCost& c = row.cost;
    std::string name = row.instruction->name();
    if (name.size() > width) name = name.substr(0, width - 1) + "~";
    std::string bound(BoundName(c.bound));
    if (!c.unknown_rates.empty()) {
      bound += "*";
      marked = true;
    }
    out << fmt::format(fmt::runtime(row_format), name,
                       std::string(OpcodeSpelling(row.instruction->opcode())),
                       Count(c.counts.flops), Count(c.counts.transcendentals),
                       Count(c.counts.bytes_accessed), SecondsCell(c.seconds), bound);
  }
  out << fmt::format(fmt::runtime(row_format), "total", "", Count(cost.totals.flops),
                     Count(cost.totals.transcendentals), Count(cost.totals.bytes_accessed),
                     SecondsCell(cost.seconds), "");
  if (cost.untimed_instructions > 0) {
    out << cost.untimed_instructions << " instruction(s) not timed (n/a): not in the total time\n";
  }
  if (marked) {
    out << "* lower bound: " << chip.name() << " gives no " << absl::StrJoin(cost.unknown_rates, ", ")
        << " (0 in its textproto); that work is not timed\n";
  }
}

}  // namespace

int RunCostCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(
      args, {{"hw", true}, {"xla-compatible", false}, {"devices", true}, {"format", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kCostUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  if (flags->positional().size() != 1) {
    io.err << kCostUsage;
    return kExitBadInput;
  }
  if (!flags->Has("hw")) {
    return ReportStatus(absl::InvalidArgumentError(
                            "--hw: expected a chip name (see 'perfsim hw list'); got none"),
                        io);
  }
  ModuleCostOptions options;
  options.mode = flags->Has("xla-compatible") ? CostMode::kXlaCompatible : CostMode::kTrue;
  if (flags->Has("devices")) {
    const std::string text = flags->Get("devices");
    if (!absl::SimpleAtoi(text, &options.num_devices) || options.num_devices <= 0) {
      return ReportStatus(absl::InvalidArgumentError(absl::StrCat(
                              "--devices: expected a positive integer; got '", text, "'")),
                          io);
    }
  }
  absl::StatusOr<Chip> chip = ResolveChip(flags->Get("hw"));
  if (!chip.ok()) return ReportStatus(chip.status(), io);
  absl::StatusOr<std::unique_ptr<Module>> module =
      LoadVerifiedModule(flags->positional()[0], io.in);
  if (!module.ok()) return ReportStatus(module.status(), io);
  WarnIfLoweredForAnotherPlatform(**module, *chip, InputName(flags->positional()[0]), io.err);
  absl::StatusOr<ModuleCost> cost = CostModule(**module, *chip, options);
  if (!cost.ok()) {
    // "file:line:col: " when the message starts with the instruction's location.
    const std::string message(cost.status().message());
    const bool located = !message.empty() && absl::ascii_isdigit(message[0]);
    return ReportStatus(
        absl::Status(cost.status().code(), absl::StrCat(InputName(flags->positional()[0]),
                                                        located ? ":" : ": ", message)),
        io);
  }
  if (*format == "json") {
    io.out << ReportJson(CostReportOf(**module, *chip, options.mode, *cost));
  } else {
    PrintTable(**module, *chip, options.mode, *cost, io.out);
  }
  return kExitOk;
}

}  // namespace perfsim
