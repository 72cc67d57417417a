#include "sim/lowering/collectives.h"

namespace perfsim {
namespace {

// The replica groups name devices (MeshGroups' device numbering). In XLA's terms the module is
// one replica of N partitions: all-to-all, ragged-all-to-all and collective-permute with a
// channel_id read their groups as partition ids already, while all-reduce, all-gather and
// reduce-scatter need use_global_device_ids=true for that (without it a channel_id makes them
// cross-replica-and-partition, whose groups list replicas: {{0,1},{2,3}} would mean "replicas 0
// and 1, each with all of its partitions"). JAX's SPMD modules print the same
// (tests/testdata/hlo/jax/*.compiled.hlo); tools/jax/xla_accepts.py is where XLA said so.
InstructionAttributes GroupAttributes(StepState& state, const std::vector<MeshAxis>& axes,
                                      bool global_device_ids) {
  InstructionAttributes attributes;
  ReplicaGroups groups;
  groups.groups = MeshGroups(state.spec.parallelism, axes);
  attributes.replica_groups = std::move(groups);
  attributes.channel_id = state.next_channel_id++;
  attributes.use_global_device_ids = global_device_ids;
  return attributes;
}

}  // namespace

int64_t GroupSize(const StepSpec& spec, const std::vector<MeshAxis>& axes) {
  int64_t n = 1;
  for (MeshAxis axis : axes) n *= MeshAxisSize(spec.parallelism, axis);
  return n;
}

Tensor AllReduce(StepState& state, const Tensor& t, std::vector<MeshAxis> axes) {
  if (GroupSize(state.spec, axes) == 1) return t;
  InstructionAttributes attributes = GroupAttributes(state, axes, /*global_device_ids=*/true);
  Computation* add = state.nb.module_builder().ScalarBinaryComputation(t.type(), Opcode::kAdd);
  return state.nb.Name(state.nb.raw().Add(Opcode::kAllReduce, {t.op}, std::move(attributes),
                                          Shape(), "", add),
                       t.dims);
}

Tensor AllGather(StepState& state, const Tensor& t, char along, std::vector<MeshAxis> axes) {
  const int64_t n = GroupSize(state.spec, axes);
  if (n == 1) return t;
  InstructionAttributes attributes = GroupAttributes(state, axes, /*global_device_ids=*/true);
  const int64_t dim = t.index(along);
  attributes.dimensions = std::vector<int64_t>{dim};
  std::vector<int64_t> sizes = t.shape().dimensions();
  sizes[dim] *= n;
  return state.nb.Name(state.nb.raw().Add(Opcode::kAllGather, {t.op}, std::move(attributes),
                                          Shape::Array(t.type(), sizes)),
                       t.dims);
}

Tensor ReduceScatter(StepState& state, const Tensor& t, char along, std::vector<MeshAxis> axes) {
  const int64_t n = GroupSize(state.spec, axes);
  if (n == 1) return t;
  InstructionAttributes attributes = GroupAttributes(state, axes, /*global_device_ids=*/true);
  const int64_t dim = t.index(along);
  attributes.dimensions = std::vector<int64_t>{dim};
  std::vector<int64_t> sizes = t.shape().dimensions();
  sizes[dim] /= n;
  Computation* add = state.nb.module_builder().ScalarBinaryComputation(t.type(), Opcode::kAdd);
  return state.nb.Name(state.nb.raw().Add(Opcode::kReduceScatter, {t.op}, std::move(attributes),
                                          Shape::Array(t.type(), sizes), "", add),
                       t.dims);
}

Tensor RaggedAllToAll(StepState& state, const Tensor& operand, const Tensor& output,
                      const Tensor& input_offsets, const Tensor& send_sizes,
                      const Tensor& output_offsets, const Tensor& recv_sizes,
                      std::vector<MeshAxis> axes) {
  InstructionAttributes attributes = GroupAttributes(state, axes, /*global_device_ids=*/false);
  return state.nb.Name(
      state.nb.raw().Add(Opcode::kRaggedAllToAll,
                         {operand.op, output.op, input_offsets.op, send_sizes.op,
                          output_offsets.op, recv_sizes.op},
                         std::move(attributes)),
      output.dims);
}

}  // namespace perfsim
