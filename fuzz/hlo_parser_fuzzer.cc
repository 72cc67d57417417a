// libFuzzer target for the HLO text parser, verifier and printer.
//
// Beyond "no crash, no hang, no sanitizer report", it checks the printer's round-trip
// property on every input the parser accepts: printing, re-parsing and printing again must
// give the same text. A violation traps, so libFuzzer saves the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "sim/ir/hlo_parser.h"
#include "sim/ir/hlo_printer.h"
#include "sim/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = perfsim::ParseHloModule(text, "fuzz.hlo");
  if (!module.ok()) return 0;
  // The verifier must give a verdict (OK or an error), never crash.
  (void)perfsim::VerifyModule(**module);
  const std::string printed = perfsim::PrintModule(**module);
  auto reparsed = perfsim::ParseHloModule(printed, "printed.hlo");
  if (!reparsed.ok()) {
    fprintf(stderr, "round trip: printed text does not parse: %s\n%s\n",
            std::string(reparsed.status().message()).c_str(), printed.c_str());
    __builtin_trap();
  }
  const std::string reprinted = perfsim::PrintModule(**reparsed);
  if (reprinted != printed) {
    fprintf(stderr, "round trip: print differs\n--- first\n%s\n--- second\n%s\n", printed.c_str(),
            reprinted.c_str());
    __builtin_trap();
  }
  return 0;
}
