#include "sim/lowering/ep_dispatch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/lowering/collectives.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;

Tensor Constant(NamedBuilder& nb, int64_t value) {
  return nb.Scalar(kS32, static_cast<double>(value));
}

// t[starts : starts + sizes] with dynamic (s32 scalar) starts, as JAX's dynamic_slice.
Tensor DynamicSlice(NamedBuilder& nb, const Tensor& t, const std::vector<Tensor>& starts,
                    absl::Span<const int64_t> sizes) {
  std::vector<Instruction*> ops;
  for (const Tensor& start : starts) ops.push_back(start.op);
  return nb.Name(nb.raw().DynamicSlice(t.op, std::move(ops), sizes), t.dims);
}

// all_to_all over ep of a rank-1 tensor with one entry per peer: entry i of the result is
// peer i's entry for me.
Tensor AllToAllPerPeer(StepState& s, const Tensor& t) {
  const std::vector<MeshAxis> axes = {MeshAxis::kEp};
  if (GroupSize(s.spec, axes) == 1) return t;
  InstructionAttributes attributes;
  ReplicaGroups groups;
  groups.groups = MeshGroups(s.spec.parallelism, axes);
  attributes.replica_groups = std::move(groups);
  attributes.channel_id = s.next_channel_id++;
  attributes.dimensions = std::vector<int64_t>{0};
  return s.nb.Name(s.nb.raw().Add(Opcode::kAllToAll, {t.op}, std::move(attributes)), t.dims);
}

Tensor Cumsum(NamedBuilder& nb, const Tensor& v, bool inclusive) {
  // out[j] = Σ_i [i < j] v[i] (or i <= j): a masked reduction over an [n, n] square. The real
  // code's jnp.cumsum is a reduce-window; over [EP] or [EP·E_l] entries either is negligible.
  const int64_t n = v.shape().dimensions(0);
  const char name = v.dims[0];
  const std::string dims = {'X', name};
  Tensor rows = nb.BroadcastTo(nb.Rename(v, "X"), dims, {{name, n}});
  Tensor i = nb.Iota(kS32, dims, {n, n}, 'X');
  Tensor j = nb.Iota(kS32, dims, {n, n}, name);
  Tensor mask = nb.Compare(i, j, inclusive ? ComparisonDirection::kLe : ComparisonDirection::kLt);
  return nb.Reduce(nb.Select(mask, rows, nb.Full(kS32, dims, {n, n}, 0)), "X");
}

}  // namespace

Tensor MeshIndex(StepState& s, MeshAxis axis) {
  NamedBuilder& nb = s.nb;
  const Parallelism& p = s.spec.parallelism;
  const int64_t size = MeshAxisSize(p, axis);
  if (size == 1) return Constant(nb, 0);
  const std::string key = absl::StrCat("mesh_index.", MeshAxisName(axis));
  if (auto it = s.saved.find(key); it != s.saved.end()) return it->second;
  const int64_t stride = MeshStride(p, axis);
  Tensor device = nb.Convert(Tensor{nb.raw().Add(Opcode::kPartitionId, {}), ""}, kS32);
  Tensor index =
      nb.Binary(Opcode::kRemainder, nb.Div(device, Constant(nb, stride)), Constant(nb, size));
  s.saved[key] = index;
  return index;
}

int64_t RaggedBufferRows(const StepSpec& spec) {
  const int64_t t = spec.tokens_per_device(), k = spec.model.experts_per_token(),
                ep = spec.parallelism.ep, e = spec.model.num_experts();
  const double factor = spec.knobs.ragged_buffer_factor;
  if (factor > 0) return static_cast<int64_t>(static_cast<double>(t * k) * factor);
  return std::min(ep * t * k, t * e);
}

Tensor EmptyBuffer(NamedBuilder& nb, PrimitiveType type, std::string dims,
                   absl::Span<const int64_t> sizes) {
  return nb.CustomCall({}, type, std::move(dims), sizes, kAllocateBufferTarget);
}

Tensor ExclusiveCumsum(NamedBuilder& nb, const Tensor& v) { return Cumsum(nb, v, false); }
Tensor InclusiveCumsum(NamedBuilder& nb, const Tensor& v) { return Cumsum(nb, v, true); }

