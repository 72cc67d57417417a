// Counting: flops, transcendentals and bytes of one instruction, in one of two conventions.
//
//   OpCounts c = CountInstruction(*dot, {.mode = CostMode::kXlaCompatible});
//   // f32[64,640] = dot(f32[64,24], f32[24,640]): c.flops == 2·64·640·24 == 1966080,
//   // c.operand_bytes == {6144, 61440}, c.output_bytes == 163840.
//   OpCounts module = CountComputation(*module->entry(), options);   // module totals
//
// CostMode::kXlaCompatible reproduces openxla/xla HloCostAnalysis as XLA:CPU configures it
// (shared/reference/xla_cost_model.md section 1), which is what JAX's `cost_analysis()` returns:
// the same per-op rules, the same fusion byte rules (parameters read once, slices read what
// they slice, dynamic-update-slice in place), sub-computations costed by a nested analysis, and
// XLA's float32 arithmetic and visiting order, so that totals agree to the last bit.
//
// CostMode::kTrue is what the instructions really do. It differs from XLA only here:
//   - custom-call: XLA says -1 for everything. True cost:
//       perfsim.gmm / perfsim.tgmm / perfsim.fused_ffn: the grouped-matmul model
//         (grouped_matmul.h) with the tiling of backend_config and the group sizes when the
//         group_sizes operand is a constant;
//       a declared cost (backend_config `cost_estimate` {flops, transcendentals,
//         bytes_accessed}, top level or inside `custom_call_config`, as Pallas writes it);
//       cuBLAS gemms (`__cublas$gemm`, `__cublas$lt$matmul`): dot flops from the
//         dot_dimension_numbers of gemm_backend_config, bytes of operands and result;
//       TopK: as the topk op below;
//       annotations that move no data (Sharding, SPMDFullToShardShape, SPMDShardToFullShape,
//         xla.sdy.*, AllocateBuffer): 0;
//       any other target: 0 flops, operand and result bytes.
//   - ragged-dot: the real 2·M·K·N. XLA deletes output dimension 0 (M times too small in the MoE
//     mode) or keeps the group dimension (G times too large in the ragged-contracting mode).
//   - while: body × trip count + condition × (trip count + 1), the trip count from
//     backend_config known_trip_count or, in a module XLA has not annotated (a lowered
//     `lax.scan`), the counted-loop pattern (trip_count.h StaticTripCount); one body and one
//     condition when it is not known (XLA always counts one iteration).
//   - sort: E · ceil(log2 L) comparisons along the sort dimension of length L, each costing the
//     comparator's flops (at least 1); XLA uses n·ceil(log2 n) over all n elements.
//   - topk: E(operand) · max(1, ceil(log2 k)) comparisons (a k-element heap per row); XLA says 0.
//   - all-reduce: E(output) · (N−1)/N additions per device for N participants (ring
//     reduce-scatter + all-gather); XLA assumes 2 replicas. reduce-scatter: E(output) · (N−1)
//     additions per device; XLA says 0. N is the replica-group size, or `num_devices` when the
//     groups are empty.
//   - reduce-window: always (window − 1) · E(output); no reduce-then-broadcast special case.
//   - tuple: 0 bytes; XLA charges an 8-byte pointer per element.
//   - reshape between row-major untiled layouts: 0 bytes (a bitcast on every accelerator);
//     XLA charges operand and result.
//   - dynamic-slice / dynamic-update-slice: every index operand is read; XLA counts the first.
//     One whose block is a contiguous range of the buffer (a layer [1, D, F] of a stacked
//     [N, D, F] operand, the slices a `lax.scan` takes and puts back), and a fusion that is
//     only that (plus bitcasts and scalar index arithmetic), is 0 bytes: an address offset on
//     an accelerator, where XLA fuses the slice into the kernel that reads it and makes the
//     kernel that computes an update write it in place; the reading or producing kernel
//     already counts those bytes. XLA charges slice and update, as XLA:CPU copies them.
//   - the -done half of an asynchronous op (all-gather-done, copy-done, async-done, ...) and
//     async-update: 0; the data moves at the start. XLA charges operand and result again.
//   Everything else, including the fusion byte rules and max over conditional branches (the
//   branch taken is not known ahead of time), is as in XLA.
//
// Both modes expect a module that passed VerifyModule; on other input they never crash but the
// counts are unspecified.
#ifndef PERFSIM_SIM_COST_OP_COUNTS_H_
#define PERFSIM_SIM_COST_OP_COUNTS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "sim/cost/cost_types.h"
#include "sim/cost/trip_count.h"  // KnownTripCount, StaticTripCount (while loops)
#include "sim/ir/instruction.h"

namespace perfsim {

struct CountOptions {
  CostMode mode = CostMode::kTrue;
  // Devices taking part in a collective whose replica_groups are empty ({} = all devices).
  int64_t num_devices = 1;
};

// Counts of one instruction, its called computations included.
OpCounts CountInstruction(const Instruction& instruction, const CountOptions& options);

// The sum over every instruction of a computation; for the entry computation this is the
// module total that XLA reports. operand_bytes[i] sums the i-th operand entry of every
// instruction (XLA's "bytes accessed{i}{}" key), output_bytes the output entries.
OpCounts CountComputation(const Computation& computation, const CountOptions& options);

// OK unless `instruction` is a custom-call whose declared cost (backend_config
// `cost_estimate`, as above) has a value that is not a finite number in [0, 1e30]:
// InvalidArgument "name: cost_estimate.flops: expected a finite number in [0, 1e30]; got -1",
// or whose backend_config names a cost_estimate but does not read as PallasBackendConfig
// (proto/backend_config.proto): ReadBackendConfig's error. A backend_config that is not JSON
// and names no cost_estimate (XLA allows any text) declares nothing and is OK.
// Counting ignores such values (it cannot fail); the cost pass refuses the module with this.
absl::Status CheckDeclaredCost(const Instruction& instruction);

// Whether true-mode counting knows a custom-call's work: sharding annotations and allocations
// (none), perfsim's grouped matmuls, XLA:CPU's TopK in its (values, indices) form, cuBLAS
// gemms, and any kernel that declares a cost_estimate. For another target the counts are only
// the HBM traffic of its operands and result, so its time is a lower bound (the simulator lists
// it as untimed). False for an instruction that is not a custom-call.
bool CustomCallWorkKnown(const Instruction& instruction);

// Participants of a collective: 2 for collective-permute; when the module header gives
// replica_count or num_partitions, XLA's group size for the collective's mode (collective_groups.h
// SubgroupSize: all-gather with channel_id and no use_global_device_ids = listed size x
// num_partitions); otherwise the size of its first replica group, `num_devices` when the groups
// are empty or absent.
int64_t CollectiveGroupSize(const Instruction& instruction, int64_t num_devices);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_OP_COUNTS_H_
