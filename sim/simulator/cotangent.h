// The incoming cotangent of a backward (simulator.h step 7): an entry parameter annotated
// ROLE_COTANGENT waits for the forward's outputs.
//
//   std::vector<const Instruction*> outputs = ForwardOutputs(*module.entry());
//   // y = (forward) ... ; ROOT t = tuple(y, dx, dw)   ->  {y}
//   PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> order,
//                            OrderAfterEdges(operands, names, is_parameter));
#ifndef PERFSIM_SIM_SIMULATOR_COTANGENT_H_
#define PERFSIM_SIM_SIMULATOR_COTANGENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// The instructions that hold the forward's result: the root's elements, through tuples,
// annotated PHASE_FORWARD; when the root holds none (a module that returns only gradients),
// every forward instruction no other forward instruction reads. Empty when nothing is
// annotated forward.
std::vector<const Instruction*> ForwardOutputs(const Computation& entry);

// The entry parameters annotated ROLE_COTANGENT.
std::vector<const Instruction*> CotangentParameters(const Computation& entry);

// An order of ops 0 .. n − 1 in which every op comes after its edges (`edges[i]`: the ops op i
// waits for), keeping the index order wherever the edges allow (always the lowest ready op
// first): only what the added edges force moves. InvalidArgument naming `names[i]` of a stuck
// op when the edges form a cycle ("expected the forward's outputs not to depend on the
// cotangent").
absl::StatusOr<std::vector<int64_t>> OrderAfterEdges(const std::vector<std::vector<int64_t>>& edges,
                                                     const std::vector<std::string>& names);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SIMULATOR_COTANGENT_H_