Tensor TrafficMatrix(StepState& s, const Tensor& group_sizes) {
  NamedBuilder& nb = s.nb;
  const int64_t ep = s.spec.parallelism.ep, e = group_sizes.size('E');
  Tensor per_shard = nb.Reduce(nb.Reshape(group_sizes, "PE", {ep, e / ep}), "E");
  return AllGather(s, nb.Reshape(per_shard, "XP", {1, ep}), 'X', {MeshAxis::kEp});
}

namespace {

// get_all_to_all_params for shard s, with the matrix the input offsets come from (`layout`:
// how the sender laid its rows out), the one the sizes come from and the one the output
// offsets come from (how the receivers' buffers are laid out); all "XP".
RaggedA2aParams Params(NamedBuilder& nb, const Tensor& layout, const Tensor& sizes,
                       const Tensor& placed, const Tensor& shard) {
  const int64_t ep = sizes.size('P');
  const Tensor zero = Constant(nb, 0);
  RaggedA2aParams p;
  p.send_sizes = nb.Reshape(DynamicSlice(nb, sizes, {shard, zero}, {1, ep}), "P", {ep});
  p.recv_sizes = nb.Reshape(DynamicSlice(nb, sizes, {zero, shard}, {ep, 1}), "P", {ep});
  p.input_offsets = ExclusiveCumsum(
      nb, layout.op == sizes.op
              ? p.send_sizes
              : nb.Reshape(DynamicSlice(nb, layout, {shard, zero}, {1, ep}), "P", {ep}));
  // Rows the shards before me put in each receiver: Σ_{i<s} placed[i, j].
  Tensor before = nb.Compare(nb.Iota(kS32, "XP", {ep, ep}, 'X'), shard, ComparisonDirection::kLt);
  p.output_offsets = nb.Reduce(nb.Select(before, placed, nb.Full(kS32, "XP", {ep, ep}, 0)), "X");
  return p;
}

Tensor Transposed(NamedBuilder& nb, const Tensor& matrix) {
  return nb.Rename(nb.Transpose(matrix, "PX"), "XP");
}

// min(v, cap) elementwise, s32.
Tensor Cap(NamedBuilder& nb, const Tensor& v, int64_t cap) {
  return nb.Binary(Opcode::kMinimum, v, Constant(nb, cap));
}

}  // namespace

RaggedA2aParams DispatchParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& shard) {
  return Params(nb, traffic, traffic, traffic, shard);
}

RaggedA2aParams CombineParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& shard) {
  Tensor t = Transposed(nb, traffic);
  return Params(nb, t, t, t, shard);
}

Tensor TruncateTraffic(NamedBuilder& nb, const Tensor& traffic, int64_t rows) {
  // Inclusive and exclusive sums over the senders i' of each column, on a [i' = B, i = X, j = P]
  // grid (EP³ entries: negligible).
  const int64_t ep = traffic.size('P');
  const std::string grid = "BXP";
  const absl::flat_hash_map<char, int64_t> sizes = {{'B', ep}, {'X', ep}, {'P', ep}};
  Tensor senders = nb.BroadcastTo(nb.Rename(traffic, "BP"), grid, sizes);
  Tensor before = nb.Iota(kS32, grid, {ep, ep, ep}, 'B');
  Tensor me = nb.Iota(kS32, grid, {ep, ep, ep}, 'X');
  Tensor zeros = nb.Full(kS32, grid, {ep, ep, ep}, 0);
  auto sum = [&](ComparisonDirection direction) {
    return nb.Reduce(nb.Select(nb.Compare(before, me, direction), senders, zeros), "B");
  };
  return nb.Sub(Cap(nb, sum(ComparisonDirection::kLe), rows),
                Cap(nb, sum(ComparisonDirection::kLt), rows));
}

RaggedA2aParams DispatchParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& truncated,
                               const Tensor& shard) {
  return Params(nb, traffic, truncated, truncated, shard);
}

RaggedA2aParams CombineParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& truncated,
                              const Tensor& shard) {
  Tensor t = Transposed(nb, truncated);
  return Params(nb, t, t, Transposed(nb, traffic), shard);
}

RaggedExchange ExchangeRows(StepState& s, const Tensor& operand, const Tensor& output,
                            const RaggedA2aParams& params, RaggedBuffer::Received received,
                            int64_t align) {
  RaggedExchange x{.operand = operand, .params = params};
  x.result = RaggedAllToAll(s, operand, output, params.input_offsets, params.send_sizes,
                            params.output_offsets, params.recv_sizes, {MeshAxis::kEp});
  DeclareReceivedRows(x.result.op, received, align);
  return x;
}

