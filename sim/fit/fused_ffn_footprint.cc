// VMEM footprints of a fused expert-FFN Pallas kernel, y = (act(x·wi_0) ⊙ (x·wi_1))·wo for the
// rows of each expert, in its two tilings (DESIGN.md "fused_expert_ffn"). The references give
// no source for these kernels; the model below follows the same Pallas allocation rules as the
// megablox kernels (blocks × buffer count, scratch once, native-tile alignment), and the
// tilings are defined so that both compute the same math:
//
// fused_ffn_d_tiled, tiling (tm, td, tf = F): grid (token tiles, D / td); each step writes the
//   output columns [tm, td]. The first matmul contracts over ALL of D, so the hidden activation
//   h [tm, F] needs the whole wi_0 and wi_1 of the expert: their blocks are [D, F]. h is
//   computed at the first D step of a token tile and kept in f32 scratch.
//     x [tm, D] ×2, wi_0 [D, F] ×2, wi_1 [D, F] ×2, wo [F, td] ×2, out [tm, td] ×2, h [tm, F] f32
// fused_ffn_f_tiled, tiling (tm, td = D, tf): grid (token tiles, F / tf), F being the reduction
//   axis of the second matmul: each step computes h for F columns [f, f + tf) and adds
//   h·wo[f:f+tf] into an f32 accumulator [tm, D] (the usual fused-MoE tiling).
//     x [tm, D] ×2, wi_0 [D, tf] ×2, wi_1 [D, tf] ×2, wo [tf, D] ×2, out [tm, D] ×2, acc [tm, D]
//     f32
// Values that live only inside one step (the gate and up products, h of one F chunk) are left to
// the compiler's internal scratch and not counted.
//
// DeepSeek-V3 (D = 7168, F = 2048), bf16: the D-tiled weights alone are
// 2 × 2 × 7168 × 2048 × 2 B = 112 MiB, more than the 64 MiB of a v7x TensorCore for every td;
// F-tiled with tm = 256, tf = 256 needs 6 buffers of 7 MiB = 42 MiB.
#include "absl/strings/str_cat.h"
#include "sim/fit/kernels.h"

namespace perfsim {
namespace {

constexpr int64_t kSublaneRule = 8;
constexpr int64_t kLaneRule = 128;

}  // namespace

KernelFootprint FusedFfnFootprint(const KernelProblem& p, const Tiling& t) {
  KernelFootprint f;
  f.buffers.reserve(6);
  const ProblemShape& s = p.shape;
  const OperandDtypes& d = p.dtypes;
  const int64_t model_dim = s.k;
  const int64_t ffn_dim = s.n;
  const std::initializer_list<PrimitiveType> kInputTypes = {
      PrimitiveType::kBF16, PrimitiveType::kF32, PrimitiveType::kS8, PrimitiveType::kF8E4M3FN};
  CheckDtype("x dtype", d.lhs, kInputTypes, f);
  CheckDtype("weight dtype", d.rhs, kInputTypes, f);
  CheckDtype("out dtype", d.out, {PrimitiveType::kBF16, PrimitiveType::kF32}, f);
  // Token tiles are whole tiles of the (padded) expert-sorted rows, as in megablox.
  CheckDivides("tm", t.tm, "m", s.m, f);
  CheckBlockDim("tm", t.tm, "m", s.m, kSublaneRule, f);
  const MemorySpace vmem = MemorySpace::kVmem;
  const PrimitiveType f32 = PrimitiveType::kF32;
  if (p.kernel == KernelKind::kFusedFfnDTiled) {
    CheckBlockDim("td", t.tk, "D", model_dim, kLaneRule, f);
    if (t.tn != ffn_dim) {
      f.violations.push_back(absl::StrCat("tf: fused_ffn_d_tiled holds F whole; expected tf == F (",
                                          ffn_dim, "); got ", t.tn));
    }
    f.buffers.push_back(MakeBuffer("x", BufferRole::kPipelined, {t.tm, model_dim}, d.lhs, 2, vmem));
    f.buffers.push_back(
        MakeBuffer("wi_0", BufferRole::kPipelined, {model_dim, ffn_dim}, d.rhs, 2, vmem));
    f.buffers.push_back(
        MakeBuffer("wi_1", BufferRole::kPipelined, {model_dim, ffn_dim}, d.rhs, 2, vmem));
    f.buffers.push_back(MakeBuffer("wo", BufferRole::kPipelined, {ffn_dim, t.tk}, d.rhs, 2, vmem));
    f.buffers.push_back(MakeBuffer("out", BufferRole::kPipelined, {t.tm, t.tk}, d.out, 2, vmem));
    f.buffers.push_back(MakeBuffer("h", BufferRole::kScratch, {t.tm, ffn_dim}, f32, 1, vmem));
    return f;
  }
  CheckBlockDim("tf", t.tn, "F", ffn_dim, kLaneRule, f);
  if (t.tk != model_dim) {
    f.violations.push_back(absl::StrCat("td: fused_ffn_f_tiled holds D whole; expected td == D (",
                                        model_dim, "); got ", t.tk));
  }
  f.buffers.push_back(MakeBuffer("x", BufferRole::kPipelined, {t.tm, model_dim}, d.lhs, 2, vmem));
  f.buffers.push_back(
      MakeBuffer("wi_0", BufferRole::kPipelined, {model_dim, t.tn}, d.rhs, 2, vmem));
  f.buffers.push_back(
      MakeBuffer("wi_1", BufferRole::kPipelined, {model_dim, t.tn}, d.rhs, 2, vmem));
  f.buffers.push_back(MakeBuffer("wo", BufferRole::kPipelined, {t.tn, model_dim}, d.rhs, 2, vmem));
  f.buffers.push_back(MakeBuffer("out", BufferRole::kPipelined, {t.tm, model_dim}, d.out, 2, vmem));
  f.buffers.push_back(MakeBuffer("acc", BufferRole::kScratch, {t.tm, model_dim}, f32, 1, vmem));
  return f;
}

}  // namespace perfsim
