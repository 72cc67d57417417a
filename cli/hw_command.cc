// Placeholder; written by the owner of this file.
#include "cli/cli.h"
namespace perfsim {
int RunHwCommand(const std::vector<std::string>& args, CliIo& io) {
  io.err << "perfsim: hw is not built yet\n";
  return kExitInternal;
}
}  // namespace perfsim
