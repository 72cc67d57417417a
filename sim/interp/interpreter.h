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
//     perfsim.gmm, perfsim.tgmm, perfsim.fused_ffn, XLA:CPU's TopK and the sharding
//     annotations; an unknown target is an error naming it;
//   - complex types (c64, c128) as XLA defines them (scalar_ops.h); stochastic-convert with
//     XLA's rounding rule (evaluator_elementwise.cc);
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
// A `constant({...})` whose values were elided from a dump is an error too: its values are
// unknown.
#ifndef PERFSIM_SIM_INTERP_INTERPRETER_H_
#define PERFSIM_SIM_INTERP_INTERPRETER_H_

#include <cstdint>
#include <functional>
#include <string>
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
  // A run whose MemoryNeed::total_bytes exceeds this is refused before it starts
  // (ResourceExhausted, see CheckMemoryBudget).
  int64_t memory_budget_bytes = int64_t{4} << 30;
  // Device threads computing at the same time; 0 means the machine's cores. Results, and the
  // budget decision, do not depend on it. A module without collectives runs on this many
  // threads; one with collectives starts a thread per device (a device waits for its group
  // inside its own evaluation), this many computing at once; a thread the system refuses is
  // ResourceExhausted, never an abort.
  int64_t num_threads = 0;
  // The most while-loop iterations one device runs, all loops together (nested ones
  // included); one more fails with ResourceExhausted naming the loop, so that a loop that
  // never ends is an error, not a hang. Loops at the interpreter's test sizes run far fewer.
  int64_t max_loop_iterations = 1'000'000;
  // The most FLOP of matrix ops (dot, convolution, ...; compute_plan.h) a run may need, all
  // devices together. A run whose static need exceeds it is refused before it starts
  // (ResourceExhausted, see CheckComputeBudget); one that gets past the static count (a loop
  // of unknown trip count) stops with ResourceExhausted when a device exceeds its equal share.
  // The default is one to three seconds of the interpreter's dot kernel on one core (about
  // 35 GFLOP/s for f32 and bf16, 20 for f8, on the 2-core development machine under load).
  double max_flops = 5e10;
  // When set, called with every array result of every instruction (in every computation, on
  // every device, from that device's thread, so it must be thread-safe). For debugging a
  // lowering; it slows the run down.
  std::function<void(int64_t device, const Instruction& instruction, const Literal& value)>
      observer;
};

// The bytes of buffers a run keeps alive at its peak, computed before it runs by a static
// liveness pass over the schedule the evaluator follows (sim/interp/memory_plan.h): the
// interpreter's copy of the inputs, and on every device its constants plus the most bytes of
// instruction results alive at once, each result held from the instruction that makes it to
// the last use of any value sharing it. It depends only on the module, the device count and
// the number of input sets, never on data or threads. Every device runs the same program on
// arrays of the same shapes, so all devices peak alike; `total_bytes` adds them up as if they
// peaked at the same moment (devices wait for each other at collectives, holding their
// buffers). Not counted: working storage inside op implementations (a dot's packed operands,
// a sort's permutation), which is freed before the op returns.
//
//   total_bytes = input_bytes + num_devices * device_bytes
//
// Example: a 1-device run of `x = f32[1000] parameter(0); a = negate(x); b = negate(a);
// ROOT c = negate(b)` needs 4000 (input) + 8000 (a and b, or b and c) = 12000 bytes.
struct MemoryNeed {
  int64_t total_bytes = 0;
  // Entry parameters: one copy per input set (1, or one set per device).
  int64_t input_bytes = 0;
  int64_t num_devices = 1;
  // One device: constants plus the peak of live instruction results.
  int64_t device_bytes = 0;
  int64_t constant_bytes = 0;
  // The instruction running when a device peaks, through the calls leading to it:
  // "fusion.3", or "while.2 > dot.7" for dot.7 in the body of while.2.
  std::string peak_at;
};

// The MemoryNeed of running `module` on `num_devices` devices with `input_sets` sets of entry
// parameters (1, or num_devices). Errors: InvalidArgument for a module without an entry or with
// a cycle.
absl::StatusOr<MemoryNeed> ComputeMemoryNeed(const Module& module, int64_t num_devices,
                                             int64_t input_sets);

// OK when need.total_bytes <= budget_bytes; else ResourceExhausted:
//   "memory budget: the run needs 1402880 bytes (inputs 172416 + 8 devices x 153808, each
//    device peaking at fusion.12); budget 1331200 bytes: expected a need within the budget
//    (raise it to run this module)"
absl::Status CheckMemoryBudget(const MemoryNeed& need, int64_t budget_bytes);

struct RunResult {
  // outputs[device]: the entry computation's result, one Literal per element of a root tuple
  // (nested tuples stay tuple literals), or a single Literal for an array root.
  std::vector<std::vector<Literal>> outputs;
  // What the budget was compared with (deterministic).
  MemoryNeed memory;
  // The most bytes of buffers the run actually held at once, all devices together, as
  // counted while it ran. On one device it is at most memory.total_bytes; with several it
  // depends on how the device threads interleaved. A diagnostic, for tests.
  int64_t observed_peak_bytes = 0;
};

// Runs the entry computation of `module` on options.num_devices virtual devices.
// inputs[device][p] is entry parameter p on that device; a single inner vector
// (inputs.size() == 1) is given to every device. Each input must have the parameter's element
// type and dimensions (layouts are ignored: literals are row-major).
// Errors: InvalidArgument for bad inputs or semantics violations (an out-of-range
// ragged-all-to-all, a gmm tiling that does not divide m), Unimplemented for the ops above,
// ResourceExhausted for the memory budget (before anything runs), for a thread the system
// refuses and for a while loop beyond max_loop_iterations; InvalidArgument for calls nested
// deeper than kMaxCallDepth (sim/ir/verifier.h); messages name the instruction.
absl::StatusOr<RunResult> RunModule(const Module& module,
                                    const std::vector<std::vector<Literal>>& inputs,
                                    const InterpreterOptions& options);
// The same, taking the inputs' buffers instead of copying them (the inputs are left empty):
// for inputs of gigabytes, a copy is as costly as many a run and doubles the memory held.
absl::StatusOr<RunResult> RunModule(const Module& module,
                                    std::vector<std::vector<Literal>>&& inputs,
                                    const InterpreterOptions& options);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_INTERPRETER_H_
