// The compute budget of a run: the FLOP of its matrix ops (dot, ragged-dot, convolution,
// scaled-dot, triangular-solve, cholesky, fft and the perfsim grouped-matmul custom calls; 2
// per multiply-add, as `perfsim cost` counts them), counted from the program before it runs,
// as the memory budget is (memory_plan.h).
//
// The interpreter is a reference, not a fast backend: its dot kernel does tens of GFLOP/s on
// one core, so a module written for an accelerator (a 32768x8192x1024 matmul in a 20-trip
// loop is 11 TFLOP, hours of CPU) is refused up front, with the FLOP it needs, instead of
// running for hours. Matrix ops are what can need that much arithmetic within the memory
// budget: every other op does a few operations per element of buffers the memory budget
// already bounds (and while loops are held to --max-loop-iterations).
//
//   PERFSIM_ASSIGN_OR_RETURN(ComputeNeed need, ComputeComputeNeed(module, /*num_devices=*/1));
//   PERFSIM_RETURN_IF_ERROR(CheckComputeBudget(need, options.max_flops));
//
// Loops run their trip count (sim/cost/trip_count.h StaticTripCount, shared with `perfsim
// cost`): backend_config known_trip_count, else the count of the usual counted loop (an
// integer tuple element compared with a constant in the condition, stepped by a constant in
// the body, starting from a constant); a loop whose trip count is neither is
// counted once, and a conditional by its cheapest branch, so the need is a lower bound and a
// refusal is never wrong. The evaluator counts the same FLOP as it runs (each device against
// its share of the budget), which stops the runs the static count could not see.
#ifndef PERFSIM_SIM_INTERP_COMPUTE_PLAN_H_
#define PERFSIM_SIM_INTERP_COMPUTE_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/cost/trip_count.h"  // StaticTripCount: the loop counts used here
#include "sim/ir/instruction.h"

namespace perfsim {

// Example: the 20-trip loop above on one device: device_flops = 20 · 2·32768·8192·1024 =
// 1.1e13, largest_at "while > dot_XY", largest_flops 1.1e13.
struct ComputeNeed {
  // All devices: num_devices · device_flops.
  double total_flops = 0;
  int64_t num_devices = 1;
  double device_flops = 0;
  // The instruction needing the most, through the calls leading to it, and its FLOP on one
  // device with every enclosing loop's trips.
  std::string largest_at;
  double largest_flops = 0;
  // Some loop's trip count was not known (counted once) or a conditional was counted by its
  // cheapest branch.
  bool lower_bound = false;
};

// FLOP `instruction` does once when it is a matrix op (dot, ragged-dot, convolution,
// scaled-dot, triangular-solve, cholesky, fft, perfsim.gmm / tgmm / fused_ffn), as
// CountInstruction counts them; 0 for every other op (a call, fusion or loop counts nothing
// itself: its computations do).
double ContractionFlops(const Instruction& instruction);

// The need of running `module`'s entry on `num_devices` devices (InvalidArgument without an
// entry or with a cyclic computation).
absl::StatusOr<ComputeNeed> ComputeComputeNeed(const Module& module, int64_t num_devices);

// OK when need.total_flops <= max_flops; else ResourceExhausted:
//   "compute budget: the run needs 1.1e+13 FLOP of contractions (1 device x 1.1e+13, most at
//    while > dot_XY: 1.1e+13); the interpreter's limit is 5e+10 FLOP: expected a need within
//    the limit (raise it with --max-flops to run this module)"
absl::Status CheckComputeBudget(const ComputeNeed& need, double max_flops);

}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_COMPUTE_PLAN_H_