Tensor ExchangeRowsTranspose(StepState& s, const RaggedExchange& forward, const Tensor& cotangent,
                             RaggedBuffer::Received received, int64_t align) {
  NamedBuilder& nb = s.nb;
  const Tensor& operand = forward.operand;
  Tensor zeros = nb.Full(cotangent.type(), operand.dims, operand.shape().dimensions(), 0);
  Tensor input_offsets = AllToAllPerPeer(s, forward.params.output_offsets);
  Tensor output_offsets = AllToAllPerPeer(s, forward.params.input_offsets);
  Tensor result = RaggedAllToAll(s, cotangent, zeros, input_offsets, forward.params.recv_sizes,
                                 output_offsets, forward.params.send_sizes, {MeshAxis::kEp});
  DeclareReceivedRows(result.op, received, align);
  return result;
}

void SaveExchange(StepState& s, absl::string_view key, const RaggedExchange& x) {
  s.saved[absl::StrCat(key, ".result")] = x.result;
  s.saved[absl::StrCat(key, ".operand")] = x.operand;
  s.saved[absl::StrCat(key, ".input_offsets")] = x.params.input_offsets;
  s.saved[absl::StrCat(key, ".send_sizes")] = x.params.send_sizes;
  s.saved[absl::StrCat(key, ".output_offsets")] = x.params.output_offsets;
  s.saved[absl::StrCat(key, ".recv_sizes")] = x.params.recv_sizes;
}

RaggedExchange LoadExchange(StepState& s, absl::string_view key) {
  RaggedExchange x;
  x.result = s.saved[absl::StrCat(key, ".result")];
  x.operand = s.saved[absl::StrCat(key, ".operand")];
  x.params.input_offsets = s.saved[absl::StrCat(key, ".input_offsets")];
  x.params.send_sizes = s.saved[absl::StrCat(key, ".send_sizes")];
  x.params.output_offsets = s.saved[absl::StrCat(key, ".output_offsets")];
  x.params.recv_sizes = s.saved[absl::StrCat(key, ".recv_sizes")];
  return x;
}

LocalPermutation LocalPermute(NamedBuilder& nb, const Tensor& global_sizes, const Tensor& shard,
                              int64_t local_experts, int64_t rows, int64_t truncate_to) {
  const int64_t ep = global_sizes.size('X');
  const int64_t segments = ep * local_experts;
  Tensor start = nb.Mul(shard, Constant(nb, local_experts));
  Tensor local = DynamicSlice(nb, global_sizes, {Constant(nb, 0), start}, {ep, local_experts});
  // Segment (source i, local expert e) of the buffer, in buffer order, ends at ends[i·E_l + e].
  Tensor flat = nb.Reshape(local, "G", {segments});
  Tensor ends = InclusiveCumsum(nb, flat);
  if (truncate_to > 0) {
    // What the truncated exchange kept of each segment: diff(min(cumsum(sizes), R)).
    ends = Cap(nb, ends, truncate_to);
    local = nb.Reshape(nb.Sub(ends, Cap(nb, ExclusiveCumsum(nb, flat), truncate_to)), "XE",
                       {ep, local_experts});
  }
  LocalPermutation p;
  p.group_sizes = nb.Reduce(local, "X");
  // Row r lies in segment #{j : ends[j] <= r} (the jnp.repeat of the real code), clamped to the
  // last segment for the rows past the valid count.
  Tensor ended = nb.Compare(nb.BroadcastTo(ends, "MG", {{'M', rows}}),
                            nb.Iota(kS32, "MG", {rows, segments}, 'M'), ComparisonDirection::kLe);
  Tensor count = nb.Reduce(nb.Select(ended, nb.Full(kS32, "MG", {rows, segments}, 1),
                                     nb.Full(kS32, "MG", {rows, segments}, 0)),
                           "G");
  Tensor segment = nb.Binary(Opcode::kMinimum, count, Constant(nb, segments - 1));
  Tensor row_expert = nb.Binary(Opcode::kRemainder, segment, Constant(nb, local_experts));
  Tensor order = nb.Iota(kS32, "M", {rows}, 'M');
  p.sort_idx = nb.Sort({row_expert, order})[1];
  p.inverse = nb.Sort({p.sort_idx, order})[1];
  return p;
}

}  // namespace perfsim
