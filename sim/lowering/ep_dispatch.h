// Expert-parallel pieces shared by the backends that move token rows to the shards owning their
// experts with ragged all-to-alls (ep_ragged_a2a, grouped_gemm_aligned): MaxText's shard_map
// body steps 7-12 and 19 (shared/reference/backends.md 1a.3) and JAX's transpose rule for
// ragged_all_to_all (backends.md "jax.lax.ragged_all_to_all"). Include only from sim/lowering.
//
//   Tensor shard = MeshIndex(s, MeshAxis::kEp);                      // s32[], my ep index
//   Tensor traffic = TrafficMatrix(s, group_sizes);                  // XP s32 [EP, EP]
//   RaggedExchange d = ExchangeRows(s, rows, EmptyBuffer(nb, f32, "MD", {R, D}),
//                                   DispatchParams(nb, traffic, shard),
//                                   RaggedBuffer::RECEIVED_EXPERT_ROWS);
//   Tensor back = ExchangeRowsTranspose(s, d, d_received);           // the backward
//
// Names: P indexes the peers of an exchange (offsets and sizes are "P"); the traffic matrix is
// "XP" with X the sending and P the receiving shard; M indexes buffer rows.
//
// Receive buffer (backends.md 1a.3, get_ragged_buffer_size with ragged_buffer_factor <= 0):
//   R = T_l·K·min(EP, E/K) = min(EP·T_l·K, T_l·E)
// (the second form is the first with exact division). It is also the most rows any routing can
// send one shard: each of the EP senders has T_l tokens, and the K picks of one token are
// distinct experts, so at most min(K, E_l) of them live on one shard: EP·T_l·min(K, E/EP) =
// min(EP·T_l·K, T_l·E) = R. MaxText's buffer never drops a token and has no spare row. With
// ragged_buffer_factor f > 0 the buffer is int(T_l·K·f) rows and the traffic is truncated to it
// (MaxText's _truncate_matrix, backends.md 1a.3): receiver j takes the senders' chunks in order
// until R rows are full; the rest of the rows are dropped (TruncateTraffic, the *Params
// overloads that take it, LocalPermute's truncate_to).
#ifndef PERFSIM_SIM_LOWERING_EP_DISPATCH_H_
#define PERFSIM_SIM_LOWERING_EP_DISPATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/annotation.pb.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/lowering.h"

namespace perfsim {

// This device's coordinate along `axis` (jax.lax.axis_index), s32[], from partition-id and the
// device numbering of step_spec.h (MeshStride and MeshAxisSize in lowering.h).
Tensor MeshIndex(StepState& s, MeshAxis axis);

// MaxText's receive-buffer rows for spec (the formula above; int(T_l·K·f) for f > 0).
int64_t RaggedBufferRows(const StepSpec& spec);

// An uninitialised buffer (jax.lax.empty, custom-call AllocateBuffer): NaN in the interpreter.
Tensor EmptyBuffer(NamedBuilder& nb, PrimitiveType type, std::string dims,
                   absl::Span<const int64_t> sizes);

// Σ_{i<j} v[i] (exclusive) or Σ_{i<=j} v[i] (inclusive) of a rank-1 s32 tensor not named X.
Tensor ExclusiveCumsum(NamedBuilder& nb, const Tensor& v);
Tensor InclusiveCumsum(NamedBuilder& nb, const Tensor& v);

// Steps 7-8: rows this shard sends to each expert shard (group_sizes [E] summed per shard of
// E/EP experts), all-gathered over ep: traffic[i, j] = rows shard i sends to shard j ("XP").
Tensor TrafficMatrix(StepState& s, const Tensor& group_sizes);

// Offsets and sizes of one ragged_all_to_all, one entry per peer ("P", s32).
struct RaggedA2aParams {
  Tensor input_offsets;
  Tensor send_sizes;
  Tensor output_offsets;  // sender-side: where my slice lands on each receiver
  Tensor recv_sizes;
};

// MaxText get_all_to_all_params, batch-sharded, for shard s of a traffic matrix G ("XP"):
//   input_offsets = excl_cumsum(G[s, :])   send_sizes = G[s, :]
//   output_offsets[j] = Σ_{i<s} G[i, j]    recv_sizes[i] = G[i, s]
RaggedA2aParams DispatchParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& shard);
// The combine: the same formulas applied to Gᵀ.
RaggedA2aParams CombineParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& shard);

