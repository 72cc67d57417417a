#include "cli/cli_util.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/verifier.h"
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

absl::Status AnnotateInvalidDescription(const absl::Status& status, absl::string_view what,
                                        const std::string& name_or_path) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", what, " description '", name_or_path, "':\n", status.message()));
}

}  // namespace perfsim
