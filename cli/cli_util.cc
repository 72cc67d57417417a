#include "cli/cli_util.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/lowering_platform.h"
#include "sim/ir/verifier.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<std::string> TableOrJsonFormat(const ParsedFlags& flags) {
  std::string format = flags.Get("format", "table");
  if (format != "table" && format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: expected table or json; got '", format, "'"));
  }
  return format;
}

absl::Status ExpectNoPositional(const ParsedFlags& flags) {
  if (flags.positional().empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("expected no positional arguments; got '", flags.positional()[0], "'"));
}

absl::StatusOr<uint64_t> SeedFlag(const ParsedFlags& flags, uint64_t fallback) {
  if (!flags.Has("seed")) return fallback;
  uint64_t seed = 0;
  if (!absl::SimpleAtoi(flags.Get("seed"), &seed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seed: expected a non-negative integer; got '", flags.Get("seed"), "'"));
  }
  return seed;
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  int64_t bytes = 0;
  return TryMul(pages, page_bytes, &bytes) ? bytes : kInt64Max;
}

absl::StatusOr<int64_t> ParseMemoryBudget(absl::string_view flag, const std::string& text) {
  struct Unit {
    const char* suffix;
    double bytes;
  };
  // Longest suffixes first, so "GiB" is not read as "B".
  static constexpr Unit kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0},
  };
  absl::string_view number = absl::StripAsciiWhitespace(text);
  double scale = 1.0;
  for (const Unit& unit : kUnits) {
    if (absl::EndsWith(number, unit.suffix)) {
      number.remove_suffix(absl::string_view(unit.suffix).size());
      scale = unit.bytes;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) || !std::isfinite(value) ||
      value <= 0 || value * scale >= 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": expected bytes, e.g. 8GiB, 512MiB or 1000000; got '", text, "'"));
  }
  const int64_t bytes = static_cast<int64_t>(std::llround(value * scale));
  const int64_t physical = PhysicalMemoryBytes();
  if (physical > 0 && bytes > physical) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": expected at most the machine's physical memory, ",
        fmt::format("{:.1f} GiB", static_cast<double>(physical) / 1073741824.0), " (",
        physical, " bytes); got '", text, "' (", bytes, " bytes)"));
  }
  return bytes;
}

std::string InputName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

absl::StatusOr<std::unique_ptr<Module>> LoadVerifiedModule(const std::string& path,
                                                           std::istream& in) {
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadInput(path, in));
  const std::string display_name = InputName(path);
  PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseHloModule(text, display_name));
  absl::Status verified = VerifyModule(*module);
  if (!verified.ok()) {
    // Verifier messages start with "line:col: " when the instruction came from text.
    const std::string message(verified.message());
    const bool has_location = !message.empty() && absl::ascii_isdigit(message[0]);
    return absl::Status(verified.code(), display_name + (has_location ? ":" : ": ") + message);
  }
  return module;
}

void WarnIfLoweredForAnotherPlatform(const Module& module, const Chip& chip,
                                     const std::string& input_name, std::ostream& err) {
  const std::optional<PlatformEvidence> evidence = FindLoweringPlatform(module);
  if (!evidence.has_value()) return;
  const bool matches = (evidence->platform == LoweringPlatform::kTpu && chip.is_tpu()) ||
                       (evidence->platform == LoweringPlatform::kGpu && chip.is_gpu());
  if (matches) return;
  err << "perfsim: warning: " << input_name << ": the module was lowered for "
      << LoweringPlatformName(evidence->platform) << " (" << evidence->instruction << ": "
      << evidence->reason << "), but " << chip.name() << " is a "
      << (chip.is_gpu() ? "GPU" : "TPU")
      << "; these costs are the other platform's program. Lower for the chip's platform: "
         "jax.jit(f).trace(*args).lower(lowering_platforms=(\""
      << (chip.is_gpu() ? "cuda" : "tpu")
      << "\",)).as_text(dialect=\"hlo\") (README, \"Your own program\")\n";
}

absl::Status AnnotateInvalidDescription(const absl::Status& status, absl::string_view what,
                                        const std::string& name_or_path) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", what, " description '", name_or_path, "':\n", status.message()));
}

}  // namespace perfsim