// _truncate_matrix(G, R): per receiving column j, the senders' cumulative rows clamped to R,
// differenced: Gt[i, j] = min(Σ_{i'≤i} G[i', j], R) − min(Σ_{i'<i} G[i', j], R) ("XP" s32).
Tensor TruncateTraffic(NamedBuilder& nb, const Tensor& traffic, int64_t rows);
// The same with the truncated matrix Gt (backends.md 1a.3): the dispatch takes input_offsets
// from G (the sender's rows are laid out untruncated) and sizes and output_offsets from Gt; the
// combine takes input_offsets, sizes from Gtᵀ and output_offsets from Gᵀ (the rows go back to
// where they came from).
RaggedA2aParams DispatchParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& truncated,
                               const Tensor& shard);
RaggedA2aParams CombineParams(NamedBuilder& nb, const Tensor& traffic, const Tensor& truncated,
                              const Tensor& shard);

// One forward ragged_all_to_all over ep and what its transpose needs.
struct RaggedExchange {
  Tensor result;   // the receive buffer after the exchange
  Tensor operand;  // the rows sent
  RaggedA2aParams params;
};

// ragged_all_to_all over ep of operand's rows into `output`, declaring to the static check
// (checks.h, CheckReceiveBuffers) what the receive buffer holds; `align` is the per-expert row
// alignment of aligned backends (0: none).
RaggedExchange ExchangeRows(StepState& s, const Tensor& operand, const Tensor& output,
                            const RaggedA2aParams& params, RaggedBuffer::Received received,
                            int64_t align = 0);

// JAX's transpose of ExchangeRows for the cotangent of its result:
//   ragged_all_to_all(ct, zeros_like(operand), a2a(output_offsets), recv_sizes,
//                     a2a(input_offsets), send_sizes)
// with a2a the all-to-all over ep of the [EP] offsets (each peer learns where its slice sat on
// me, and where mine came from on it). Rows of the result no peer writes are zero. `received`
// declares what the operand-shaped result holds.
Tensor ExchangeRowsTranspose(StepState& s, const RaggedExchange& forward, const Tensor& cotangent,
                             RaggedBuffer::Received received, int64_t align = 0);

// StepState::saved keeps tensors by name; an exchange is four params plus two tensors.
void SaveExchange(StepState& s, absl::string_view key, const RaggedExchange& exchange);
RaggedExchange LoadExchange(StepState& s, absl::string_view key);

// Step 12, MaxText local_permute (batch-sharded): the receive buffer holds, source shard by
// source shard, each source's rows for my experts in expert order. Sorting it expert-major:
//   local_sizes = global_sizes[:, s·E_l : (s+1)·E_l]            [EP, E_l]
//   row_expert  = repeat(arange(EP·E_l) % E_l, local_sizes, total_repeat_length=R)
//   sort_idx    = argsort(row_expert) (stable)                  group_sizes = Σ_i local_sizes
// Rows past the valid count (Σ local_sizes) repeat the last segment's expert, E_l − 1, so they
// stay at the end of the sorted order. With truncate_to = R > 0 the segment sizes are first
// truncated like the traffic, in buffer order: sizes_t = diff(min(cumsum(sizes), R)), so
// the group sizes count only the rows the buffer kept.
struct LocalPermutation {
  Tensor sort_idx;     // M s32: the buffer row each expert-sorted row holds
  Tensor inverse;      // M s32: argsort(sort_idx), for the local unpermute
  Tensor group_sizes;  // E s32 [E_l]: rows per local expert
};
// global_sizes: "XE" [EP, E], every shard's group sizes (step 11's all-gather).
LocalPermutation LocalPermute(NamedBuilder& nb, const Tensor& global_sizes, const Tensor& shard,
                              int64_t local_experts, int64_t rows, int64_t truncate_to = 0);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_EP_DISPATCH_H_
