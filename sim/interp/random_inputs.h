// Random inputs for running a module without data (`perfsim run` without --inputs).
//
//   PERFSIM_ASSIGN_OR_RETURN(auto inputs, MakeRandomInputs(module, /*num_devices=*/8,
//                                                         /*seed=*/1));
//   // inputs[device][p]: entry parameter p on that device.
//
// Distribution per element type (independent per device and parameter, from a SplitMix64
// stream of (seed, device, parameter), so the same seed gives the same bits everywhere):
//   floating point   uniform in [-1, 1), rounded to nearest even into the type
//   complex          real and imaginary parts each uniform in [-1, 1)
//   pred             true with probability 1/2
//   integers         uniform in [0, 8), except where the module says what the value indexes:
//     - group sizes (operand 2 of ragged-dot, perfsim.gmm, perfsim.tgmm; operand 4 of
//       perfsim.fused_ffn): each of the m rows of the ragged dimension joins a uniformly drawn
//       group, so the sizes sum to exactly m;
//     - start indices of dynamic-slice / dynamic-update-slice: uniform over the valid starts
//       [0, dim - size];
//     - gather / scatter indices: uniform in [0, smallest indexed operand dimension);
//     - ragged-all-to-all offsets and sizes: 0 (no rows move; any other choice must agree
//       across devices, which random values would not).
// A parameter is traced through call/fusion/async operands and through reshape, bitcast,
// convert, copy, broadcast and slice to find such uses; the first use found decides.
#ifndef PERFSIM_SIM_INTERP_RANDOM_INPUTS_H_
#define PERFSIM_SIM_INTERP_RANDOM_INPUTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"
#include "sim/ir/literal.h"

namespace perfsim {

absl::StatusOr<std::vector<std::vector<Literal>>> MakeRandomInputs(const Module& module,
                                                                   int64_t num_devices,
                                                                   uint64_t seed);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_RANDOM_INPUTS_H_
