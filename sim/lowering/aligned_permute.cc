#include "sim/lowering/aligned_permute.h"

#include "absl/strings/str_cat.h"
#include "sim/lowering/permute.h"

namespace perfsim {
namespace {

constexpr PrimitiveType kS32 = PrimitiveType::kS32;

Tensor S32(NamedBuilder& nb, const std::string& dims, absl::Span<const int64_t> sizes,
           int64_t value) {
  return nb.Full(kS32, dims, sizes, static_cast<double>(value));
}

// The slot index read per sorted row, with padding slots (>= assignments) sent to the extra
// row `assignments` of a table that has one appended.
Tensor ClampedSlot(NamedBuilder& nb, const AlignedPermutation& p, int64_t assignments) {
  const int64_t rows = p.slot.size('M');
  return nb.Binary(Opcode::kMinimum, p.slot, S32(nb, "M", {rows}, assignments));
}

}  // namespace

int64_t AlignedPermuteRows(int64_t assignments, int64_t num_experts, int64_t align) {
  return assignments + (align > 1 ? num_experts * (align - 1) : 0);
}

AlignedPermutation PermuteByExpertAligned(NamedBuilder& nb, const Tensor& x, const Tensor& ids,
                                          int64_t num_experts, int64_t align, int64_t buffer_rows) {
  const int64_t t = ids.size('T'), k = ids.size('K'), m0 = t * k, e = num_experts;
  const int64_t natural = AlignedPermuteRows(m0, e, align);
  AlignedPermutation p;
  Tensor flat = nb.Reshape(ids, "M", {m0});
  p.counts = Bincount(nb, flat, e, 'E');
  p.group_sizes = p.counts;
  Tensor all_ids = flat;
  if (align > 1) {
    // pad_needed = (A − cnt % A) % A, with s32 division (cnt >= 0).
    Tensor a = S32(nb, "E", {e}, align);
    Tensor rem = nb.Sub(p.counts, nb.Mul(nb.Div(p.counts, a), a));
    Tensor pad = nb.Select(nb.Compare(rem, S32(nb, "E", {e}, 0), ComparisonDirection::kEq),
                           S32(nb, "E", {e}, 0), nb.Sub(a, rem));
    p.group_sizes = nb.Add(p.counts, pad);
    // The padding block, slot (e, j): expert e while j < pad_needed[e], else the sentinel E.
    const int64_t per = align - 1;
    Tensor j = nb.Iota(kS32, "EX", {e, per}, 'X');
    Tensor active = nb.Compare(j, pad, ComparisonDirection::kLt);
    Tensor owner = nb.Iota(kS32, "EX", {e, per}, 'E');
    Tensor pad_ids = nb.Select(active, owner, S32(nb, "EX", {e, per}, e));
    all_ids = nb.Concatenate({flat, nb.Reshape(pad_ids, "M", {e * per})}, 'M');
  }
  Tensor order = nb.Iota(kS32, "M", {natural}, 'M');
  std::vector<Tensor> sorted = nb.Sort({all_ids, order});
  Tensor slot = sorted[1];
  p.inverse = nb.Slice(nb.Sort({slot, order})[1], {0}, {m0});
  if (buffer_rows > natural) {
    p.rows = nb.Fail(absl::StrCat("aligned permute: expected a buffer of at most ", natural,
                                  " rows (T*K + E*(A-1)); got ", buffer_rows),
                     x);
    return p;
  }
  p.slot = buffer_rows < natural ? nb.Slice(slot, {0}, {buffer_rows}) : slot;
  Tensor real = nb.Compare(p.slot, S32(nb, "M", {buffer_rows}, m0), ComparisonDirection::kLt);
  p.token = nb.Select(real, nb.Div(p.slot, S32(nb, "M", {buffer_rows}, k)),
                      S32(nb, "M", {buffer_rows}, t));
  const int64_t d = x.size('D');
  Tensor x_ext = nb.Concatenate({x, nb.Full(x.type(), "TD", {1, d}, 0)}, 'T');
  p.rows = nb.GatherRows(x_ext, p.token);
  return p;
}

Tensor UnpermuteAligned(NamedBuilder& nb, const Tensor& rows, const AlignedPermutation& p,
                        int64_t tokens, int64_t k) {
  Tensor in_order = nb.GatherRows(rows, p.inverse);  // MD [T·K] in assignment order
  return nb.Reshape(in_order, "TKD", {tokens, k, rows.size('D')});
}

Tensor UnpermuteAlignedGrad(NamedBuilder& nb, const Tensor& d_tkd, const AlignedPermutation& p) {
  const int64_t m0 = d_tkd.size('T') * d_tkd.size('K'), d = d_tkd.size('D');
  Tensor flat = nb.Reshape(d_tkd, "MD", {m0, d});
  Tensor ext = nb.Concatenate({flat, nb.Full(d_tkd.type(), "MD", {1, d}, 0)}, 'M');
  return nb.GatherRows(ext, ClampedSlot(nb, p, m0));
}

Tensor PermuteAlignedGrad(NamedBuilder& nb, const Tensor& d_rows, const AlignedPermutation& p,
                          int64_t tokens) {
  const int64_t d = d_rows.size('D');
  Tensor zeros = nb.Full(d_rows.type(), "TD", {tokens + 1, d}, 0);
  Tensor summed = nb.ScatterAddRows(zeros, p.token, d_rows);
  return nb.Slice(summed, {0, 0}, {tokens, d});  // drop the padding rows' sentinel row
}

Tensor PerSortedRow(NamedBuilder& nb, const Tensor& tk, const AlignedPermutation& p) {
  const int64_t m0 = tk.size('T') * tk.size('K');
  Tensor flat = nb.Reshape(tk, "M", {m0});
  Tensor ext = nb.Concatenate({flat, nb.Full(tk.type(), "M", {1}, 0)}, 'M');
  return nb.GatherRows(ext, ClampedSlot(nb, p, m0));
}

}  // namespace perfsim
