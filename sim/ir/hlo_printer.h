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
// Names print without `%`; called computations print before their callers; every attribute the
// parser kept (metadata, sharding, backend_config, unknown ones) prints back verbatim.
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
