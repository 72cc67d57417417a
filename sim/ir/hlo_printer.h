// Printer for HLO text that XLA's parser accepts and ParseHloModule reads back to the same
// module (Print(Parse(Print(Parse(t)))) == Print(Parse(t))).
//
//   std::string text = PrintModule(*module);
//
//   HloModule moe, entry_computation_layout={(f32[4]{0})->f32[4]{0}}
//
//   ENTRY main {
//     x = f32[4]{0} parameter(0)
//     ROOT n = f32[4]{0} negate(x)
//   }
//
// Names print without `%` unless XLA's lexer would read them as something else (`%0`,
// `%replicated`, `%ROOT`); called computations print before their callers; every attribute the
// parser kept (metadata, sharding, backend_config, unknown ones) prints back verbatim.
//
// An async-start whose called computation only wraps one op, the way the parser reads XLA's
// sugar `foo-start(x), attrs...`, prints in that sugared form, with the op's attributes on the
// start's line, as XLA prints it:
//
//   s = ((f32[10]), f32[20], s32[]) custom-call-start(p), custom_call_target="foo",
//       async_execution_thread="parallel_thread", backend_config={"k":1}
//   d = f32[20] custom-call-done(s)
//
// so XLA reads async_execution_thread, backend_config, frontend_attributes, ... where it wrote
// them. An async-start with attributes of its own, or a wrapper called from elsewhere, prints
// as `async-start(x), calls=wrapper` with the wrapper printed as a computation.
#ifndef PERFSIM_SIM_IR_HLO_PRINTER_H_
#define PERFSIM_SIM_IR_HLO_PRINTER_H_

#include <string>

#include "sim/ir/instruction.h"

namespace perfsim {

std::string PrintModule(const Module& module);
std::string PrintComputation(const Computation& computation);
// One line, without indentation or trailing newline: "ROOT r = f32[4]{0} negate(x)".
std::string PrintInstruction(const Instruction& instruction);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_HLO_PRINTER_H_
