#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "sim/ir/hlo_printer.h"

namespace perfsim {
namespace {

constexpr char kHloUsage[] = R"(usage: perfsim hlo check FILE
       perfsim hlo print FILE

check: parse FILE as HLO text and verify it (shape inference on every instruction).
       Prints a one-line summary; exit 0 when valid, 2 with 'file:line:col: ...' otherwise.
print: parse and verify, then print the module back as HLO text.
FILE may be '-' for standard input.
)";

}  // namespace

int RunHloCommand(const std::vector<std::string>& args, CliIo& io) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, {});
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kHloUsage;
    return kExitOk;
  }
  const std::vector<std::string>& positional = flags->positional();
  if (positional.size() != 2 || (positional[0] != "check" && positional[0] != "print")) {
    io.err << kHloUsage;
    return kExitBadInput;
  }
  absl::StatusOr<std::unique_ptr<Module>> module = LoadVerifiedModule(positional[1], io.in);
  if (!module.ok()) return ReportStatus(module.status(), io);
  if (positional[0] == "print") {
    io.out << PrintModule(**module);
    return kExitOk;
  }
  io.out << "ok: module " << (*module)->name() << ", " << (*module)->computations().size()
         << " computations, " << (*module)->instruction_count() << " instructions\n";
  return kExitOk;
}

}  // namespace perfsim
