// `perfsim hw list|show`: the described chips.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "fmt/format.h"
#include "proto/report.pb.h"
#include "sim/hw/chip.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/proto_format.h"

namespace perfsim {
namespace {

constexpr char kHwUsage[] = R"(usage: perfsim hw list [--format=table|json]
       perfsim hw show NAME|FILE.textproto [--format=table|json]

list: one row per built-in chip: kind, dense bf16 peak, HBM capacity and bandwidth, on-chip
      scratch (VMEM per TensorCore on TPU, shared memory per SM on GPU) and the interconnect.
show: every field of one chip with its unit, plus derived figures. NAME is a built-in chip
      (see 'perfsim hw list'); an argument with '/' or ending in .textproto is read as a file,
      '-' reads the textproto from standard input.
      A file with problems exits 2 and lists each as 'file:line:col: ...'.
--format=json prints machine-readable JSON: list, an array of HwListEntry
(proto/report.proto); show, the description (field names as in proto/hardware.proto).
)";

std::string KindWord(const Chip& chip) { return chip.is_tpu() ? "TPU" : "GPU"; }

// "64 MiB VMEM" (TPU) or "228 KiB SMEM/SM" (GPU).
std::string ScratchCell(const Chip& chip) {
  return absl::StrCat(FormatQuantity("bytes", static_cast<double>(chip.ScratchPhysicalBytes())),
                      chip.is_tpu() ? " VMEM" : " SMEM/SM");
}

int ListChips(const std::string& format, CliIo& io) {
  std::vector<Chip> chips;
  for (const std::string& name : BuiltinChipNames()) {
    absl::StatusOr<Chip> chip = LoadBuiltinChip(name);
    // A built-in file that does not load is a perfsim bug (the tests load every one).
    if (!chip.ok()) return ReportStatus(absl::InternalError(chip.status().message()), io);
    chips.push_back(*std::move(chip));
  }
  if (format == "json") {
    std::vector<report::HwListEntry> entries;
    for (const Chip& chip : chips) {
      report::HwListEntry& e = entries.emplace_back();
      e.set_name(chip.name());
      e.set_display_name(chip.proto().display_name());
      e.set_kind(KindWord(chip));
      e.set_peak_bf16_flops_per_second(chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16));
      e.set_hbm_capacity_bytes(chip.hbm_capacity_bytes());
      e.set_hbm_bytes_per_second(chip.hbm_bytes_per_second());
      e.set_scratch_physical_bytes(chip.ScratchPhysicalBytes());
      e.set_scratch_limit_bytes(chip.ScratchLimitBytes());
      e.set_default_slice_shape(chip.DefaultSliceShape());
      e.set_interconnect(chip.InterconnectSummary());
    }
    io.out << ReportJsonArray(entries);
    return kExitOk;
  }
  static constexpr char kRow[] = "{:<10} {:<4} {:>12} {:>8} {:>8} {:>16}  {}\n";
  io.out << fmt::format(kRow, "name", "kind", "bf16 TFLOP/s", "HBM GiB", "HBM TB/s", "VMEM/SMEM",
                        "interconnect (default slice)");
  for (const Chip& chip : chips) {
    io.out << fmt::format(
        kRow, chip.name(), KindWord(chip),
        fmt::format("{:.0f}", chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16) / 1e12),
        fmt::format("{:.0f}", chip.hbm_capacity_bytes() / (1024.0 * 1024 * 1024)),
        fmt::format("{:.2f}", chip.hbm_bytes_per_second() / 1e12), ScratchCell(chip),
        chip.InterconnectSummary());
  }
  return kExitOk;
}

int ShowChip(const std::string& name_or_path, const std::string& format, CliIo& io) {
  absl::StatusOr<Chip> loaded =
      LoadDescriptionArgument<Chip>(name_or_path, io.in, "hardware", ResolveChip, Chip::FromText);
  if (!loaded.ok()) return ReportStatus(loaded.status(), io);
  const Chip& chip = *loaded;
  if (format == "json") {
    io.out << ProtoToJson(chip.proto());
    return kExitOk;
  }
  io.out << fmt::format("{}: {} ({})\n", chip.name(), chip.proto().display_name(), KindWord(chip));
  for (const ProtoFieldLine& line : DescribeProtoFields(chip.proto(), /*include_unset=*/true)) {
    if (line.path == "name" || line.path == "display_name" || line.path == "kind") continue;
    io.out << fmt::format("  {:<62} {:>16}", line.path, line.value)
           << (line.human.empty() ? "" : "  " + line.human) << "\n";
  }
  io.out << "derived:\n";
  io.out << fmt::format("  {:<62} {:>16}  FLOP/B (bf16 peak / HBM bandwidth)\n", "ridge_bf16",
                        fmt::format("{:.0f}", chip.RidgeBf16FlopsPerByte()));
  io.out << fmt::format("  {:<62} {:>16}  chips\n", "default_slice",
                        absl::StrCat(chip.DefaultSliceShape(), " = ", chip.DefaultSliceChips()));
  io.out << fmt::format(
      "  {:<62} {:>16}  {}\n", "scratch_limit_bytes", chip.ScratchLimitBytes(),
      chip.is_tpu() ? "default scoped VMEM per TensorCore" : "shared memory per thread block");
  return kExitOk;
}

}  // namespace

int RunHwCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {{"format", true}});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kHwUsage;
    return kExitOk;
  }
  absl::StatusOr<std::string> format = TableOrJsonFormat(*flags);
  if (!format.ok()) return ReportStatus(format.status(), io);
  const std::vector<std::string>& positional = flags->positional();
  if (positional.size() == 1 && positional[0] == "list") return ListChips(*format, io);
  if (positional.size() == 2 && positional[0] == "show") {
    return ShowChip(positional[1], *format, io);
  }
  io.err << kHwUsage;
  return kExitBadInput;
}

}  // namespace perfsim
