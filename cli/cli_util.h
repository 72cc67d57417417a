// Small pieces the subcommands share: the --format choice, the positional and --seed checks,
// the name an input is called by in messages, loading a verified HLO module, and loading a
// `show` argument that is a built-in name, a .textproto path or "-".
//
//   PERFSIM_ASSIGN_OR_RETURN(std::string format, TableOrJsonFormat(flags));  // "table" | "json"
//   ParseHloModule(text, InputName(path));                                   // "<stdin>" for "-"
//   LoadDescriptionArgument<Chip>(arg, io.in, "hardware", ResolveChip, Chip::FromText);
//
// Every error is InvalidArgument in the house form "--flag: expected X; got 'Y'", so the caller
// passes it to ReportStatus (exit 2).
#ifndef PERFSIM_CLI_CLI_UTIL_H_
#define PERFSIM_CLI_CLI_UTIL_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/flags.h"
#include "sim/hw/chip.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// --format's value, "table" when the flag is absent. Anything but table or json is
// InvalidArgument "--format: expected table or json; got 'yaml'".
absl::StatusOr<std::string> TableOrJsonFormat(const ParsedFlags& flags);

// OK when there are no positional arguments; else InvalidArgument
// "expected no positional arguments; got 'x'" naming the first.
absl::Status ExpectNoPositional(const ParsedFlags& flags);

// --seed's value, `fallback` when the flag is absent. A value that is not a non-negative
// integer below 2^64 is InvalidArgument "--seed: expected a non-negative integer; got 'x'".
absl::StatusOr<uint64_t> SeedFlag(const ParsedFlags& flags, uint64_t fallback);

// The machine's physical memory in bytes (sysconf), or 0 when the system does not say.
int64_t PhysicalMemoryBytes();

// A memory budget flag's value (`perfsim run` and `perfsim validate --memory-budget`): plain
// bytes or with a unit, 512MiB, 8GiB, 1.5GB (KiB MiB GiB TiB are powers of 1024, KB MB GB TB
// of 1000), positive and at most the machine's physical memory: a budget beyond it would let a
// run allocate until the system kills it. InvalidArgument
//   "--memory-budget: expected at most the machine's physical memory, 24.0 GiB (25769803776
//    bytes); got '1TiB' (1099511627776 bytes)".
absl::StatusOr<int64_t> ParseMemoryBudget(absl::string_view flag, const std::string& text);

// The name messages call an input by: "<stdin>" for "-", else the path itself.
std::string InputName(const std::string& path);

// Reads HLO text from `path` ("-": standard input), parses and verifies it. Parse errors carry
// "file:line:col: "; a verifier error is prefixed with InputName(path) and ":" (its own
// "line:col: " follows) or ": " (a message without a location). Callers that interpret or cost
// the module rely on the verification: they trust its declared shapes.
absl::StatusOr<std::unique_ptr<Module>> LoadVerifiedModule(const std::string& path,
                                                           std::istream& in);

// Writes "perfsim: warning: FILE: ..." to `err` when the module carries evidence that it was
// lowered or compiled for another platform than the chip's (sim/ir/lowering_platform.h), e.g.
// JAX's CPU decomposition of ragged_dot costed on a TPU: the costs are then the other
// platform's program. Writes nothing when there is no evidence or it matches the chip.
void WarnIfLoweredForAnotherPlatform(const Module& module, const Chip& chip,
                                     const std::string& input_name, std::ostream& err);

// `status` as it is unless it is InvalidArgument (a description that does not parse or
// validate); then InvalidArgument "invalid <what> description '<name_or_path>':\n<message>", so
// that each problem stays on its own line with its file:line:col.
absl::Status AnnotateInvalidDescription(const absl::Status& status, absl::string_view what,
                                        const std::string& name_or_path);

// What `hw show` and `models show` take: a built-in name or a .textproto path, loaded with
// `resolve`, or "-" for a textproto on standard input, parsed with from_text(text, "<stdin>").
// Errors go through AnnotateInvalidDescription; NotFound for an unknown name comes back as is.
template <typename T>
absl::StatusOr<T> LoadDescriptionArgument(const std::string& name_or_path, std::istream& in,
                                          absl::string_view what,
                                          absl::StatusOr<T> (*resolve)(absl::string_view),
                                          absl::StatusOr<T> (*from_text)(absl::string_view,
                                                                         absl::string_view)) {
  absl::StatusOr<T> loaded = [&]() -> absl::StatusOr<T> {
    if (name_or_path != "-") return resolve(name_or_path);
    absl::StatusOr<std::string> text = ReadInput("-", in);
    if (!text.ok()) return text.status();
    return from_text(*text, "<stdin>");
  }();
  if (loaded.ok()) return loaded;
  return AnnotateInvalidDescription(loaded.status(), what, name_or_path);
}

}  // namespace perfsim

#endif  // PERFSIM_CLI_CLI_UTIL_H_
