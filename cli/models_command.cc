// Placeholder; written by the owner of this file.
#include "cli/cli.h"
namespace perfsim {
int RunModelsCommand(const std::vector<std::string>& args, CliIo& io) {
  io.err << "perfsim: models is not built yet\n";
  return kExitInternal;
}
}  // namespace perfsim
