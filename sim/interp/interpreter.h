// The CPU reference interpreter of perfsim's op IR.
//
//   PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseHloModule(text));
//   InterpreterOptions options;
//   options.num_devices = 8;
//   PERFSIM_ASSIGN_OR_RETURN(auto inputs, MakeRandomInputs(*module, options.num_devices,
//                                                         /*seed=*/1));
//   PERFSIM_ASSIGN_OR_RETURN(RunResult result, RunModule(*module, inputs, options));
//   // result.outputs[device][i]: the i-th output of the entry computation on that device.
//
// Semantics are XLA's (HloEvaluator and the CPU backend):
//   - every op computes on the storage type's compute type (element_types.h): narrow floats
//     (bf16, f16, f8...) compute in f32 and are rounded to nearest even after every op; dot
//     and ragged-dot accumulate in the compute type of the result element type (f32 for a
//     bf16 x bf16 -> f32 dot, as `preferred_element_type` asks);
//   - SPMD: `num_devices` virtual devices each run the entry computation on their own inputs;
//     collectives exchange real data (see collectives.h for groups and ragged-all-to-all);
//   - custom-calls run registered reference implementations (custom_calls.h): AllocateBuffer,
//     perfsim.gmm, perfsim.tgmm, XLA:CPU's TopK and the sharding annotations; an unknown
//     target is an error naming it;
//   - `rng` draws from perfsim's own stream seeded by InterpreterOptions::seed (same
//     distribution as XLA, not the same bits); set-dimension-size passes data through (dynamic
//     sizes are not modelled);
//   - buffers nobody initialises (AllocateBuffer, rows a gmm kernel never writes) are poisoned:
//     NaN for floating types, kPoisonInteger for integers, true for pred.
//   - deterministic: the same module and inputs give the same bits whatever num_threads is.
//
// Ops with no meaning on a CPU reference run return Unimplemented naming the op:
//   infeed, outfeed, send, send-done, recv, recv-done   host/peer transfers outside the module
//   rng-get-and-update-state                            state of a backend's hardware RNG
//   rng-bit-generator                                   bit streams specific to XLA's Philox /
//                                                       ThreeFry implementations
//   dynamic-reshape                                     dynamic shapes are not modelled
// and what is not implemented yet (TODO(#3)): stochastic-convert and complex element types
// (c64, c128). A `constant({...})` whose values were elided from a dump is an error too: its
// values are unknown.
#ifndef PERFSIM_SIM_INTERP_INTERPRETER_H_
#define PERFSIM_SIM_INTERP_INTERPRETER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/ir/instruction.h"
#include "sim/ir/literal.h"

namespace perfsim {

// The value integer buffers are poisoned with (fits every signed and unsigned type wider than
// 8 bits; 8-bit types get its low byte, 0xAD).
inline constexpr int64_t kPoisonInteger = 0x7ead;

struct InterpreterOptions {
  // Virtual devices. The module's replica_count * num_partitions must equal it, unless the
  // header gives neither (both 1): then replica groups, source-target pairs, replica-id and
  // partition-id all refer to the device number 0..num_devices-1.
  int64_t num_devices = 1;
  // Seeds the `rng` op. Inputs are seeded separately (MakeRandomInputs).
  uint64_t seed = 0;
  // Live buffers of all devices together may not exceed this; the run fails with
  // ResourceExhausted, giving the need and the budget, instead.
  int64_t memory_budget_bytes = int64_t{4} << 30;
  // Device threads computing at the same time; 0 means one per device. Results do not depend
  // on it.
  int64_t num_threads = 0;
  // A while loop running longer than this fails (guards against modules that never end).
  int64_t max_while_iterations = 100'000'000;
  // When set, called with every array result of every instruction (in every computation, on
  // every device, from that device's thread, so it must be thread-safe). For debugging a
  // lowering; it slows the run down.
  std::function<void(int64_t device, const Instruction& instruction, const Literal& value)>
      observer;
};

struct RunResult {
  // outputs[device]: the entry computation's result, one Literal per element of a root tuple
  // (nested tuples stay tuple literals), or a single Literal for an array root.
  std::vector<std::vector<Literal>> outputs;
  // The most bytes of buffers alive at once, all devices together.
  int64_t peak_live_bytes = 0;
};

// Runs the entry computation of `module` on options.num_devices virtual devices.
// inputs[device][p] is entry parameter p on that device; a single inner vector
// (inputs.size() == 1) is given to every device. Each input must have the parameter's element
// type and dimensions (layouts are ignored: literals are row-major).
// Errors: InvalidArgument for bad inputs or semantics violations (an out-of-range
// ragged-all-to-all, a gmm tiling that does not divide m), Unimplemented for the ops above,
// ResourceExhausted for the memory budget; messages name the instruction.
absl::StatusOr<RunResult> RunModule(const Module& module,
                                    const std::vector<std::vector<Literal>>& inputs,
                                    const InterpreterOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_INTERPRETER_H_
