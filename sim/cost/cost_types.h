// The plain result types of perfsim's cost model (sim/cost).
//
//   OpCounts   what an instruction does: flops, transcendentals, bytes read per operand and
//              bytes written, under one counting convention (CostMode).
//   OpCost     OpCounts plus the time the instruction takes on one device of a chip and what
//              bounds that time.
//
// Units: flops and transcendentals are operation counts; bytes are bytes; seconds are seconds.
// Example (an f32[64,24] x f32[24,640] dot, true cost, on gpu_h100):
//   OpCost{.counts = {.flops = 1966080, .bytes_accessed = 231424, ...},
//          .seconds = 1.07e-06, .bound = Bound::kOverhead, ...}
#ifndef PERFSIM_SIM_COST_COST_TYPES_H_
#define PERFSIM_SIM_COST_COST_TYPES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace perfsim {

// How instructions are counted.
enum class CostMode {
  // What the instructions really do on an accelerator (sim/cost/op_counts.h lists every place
  // where this differs from XLA): ragged-dot flops 2·M·K·N, while loops times their known trip
  // count, kernels by their declared or modelled cost, no tuple pointer tables.
  kTrue,
  // XLA's HloCostAnalysis (what JAX's `cost_analysis()` returns), conventions and quirks
  // included: custom-calls -1, ragged-dot 2·N·K, one loop iteration, all-reduce assuming two
  // replicas, tuples charged 8 bytes per element.
  kXlaCompatible,
};

// "true" or "xla-compatible".
absl::string_view CostModeName(CostMode mode);

// What limits an instruction's time.
enum class Bound {
  kNone,           // no work at all (parameter, constant, tuple, bitcast, ...)
  kCompute,        // matrix, vector or transcendental units
  kMemory,         // HBM bandwidth
  kCommunication,  // a collective on the interconnect
  kOverhead,       // the fixed cost of launching a kernel exceeds its roofline time
};

// "none", "compute", "memory", "communication", "overhead".
absl::string_view BoundName(Bound bound);

// Counts of one instruction. For fusions, calls, loops and conditionals they include the
// called computations (as XLA does).
struct OpCounts {
  double flops = 0;
  double transcendentals = 0;
  // Bytes the instruction reads and writes in memory. Usually the sum of operand_bytes and
  // output_bytes; XLA's rules break that for fused constants and for the composite ops
  // (call, while, conditional, async-start), whose totals come from their callees.
  double bytes_accessed = 0;
  // Bytes read from each operand, one entry per operand. In xla-compatible mode the list is
  // XLA's "bytes accessed{i}{}" entries, which for a fusion or a composite op can run past the
  // operand list (XLA keeps the entries of the instructions inside); only the first
  // operand-count entries describe the instruction's own operands.
  std::vector<double> operand_bytes;
  double output_bytes = 0;
};

// The cost of one instruction on one device of a chip.
struct OpCost {
  OpCounts counts;
  // Time on one device, or nullopt when the instruction could not be timed (a collective
  // while no collective model is linked in). Times always come from the true-cost work,
  // whichever mode produced `counts`: the chip does the same work either way.
  std::optional<double> seconds;
  // The parts of the roofline: compute (matrix + vector + transcendental units), HBM traffic,
  // interconnect, and the fixed per-kernel overhead. seconds = max(compute, memory) + overhead
  // for a kernel; communication for a collective; the sum of the parts for composite ops.
  double compute_seconds = 0;
  double memory_seconds = 0;
  double communication_seconds = 0;
  double overhead_seconds = 0;
  Bound bound = Bound::kNone;
  // Rates the chip description leaves at 0 that this instruction needed, e.g.
  // "compute.transcendentals_per_second": that part of its work is not in `seconds`, so
  // `seconds` is a lower bound.
  std::vector<std::string> unknown_rates;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_COST_TYPES_H_
