// Internal: the custom-calls a lowered (not yet SPMD-partitioned) shard_map program carries,
// as `jax.jit(f).lower(...).as_text(dialect="hlo")` emits them (JAX 0.10):
//
//   x = (f32[2,4], f32[4,3]) custom-call(f32[8,4] a, f32[4,3] b),
//       custom_call_target="xla.sdy.GlobalToLocalShape",
//       frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"},
//       {}]>, <@mesh, [{}, {}]>]>", xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
//   y = f32[8,3] custom-call(f32[2,3] r), custom_call_target="xla.sdy.LocalToGlobalShape",
//       frontend_attributes={xla.sdy.out_shardings="...", xla.sdy.manual_axes="..."}
//   z = f32[2] custom-call(f32[2] v), custom_call_target="xla.sdy.FuncResultSharding", ...
//
// with the mesh in the module header: frontend_attributes={xla.sdy.meshes={mesh =
// #sdy.mesh<["x"=4]>}} (axes major to minor; device_ids=[...] when not iota).
//
// Every device runs the whole (global) program; the shard_map body runs per device between the
// two custom-calls:
//   GlobalToLocalShape   each operand is the global value; device d takes its block: a tensor
//                        dimension sharded over manual axes {"a","b"} (major to minor; a
//                        sub-axis "a":(pre)size takes its part of the axis) is cut into
//                        size(a)*size(b) blocks and d takes block c_a*size(b) + c_b, c the
//                        device's mesh coordinates. Axes that are not manual are ignored (the
//                        body sees them whole).
//   LocalToGlobalShape   the inverse: devices exchange their blocks (a rendezvous of every
//                        device, like a collective) and each assembles the global value from
//                        the devices that share its coordinates on every axis the value is not
//                        sharded over. A replicated dimension takes the device's own block.
//   FuncResultSharding   the identity.
// The run needs as many devices as the mesh has (`--devices`), on a module without
// replica_count / num_partitions (device ids are mesh device ids). Errors are InvalidArgument
// naming what was expected, e.g. "expected --devices 4 (the devices of mesh @mesh); got 8".
#ifndef PERFSIM_SIM_INTERP_SDY_CUSTOM_CALLS_H_
#define PERFSIM_SIM_INTERP_SDY_CUSTOM_CALLS_H_

#include "absl/status/statusor.h"
#include "sim/interp/evaluator.h"

namespace perfsim {
namespace interp {

inline constexpr char kSdyGlobalToLocalShapeTarget[] = "xla.sdy.GlobalToLocalShape";
inline constexpr char kSdyLocalToGlobalShapeTarget[] = "xla.sdy.LocalToGlobalShape";
inline constexpr char kSdyFuncResultShardingTarget[] = "xla.sdy.FuncResultSharding";

absl::StatusOr<Value> SdyGlobalToLocalShape(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands);
absl::StatusOr<Value> SdyLocalToGlobalShape(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands);
absl::StatusOr<Value> SdyFuncResultSharding(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_SDY_CUSTOM_CALLS_H_
