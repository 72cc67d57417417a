#include "sim/lowering/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/ir/builder.h"
#include "sim/lowering/annotations.h"
#include "sim/util/status.h"

namespace perfsim {

// Dimension names (named_builder.h's legend, with attention's own):
//   B batch            S query position     J key position       D model
//   H query heads      K K/V heads          R query heads per K/V head (GQA: H = K·R)
//   Z query/key head width (GQA)            V value head width
//   MLA: A q_lora rank  C kv_lora rank  N nope width  P rope width
//        Q q head width N + P  W wkv_b's per-head width N + V  L wkv_a's width C + P
// All sizes below are per device.

namespace {

// As ModelConfig::LayerAttentionScope and LayerHasRope, on the AttentionSpec alone.
AttentionScope ScopeOf(const AttentionSpec& a, int64_t layer) {
  if (a.layer_scopes_size() == 0) return ATTENTION_SCOPE_GLOBAL;
  return a.layer_scopes(static_cast<int>(layer % a.layer_scopes_size()));
}

bool HasRope(const AttentionSpec& a, int64_t layer) {
  const int64_t interval = a.nope_layer_interval();
  return interval == 0 || (layer + 1) % interval != 0;
}

// Rotary base when the model gives none (HF Llama's default).
constexpr double kDefaultRopeTheta = 10000.0;

// Everything the lowering functions share.
struct Ctx {
  const AttentionLoweringSpec& spec;
  NamedBuilder& nb;
  int64_t next_channel_id = 1;

  PrimitiveType dtype() const { return spec.dtype; }
  int64_t tp() const { return spec.tp; }
};

// ---- Collectives over the tensor-parallel group (devices 0..tp-1: the module's partitions).

// `groups` of partition ids; empty: the whole group.
InstructionAttributes GroupAttributes(Ctx& c, std::vector<std::vector<int64_t>> groups) {
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t d = 0; d < c.tp(); ++d) groups[0].push_back(d);
  }
  InstructionAttributes attributes;
  ReplicaGroups replica_groups;
  replica_groups.groups = std::move(groups);
  attributes.replica_groups = std::move(replica_groups);
  attributes.channel_id = c.next_channel_id++;
  // One replica of tp partitions: global device ids are the partition ids (collectives.cc).
  attributes.use_global_device_ids = true;
  return attributes;
}

Tensor AllReduce(Ctx& c, const Tensor& t, std::vector<std::vector<int64_t>> groups = {}) {
  const int64_t size = groups.empty() ? c.tp() : static_cast<int64_t>(groups[0].size());
  if (size == 1) return t;
  Computation* add = c.nb.module_builder().ScalarBinaryComputation(t.type(), Opcode::kAdd);
  return c.nb.Name(c.nb.raw().Add(Opcode::kAllReduce, {t.op}, GroupAttributes(c, std::move(groups)),
                                  Shape(), "", add),
                   t.dims);
}

Tensor AllGather(Ctx& c, const Tensor& t, char along) {
  if (c.tp() == 1) return t;
  InstructionAttributes attributes = GroupAttributes(c, {});
  const int64_t dim = t.index(along);
  attributes.dimensions = std::vector<int64_t>{dim};
  std::vector<int64_t> sizes = t.shape().dimensions();
  sizes[dim] *= c.tp();
  return c.nb.Name(c.nb.raw().Add(Opcode::kAllGather, {t.op}, std::move(attributes),
                                  Shape::Array(t.type(), sizes)),
                   t.dims);
}

Tensor ReduceScatter(Ctx& c, const Tensor& t, char along) {
  if (c.tp() == 1) return t;
  InstructionAttributes attributes = GroupAttributes(c, {});
  const int64_t dim = t.index(along);
  attributes.dimensions = std::vector<int64_t>{dim};
  std::vector<int64_t> sizes = t.shape().dimensions();
  sizes[dim] /= c.tp();
  Computation* add = c.nb.module_builder().ScalarBinaryComputation(t.type(), Opcode::kAdd);
  return c.nb.Name(c.nb.raw().Add(Opcode::kReduceScatter, {t.op}, std::move(attributes),
                                  Shape::Array(t.type(), sizes), "", add),
                   t.dims);
}

// The block's output: partial sums of the row-parallel wo, summed over the group (or
// reduce-scattered on S under sequence parallelism). dx the same way.
Tensor SumOverTp(Ctx& c, const Tensor& t) {
  return c.spec.sequence_parallel ? ReduceScatter(c, t, 'S') : AllReduce(c, t);
}

// The full sequence of an S-split activation under sequence parallelism.
Tensor GatherSequence(Ctx& c, const Tensor& t) {
  return c.spec.sequence_parallel ? AllGather(c, t, 'S') : t;
}

// ---- Small helpers.

// t's slice [begin, end) of the dimension named `along`, renamed to `dims`.
Tensor SliceAlong(NamedBuilder& nb, const Tensor& t, char along, int64_t begin, int64_t end,
                  std::string dims) {
  std::vector<int64_t> starts(t.rank(), 0);
  std::vector<int64_t> limits = t.shape().dimensions();
  starts[t.index(along)] = begin;
  limits[t.index(along)] = end;
  return nb.Rename(nb.Slice(t, starts, limits), std::move(dims));
}

// t's names without `drop`.
std::string Without(const std::string& dims, absl::string_view drop) {
  std::string kept;
  for (char c : dims) {
    if (drop.find(c) == absl::string_view::npos) kept += c;
  }
  return kept;
}

// ---- RoPE (rotate_half): out = t·cos + rotate_half(t)·sin, rotate_half([a, b]) = [−b, a],
// with cos/sin [S, width] = [cos θ, cos θ], θ[s, i] = s·theta^(−2i/width). Its transpose:
// dt = g·cos + rotate_halfᵀ(g·sin), rotate_halfᵀ([a, b]) = [b, −a].

struct RopeTables {
  Tensor cos, sin;  // named "S" + the width's name
};

// In-graph tables (a module at S = 8192 stays small): iota positions times a constant
// inv_freq, computed in double and rounded to f32, as HF computes it in f32.
RopeTables MakeRopeTables(Ctx& c, int64_t seq, int64_t width, char name) {
  NamedBuilder& nb = c.nb;
  const int64_t half = width / 2;
  const double theta =
      c.spec.attention.has_rope_theta() ? c.spec.attention.rope_theta() : kDefaultRopeTheta;
  Literal inv_freq(Shape::Array(PrimitiveType::kF32, {half}));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq.SetFromDouble(i, 1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / width));
  }
  Tensor inv = nb.Name(nb.raw().Constant(std::move(inv_freq)), std::string(1, name));
  const std::string dims = std::string("S") + name;
  Tensor angle = nb.Mul(nb.Iota(PrimitiveType::kF32, dims, {seq, half}, 'S'), inv);
  Tensor cos = nb.Unary(Opcode::kCos, angle), sin = nb.Unary(Opcode::kSin, angle);
  return {nb.Convert(nb.Concatenate({cos, cos}, name), c.dtype()),
          nb.Convert(nb.Concatenate({sin, sin}, name), c.dtype())};
}

// [a, b] -> [−b, a] (transpose: [b, −a]) along the dimension named `name`.
Tensor RotateHalf(NamedBuilder& nb, const Tensor& t, char name, bool transpose) {
  const int64_t width = t.size(name);
  Tensor a = SliceAlong(nb, t, name, 0, width / 2, t.dims);
  Tensor b = SliceAlong(nb, t, name, width / 2, width, t.dims);
  return transpose ? nb.Concatenate({b, nb.Unary(Opcode::kNegate, a)}, name)
                   : nb.Concatenate({nb.Unary(Opcode::kNegate, b), a}, name);
}

Tensor ApplyRope(NamedBuilder& nb, const Tensor& t, const RopeTables& r, char name) {
  return nb.Add(nb.Mul(t, r.cos), nb.Mul(RotateHalf(nb, t, name, false), r.sin));
}

Tensor ApplyRopeTranspose(NamedBuilder& nb, const Tensor& g, const RopeTables& r, char name) {
  return nb.Add(nb.Mul(g, r.cos), RotateHalf(nb, nb.Mul(g, r.sin), name, true));
}

// ---- RMSNorm over the dimension named `over`, with a learned scale [over]:
// y = t·r·g, r = rsqrt(mean(t²) + eps), in f32. Backward, with t̂ = t·r:
// dg = Σ (dy·t̂) over every other dimension; dt = r·(dt̂ − t̂·mean(dt̂·t̂)), dt̂ = dy·g.

struct RmsNormSaved {
  Tensor normed;  // t̂ (f32)
  Tensor r;       // rsqrt(mean(t²) + eps) (f32), without `over`
};

Tensor RmsNorm(Ctx& c, const Tensor& t, const Tensor& scale, char over, RmsNormSaved* saved) {
  NamedBuilder& nb = c.nb;
  Tensor t32 = nb.Convert(t, PrimitiveType::kF32);
  const double n = static_cast<double>(t.size(over));
  Tensor ms = nb.MulScalar(nb.Reduce(nb.Mul(t32, t32), std::string(1, over)), 1.0 / n);
  saved->r = nb.Unary(Opcode::kRsqrt, nb.AddScalar(ms, c.spec.norm_epsilon));
  saved->normed = nb.Mul(t32, saved->r);
  return nb.Convert(nb.Mul(saved->normed, nb.Convert(scale, PrimitiveType::kF32)), c.dtype());
}

// (dt, dscale) for the incoming gradient `dy` of RmsNorm's output.
std::pair<Tensor, Tensor> RmsNormGrad(Ctx& c, const Tensor& dy, const Tensor& scale, char over,
                                      const RmsNormSaved& saved) {
  NamedBuilder& nb = c.nb;
  Tensor dy32 = nb.Convert(dy, PrimitiveType::kF32);
  Tensor dscale = nb.Reduce(nb.Mul(dy32, saved.normed), Without(dy.dims, std::string(1, over)));
  Tensor dn = nb.Mul(dy32, nb.Convert(scale, PrimitiveType::kF32));
  const double n = static_cast<double>(dy.size(over));
  Tensor mean = nb.MulScalar(nb.Reduce(nb.Mul(dn, saved.normed), std::string(1, over)), 1.0 / n);
  Tensor dt = nb.Mul(nb.Sub(dn, nb.Mul(saved.normed, mean)), saved.r);
  return {nb.Convert(dt, c.dtype()), nb.Convert(dscale, c.dtype())};
}

// ---- The attention core on grouped heads: q "BS<g>X", k "BJ<k>X", v "BJ<k>V" where <g> are
// the query-head names (GQA: "KR"; MLA: "H") and <k> the K/V-head names (GQA: "K"; MLA: "H").
// Scores are f32 named "B<g>SJ".

// pred [S, J]: key j visible from query i.
Tensor VisibleMask(Ctx& c, int64_t seq) {
  NamedBuilder& nb = c.nb;
  Tensor i = nb.Iota(PrimitiveType::kS32, "SJ", {seq, seq}, 'S');
  Tensor j = nb.Iota(PrimitiveType::kS32, "SJ", {seq, seq}, 'J');
  Tensor visible = nb.Compare(j, i, ComparisonDirection::kLe);
  const int64_t w = c.spec.attention.local_window_tokens();
  switch (ScopeOf(c.spec.attention, c.spec.layer)) {
    case ATTENTION_SCOPE_SLIDING_WINDOW: {
      Tensor after =
          nb.Compare(j, nb.AddScalar(i, static_cast<double>(-w)), ComparisonDirection::kGt);
      return nb.Binary(Opcode::kAnd, visible, after);
    }
    case ATTENTION_SCOPE_CHUNKED: {
      Tensor width = nb.Full(PrimitiveType::kS32, "SJ", {seq, seq}, static_cast<double>(w));
      Tensor same = nb.Compare(nb.Div(j, width), nb.Div(i, width), ComparisonDirection::kEq);
      return nb.Binary(Opcode::kAnd, visible, same);
    }
    case ATTENTION_SCOPE_GLOBAL:
    case ATTENTION_SCOPE_UNSPECIFIED:
    default:
      return visible;
  }
}

// p = softmax over J of the masked, scaled scores (f32).
Tensor MaskedSoftmax(Ctx& c, const Tensor& scores, double scale) {
  NamedBuilder& nb = c.nb;
  Tensor scaled = nb.MulScalar(scores, scale);
  Tensor masked =
      nb.Select(VisibleMask(c, scores.size('S')), scaled,
                nb.Scalar(PrimitiveType::kF32, -std::numeric_limits<double>::infinity()));
  Tensor max = nb.Reduce(masked, "J", Opcode::kMaximum);
  Tensor e = nb.Unary(Opcode::kExp, nb.Sub(masked, max));
  return nb.Div(e, nb.Reduce(e, "J"));
}

// dS·scale from p (f32), dP (f32) and the rowsum(dO ⊙ O) term `delta` (f32, no J).
Tensor SoftmaxGrad(Ctx& c, const Tensor& p, const Tensor& dp, const Tensor& delta, double scale) {
  NamedBuilder& nb = c.nb;
  return nb.Convert(nb.MulScalar(nb.Mul(p, nb.Sub(dp, delta)), scale), c.dtype());
}

// ---- The attention core as one kernel (AttentionKernel::kFlash): q "BSH<d>", k "BS<k><d>",
// v "BS<k>V" in, o "BSHV" and the softmax's log-sum-exp "BHS" (f32) out; the backward takes
// q, k, v, o, lse, dO and gives dq, dk, dv shaped like q, k, v.

// Key/value tiles of block_kv a query block of block_q computes with, summed over the query
// blocks: every tile some visible (query, key) pair falls in. A query q sees the keys
// [lo(q), q] (lo = 0 causal, q − W + 1 sliding, q rounded down to W chunked), both ends
// nondecreasing in q, so a query block [first, last] sees the keys [lo(first), last].
int64_t VisibleTiles(int64_t seq, int64_t block_q, int64_t block_kv, AttentionScope scope,
                     int64_t window) {
  int64_t tiles = 0;
  for (int64_t first = 0; first < seq; first += block_q) {
    const int64_t last = std::min(first + block_q, seq) - 1;
    int64_t lo = 0;
    if (scope == ATTENTION_SCOPE_SLIDING_WINDOW) lo = std::max<int64_t>(0, first - window + 1);
    if (scope == ATTENTION_SCOPE_CHUNKED) lo = first / window * window;
    tiles += last / block_kv - lo / block_kv + 1;
  }
  return tiles;
}

// The kernel's backend_config: its declared cost, which the simulator times it by (sim/cost
// reads a Pallas cost_estimate), and what its semantics need. Per visible tile of
// block_q x block_kv scores and (batch, query head): forward 2·(Dqk + Dv) FLOPs per score
// (QKᵀ, PV) and one exp; backward 2·(3·Dqk + 2·Dv) (S recomputed, dP, dV, dQ, dK) and one exp.
// Bytes: q and o (backward: q, o, dO, dq) once, the log-sum-exp once, and per visible tile
// its K and V blocks (backward: read K, V and accumulate dK, dV), per query head.
std::string FlashConfig(Ctx& c, const Tensor& q, const Tensor& v, double scale, bool backward) {
  const AttentionLoweringSpec& s = c.spec;
  const AttentionScope scope = ScopeOf(s.attention, s.layer);
  const int64_t window = s.attention.local_window_tokens();
  const int64_t B = q.size('B'), S = q.size('S'), H = q.size('H');
  const int64_t dqk = q.shape().dimensions(3), dv = v.shape().dimensions(3);
  const int64_t elem = ByteWidth(c.dtype());
  const int64_t tiles = VisibleTiles(S, s.flash_block_q, s.flash_block_kv, scope, window);
  const int64_t scores = B * H * tiles * s.flash_block_q * s.flash_block_kv;
  const int64_t flops = 2 * scores * (backward ? 3 * dqk + 2 * dv : dqk + dv);
  const int64_t kv_bytes = elem * B * H * tiles * s.flash_block_kv * (dqk + dv);
  const int64_t bytes = elem * B * S * H * (dqk + dv) * (backward ? 2 : 1) + 4 * B * H * S +
                        kv_bytes * (backward ? 2 : 1);
  absl::string_view scope_name = "causal";
  if (scope == ATTENTION_SCOPE_SLIDING_WINDOW) scope_name = "sliding_window";
  if (scope == ATTENTION_SCOPE_CHUNKED) scope_name = "chunked";
  return absl::StrFormat(
      "{\"custom_call_config\":{\"cost_estimate\":{\"flops\":%d,\"transcendentals\":%d,"
      "\"bytes_accessed\":%d}},\"flash_attention\":{\"block_q\":%d,\"block_kv\":%d,"
      "\"mask\":\"%s\",\"window_tokens\":%d,\"scale\":%.17g}}",
      flops, scores, bytes, s.flash_block_q, s.flash_block_kv, scope_name,
      scope == ATTENTION_SCOPE_GLOBAL || scope == ATTENTION_SCOPE_UNSPECIFIED ? 0 : window, scale);
}

void AnnotateFlash(Ctx& c, Instruction* call, Kernel::Name kernel) {
  if (c.nb.module_builder().IsPlaceholder(call)) return;
  UpdateAnnotation(call, [&](Annotation& a) {
    Kernel* k = a.mutable_kernel();
    k->set_kernel(kernel);
    k->set_tm(c.spec.flash_block_q);
    k->set_tn(c.spec.flash_block_kv);
  });
}

struct FlashSaved {
  Tensor q, k, v, o, lse;
};
struct FlashGrads {
  Tensor dq, dk, dv;
};

Tensor FlashForward(Ctx& c, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                    FlashSaved* saved) {
  NamedBuilder& nb = c.nb;
  const int64_t B = q.size('B'), S = q.size('S'), H = q.size('H');
  const Shape o_shape = Shape::Array(c.dtype(), {B, S, H, v.shape().dimensions(3)});
  const Shape lse_shape = Shape::Array(PrimitiveType::kF32, {B, H, S});
  Instruction* call =
      nb.raw().CustomCall({q.op, k.op, v.op}, Shape::Tuple({o_shape, lse_shape}),
                          kFlashAttentionTarget, FlashConfig(c, q, v, scale, false));
  AnnotateFlash(c, call, Kernel::KERNEL_FLASH_ATTENTION);
  *saved = {q, k, v, nb.Name(nb.raw().GetTupleElement(call, 0), "BSHV"),
            nb.Name(nb.raw().GetTupleElement(call, 1), "BHS")};
  nb.SaveForBackward("attention.lse", "the softmax statistics the flash forward wrote", saved->lse);
  return saved->o;
}

FlashGrads FlashBackward(Ctx& c, const FlashSaved& f, const Tensor& d_o, double scale) {
  NamedBuilder& nb = c.nb;
  const int64_t mark = nb.InstructionCount();
  Instruction* call =
      nb.raw().CustomCall({f.q.op, f.k.op, f.v.op, f.o.op, f.lse.op, d_o.op},
                          Shape::Tuple({f.q.shape(), f.k.shape(), f.v.shape()}),
                          kFlashAttentionBwdTarget, FlashConfig(c, f.q, f.v, scale, true));
  AnnotateFlash(c, call, Kernel::KERNEL_FLASH_ATTENTION_BWD);
  nb.UseResidual("attention.lse", f.lse, mark);
  return {nb.Name(nb.raw().GetTupleElement(call, 0), f.q.dims),
          nb.Name(nb.raw().GetTupleElement(call, 1), f.k.dims),
          nb.Name(nb.raw().GetTupleElement(call, 2), f.v.dims)};
}

// ---- Parameters and outputs.

TensorSpec Spec(std::string name, std::string dims, std::vector<int64_t> global, PrimitiveType type,
                std::vector<std::vector<MeshAxis>> split, Annotation::Role role) {
  return TensorSpec{
      std::move(name), std::move(dims), std::move(global), type, std::move(split), role};
}

struct Lowering {
  Ctx& c;
  LoweredLayer& layer;
  absl::flat_hash_map<std::string, Tensor> params;
  int64_t next_parameter = 0;
  // The first entry instruction of the backward (the instruction count when forward only).
  int64_t backward_begin = -1;

  // Adds entry parameter `name` (global dims, the local ones, its split) to the module and
  // the layer's list.
  Tensor Param(const std::string& name, std::string dims, std::vector<int64_t> global,
               std::vector<int64_t> local, std::vector<std::vector<MeshAxis>> split,
               Annotation::Role role) {
    layer.parameters.push_back(
        Spec(name, dims, std::move(global), c.dtype(), std::move(split), role));
    Tensor t = c.nb.Parameter(next_parameter++, name, c.dtype(), std::move(dims), local);
    UpdateAnnotation(t.op, [&](Annotation& a) { a.set_role(role); });
    params[name] = t;
    return t;
  }
};

constexpr Annotation::Role kTrained = Annotation::ROLE_TRAINED_WEIGHT;

// ---- GQA / MHA / MQA.

struct GqaSizes {
  int64_t B, S, D, H, K, R, Z;  // local heads H = K·R
  int64_t kv_share;             // devices holding each K/V head (tp / Hkv when Hkv < tp; else 1)
};

GqaSizes SizesOfGqa(const AttentionLoweringSpec& s) {
  const AttentionSpec& a = s.attention;
  GqaSizes z;
  z.B = s.batch;
  z.S = s.seq;
  z.D = s.d_model;
  z.H = a.num_query_heads() / s.tp;
  z.K = a.num_kv_heads() >= s.tp ? a.num_kv_heads() / s.tp : 1;
  z.R = z.H / z.K;
  z.Z = a.head_dim();
  z.kv_share = a.num_kv_heads() >= s.tp ? 1 : s.tp / a.num_kv_heads();
  return z;
}

// The results: y, then for fwd_bwd dx and the weight gradients in parameter order.
std::vector<Tensor> LowerGqa(Ctx& c, Lowering& l) {
  NamedBuilder& nb = c.nb;
  const AttentionLoweringSpec& s = c.spec;
  const AttentionSpec& a = s.attention;
  const GqaSizes z = SizesOfGqa(s);
  const int64_t tp = s.tp;
  const int64_t H = a.num_query_heads(), Hkv = a.num_kv_heads();
  const std::vector<MeshAxis> kTp = {MeshAxis::kTp};
  const bool backward = s.phase == Phase::kForwardBackward;
  const bool rope = HasRope(a, s.layer);
  const int64_t s_local = s.sequence_parallel ? z.S / tp : z.S;
  const std::vector<std::vector<MeshAxis>> act_split =
      s.sequence_parallel ? std::vector<std::vector<MeshAxis>>{{}, kTp, {}}
                          : std::vector<std::vector<MeshAxis>>{{}, {}, {}};
  // With Hkv < tp the K/V weights are listed as the tp per-device copies (each of the Hkv
  // heads repeated tp/Hkv times): what every device holds.
  const int64_t kv_global = Hkv >= tp ? Hkv : tp;

  Tensor x_in = l.Param("x", "BSD", {z.B, z.S, z.D}, {z.B, s_local, z.D}, act_split,
                        Annotation::ROLE_ACTIVATION);
  Tensor wq = l.Param("wq", "DHZ", {z.D, H, z.Z}, {z.D, z.H, z.Z}, {{}, kTp, {}}, kTrained);
  Tensor wk = l.Param("wk", "DKZ", {z.D, kv_global, z.Z}, {z.D, z.K, z.Z}, {{}, kTp, {}}, kTrained);
  Tensor wv = l.Param("wv", "DKV", {z.D, kv_global, z.Z}, {z.D, z.K, z.Z}, {{}, kTp, {}}, kTrained);
  Tensor wo = l.Param("wo", "HVD", {H, z.Z, z.D}, {z.H, z.Z, z.D}, {kTp, {}, {}}, kTrained);
  Tensor q_norm, k_norm;
  if (a.qk_norm()) {
    q_norm = l.Param("q_norm", "Z", {z.Z}, {z.Z}, {{}}, kTrained);
    k_norm = l.Param("k_norm", "Z", {z.Z}, {z.Z}, {{}}, kTrained);
  }
  Tensor dy_in;
  if (backward) {
    dy_in = l.Param("dy", "BSD", {z.B, z.S, z.D}, {z.B, s_local, z.D}, act_split,
                    Annotation::ROLE_COTANGENT);
  }

  // Forward.
  Tensor x = GatherSequence(c, x_in);
  Tensor q = nb.Einsum("BSD,DHZ->BSHZ", x, wq);
  Tensor k = nb.Einsum("BSD,DKZ->BSKZ", x, wk);
  Tensor v = nb.Einsum("BSD,DKV->BSKV", x, wv);
  RmsNormSaved q_saved, k_saved;
  if (a.qk_norm()) {
    q = RmsNorm(c, q, q_norm, 'Z', &q_saved);
    k = RmsNorm(c, k, k_norm, 'Z', &k_saved);
  }
  RopeTables tables;
  if (rope) {
    tables = MakeRopeTables(c, z.S, z.Z, 'Z');
    q = ApplyRope(nb, q, tables, 'Z');
    k = ApplyRope(nb, k, tables, 'Z');
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(z.Z));
  const bool flash = s.kernel == AttentionKernel::kFlash;
  Tensor qg, kj, vj, p, pc, o, oh;
  FlashSaved flash_saved;
  if (flash) {
    oh = FlashForward(c, q, k, v, scale, &flash_saved);
  } else {
    // Local query head h = k·R + r reads local K/V head k.
    qg = nb.Reshape(q, "BSKRZ", {z.B, z.S, z.K, z.R, z.Z});
    kj = nb.Rename(k, "BJKZ");
    vj = nb.Rename(v, "BJKV");
    Tensor scores = nb.Einsum("BSKRZ,BJKZ->BKRSJ", qg, kj, PrimitiveType::kF32);
    p = MaskedSoftmax(c, scores, scale);
    pc = nb.Convert(p, c.dtype());
    o = nb.Einsum("BKRSJ,BJKV->BSKRV", pc, vj);
    oh = nb.Reshape(o, "BSHV", {z.B, z.S, z.H, z.Z});
    nb.SaveForBackward("attention.p", "the probabilities the forward multiplied V with", pc);
  }
  Tensor y = SumOverTp(c, nb.Einsum("BSHV,HVD->BSD", oh, wo));
  nb.SaveForBackward("attention.o", "the attention output the forward projected with wo", oh);
  if (!backward) return {y};

  // Backward.
  const int64_t mark = l.backward_begin = nb.InstructionCount();
  Tensor dy = GatherSequence(c, dy_in);
  Tensor d_wo = nb.Einsum("BSHV,BSD->HVD", oh, dy);
  Tensor doh = nb.Einsum("BSD,HVD->BSHV", dy, wo);
  Tensor dq, dk, dv;
  if (flash) {
    FlashGrads g = FlashBackward(c, flash_saved, doh, scale);
    dq = g.dq;
    dk = g.dk;
    dv = g.dv;
  } else {
    Tensor dog = nb.Reshape(doh, "BSKRV", {z.B, z.S, z.K, z.R, z.Z});
    Tensor dp = nb.Einsum("BSKRV,BJKV->BKRSJ", dog, vj, PrimitiveType::kF32);
    dv = nb.Rename(nb.Einsum("BKRSJ,BSKRV->BJKV", pc, dog), "BSKV");
    Tensor delta = nb.Reduce(
        nb.Mul(nb.Convert(dog, PrimitiveType::kF32), nb.Convert(o, PrimitiveType::kF32)), "V");
    Tensor ds = SoftmaxGrad(c, p, dp, delta, scale);
    dq = nb.Reshape(nb.Einsum("BKRSJ,BJKZ->BSKRZ", ds, kj), "BSHZ", {z.B, z.S, z.H, z.Z});
    dk = nb.Rename(nb.Einsum("BKRSJ,BSKRZ->BJKZ", ds, qg), "BSKZ");
    nb.UseResidual("attention.p", pc, mark);
  }
  nb.UseResidual("attention.o", oh, mark);
  if (rope) {
    dq = ApplyRopeTranspose(nb, dq, tables, 'Z');
    dk = ApplyRopeTranspose(nb, dk, tables, 'Z');
  }
  Tensor d_q_norm, d_k_norm;
  if (a.qk_norm()) {
    std::tie(dq, d_q_norm) = RmsNormGrad(c, dq, q_norm, 'Z', q_saved);
    std::tie(dk, d_k_norm) = RmsNormGrad(c, dk, k_norm, 'Z', k_saved);
  }
  Tensor d_wq = nb.Einsum("BSD,BSHZ->DHZ", x, dq);
  Tensor d_wk = nb.Einsum("BSD,BSKZ->DKZ", x, dk);
  Tensor d_wv = nb.Einsum("BSD,BSKV->DKV", x, dv);
  if (z.kv_share > 1) {
    // The devices sharing a K/V head each hold the part of its gradient their query heads
    // gave.
    std::vector<std::vector<int64_t>> groups(tp / z.kv_share);
    for (int64_t d = 0; d < tp; ++d) groups[d / z.kv_share].push_back(d);
    d_wk = AllReduce(c, d_wk, groups);
    d_wv = AllReduce(c, d_wv, groups);
  }
  Tensor dx = nb.Add(nb.Add(nb.Einsum("BSHZ,DHZ->BSD", dq, wq), nb.Einsum("BSKZ,DKZ->BSD", dk, wk)),
                     nb.Einsum("BSKV,DKV->BSD", dv, wv));
  std::vector<Tensor> results = {y, SumOverTp(c, dx), d_wq, d_wk, d_wv, d_wo};
  if (a.qk_norm()) {
    // The norm scales are replicated; every device's heads add a part.
    results.push_back(AllReduce(c, d_q_norm));
    results.push_back(AllReduce(c, d_k_norm));
  }
  return results;
}

// ---- MLA (DeepSeek-V3).

std::vector<Tensor> LowerMla(Ctx& c, Lowering& l) {
  NamedBuilder& nb = c.nb;
  const AttentionLoweringSpec& s = c.spec;
  const AttentionSpec& a = s.attention;
  const MlaSpec& m = a.mla();
  const int64_t tp = s.tp;
  const int64_t B = s.batch, S = s.seq, D = s.d_model, Hg = a.num_query_heads(), H = Hg / tp;
  const int64_t A = m.q_lora_rank(), C = m.kv_lora_rank(), N = m.qk_nope_head_dim(),
                P = m.qk_rope_head_dim(), V = m.v_head_dim();
  const std::vector<MeshAxis> kTp = {MeshAxis::kTp};
  const bool backward = s.phase == Phase::kForwardBackward;
  const bool rope = HasRope(a, s.layer);
  const int64_t s_local = s.sequence_parallel ? S / tp : S;
  const std::vector<std::vector<MeshAxis>> act_split =
      s.sequence_parallel ? std::vector<std::vector<MeshAxis>>{{}, kTp, {}}
                          : std::vector<std::vector<MeshAxis>>{{}, {}, {}};

  Tensor x_in =
      l.Param("x", "BSD", {B, S, D}, {B, s_local, D}, act_split, Annotation::ROLE_ACTIVATION);
  Tensor wq_a, q_norm, wq_b, wq;
  if (A > 0) {
    wq_a = l.Param("wq_a", "DA", {D, A}, {D, A}, {{}, {}}, kTrained);
    q_norm = l.Param("q_norm", "A", {A}, {A}, {{}}, kTrained);
    wq_b = l.Param("wq_b", "AHQ", {A, Hg, N + P}, {A, H, N + P}, {{}, kTp, {}}, kTrained);
  } else {
    wq = l.Param("wq", "DHQ", {D, Hg, N + P}, {D, H, N + P}, {{}, kTp, {}}, kTrained);
  }
  Tensor wkv_a = l.Param("wkv_a", "DL", {D, C + P}, {D, C + P}, {{}, {}}, kTrained);
  Tensor kv_norm = l.Param("kv_norm", "C", {C}, {C}, {{}}, kTrained);
  Tensor wkv_b = l.Param("wkv_b", "CHW", {C, Hg, N + V}, {C, H, N + V}, {{}, kTp, {}}, kTrained);
  Tensor wo = l.Param("wo", "HVD", {Hg, V, D}, {H, V, D}, {kTp, {}, {}}, kTrained);
  Tensor dy_in;
  if (backward) {
    dy_in = l.Param("dy", "BSD", {B, S, D}, {B, s_local, D}, act_split, Annotation::ROLE_COTANGENT);
  }

  // Forward.
  Tensor x = GatherSequence(c, x_in);
  RmsNormSaved q_saved, kv_saved;
  Tensor cqn, q;
  if (A > 0) {
    cqn = RmsNorm(c, nb.Einsum("BSD,DA->BSA", x, wq_a), q_norm, 'A', &q_saved);
    q = nb.Einsum("BSA,AHQ->BSHQ", cqn, wq_b);
  } else {
    q = nb.Einsum("BSD,DHQ->BSHQ", x, wq);
  }
  Tensor q_nope = SliceAlong(nb, q, 'Q', 0, N, "BSHN");
  Tensor q_rope = SliceAlong(nb, q, 'Q', N, N + P, "BSHP");
  Tensor kv_a = nb.Einsum("BSD,DL->BSL", x, wkv_a);
  Tensor ckv = SliceAlong(nb, kv_a, 'L', 0, C, "BSC");
  Tensor k_rope = SliceAlong(nb, kv_a, 'L', C, C + P, "BSP");
  Tensor ckvn = RmsNorm(c, ckv, kv_norm, 'C', &kv_saved);
  Tensor kv = nb.Einsum("BSC,CHW->BSHW", ckvn, wkv_b);
  Tensor k_nope = SliceAlong(nb, kv, 'W', 0, N, "BJHN");
  Tensor v = SliceAlong(nb, kv, 'W', N, N + V, "BJHV");
  RopeTables tables;
  if (rope) {
    tables = MakeRopeTables(c, S, P, 'P');
    q_rope = ApplyRope(nb, q_rope, tables, 'P');
    k_rope = ApplyRope(nb, k_rope, tables, 'P');
  }
  Tensor kr = nb.Rename(k_rope, "BJP");
  const double scale = 1.0 / std::sqrt(static_cast<double>(N + P));
  const bool flash = s.kernel == AttentionKernel::kFlash;
  Tensor p, pc, o;
  FlashSaved flash_saved;
  if (flash) {
    // The kernel takes one key per head: [k_nope | k_rope], k_rope broadcast over the heads.
    Tensor q_full = nb.Concatenate({nb.Rename(q_nope, "BSHQ"), nb.Rename(q_rope, "BSHQ")}, 'Q');
    Tensor k_rope_h = nb.BroadcastTo(k_rope, "BSHP", {{'H', H}});
    Tensor k_full = nb.Concatenate({nb.Rename(k_nope, "BSHQ"), nb.Rename(k_rope_h, "BSHQ")}, 'Q');
    o = FlashForward(c, q_full, k_full, nb.Rename(v, "BSHV"), scale, &flash_saved);
  } else {
    // Scores over concat(nope, rope): the two parts' dot products added.
    Tensor scores = nb.Add(nb.Einsum("BSHN,BJHN->BHSJ", q_nope, k_nope, PrimitiveType::kF32),
                           nb.Einsum("BSHP,BJP->BHSJ", q_rope, kr, PrimitiveType::kF32));
    p = MaskedSoftmax(c, scores, scale);
    pc = nb.Convert(p, c.dtype());
    o = nb.Einsum("BHSJ,BJHV->BSHV", pc, v);
    nb.SaveForBackward("attention.p", "the probabilities the forward multiplied V with", pc);
  }
  Tensor y = SumOverTp(c, nb.Einsum("BSHV,HVD->BSD", o, wo));
  nb.SaveForBackward("attention.o", "the attention output the forward projected with wo", o);
  if (!backward) return {y};

  // Backward.
  const int64_t mark = l.backward_begin = nb.InstructionCount();
  Tensor dy = GatherSequence(c, dy_in);
  Tensor d_wo = nb.Einsum("BSHV,BSD->HVD", o, dy);
  Tensor d_o = nb.Einsum("BSD,HVD->BSHV", dy, wo);
  Tensor dq_nope, dq_rope, dk_nope, dk_rope, dv;
  if (flash) {
    FlashGrads g = FlashBackward(c, flash_saved, d_o, scale);
    dq_nope = SliceAlong(nb, g.dq, 'Q', 0, N, "BSHN");
    dq_rope = SliceAlong(nb, g.dq, 'Q', N, N + P, "BSHP");
    dk_nope = SliceAlong(nb, g.dk, 'Q', 0, N, "BSHW");
    // The transpose of the broadcast over the heads (partial over the devices, as below).
    dk_rope = nb.Reduce(SliceAlong(nb, g.dk, 'Q', N, N + P, "BSHP"), "H");
    dv = nb.Rename(g.dv, "BSHW");
  } else {
    Tensor dp = nb.Einsum("BSHV,BJHV->BHSJ", d_o, v, PrimitiveType::kF32);
    dv = nb.Rename(nb.Einsum("BHSJ,BSHV->BJHV", pc, d_o), "BSHW");
    Tensor delta = nb.Reduce(
        nb.Mul(nb.Convert(d_o, PrimitiveType::kF32), nb.Convert(o, PrimitiveType::kF32)), "V");
    Tensor ds = SoftmaxGrad(c, p, dp, delta, scale);
    nb.UseResidual("attention.p", pc, mark);
    dq_nope = nb.Einsum("BHSJ,BJHN->BSHN", ds, k_nope);
    dk_nope = nb.Rename(nb.Einsum("BHSJ,BSHN->BJHN", ds, q_nope), "BSHW");
    dq_rope = nb.Einsum("BHSJ,BJP->BSHP", ds, kr);
    // Partial over the devices: each contracted only its own heads.
    dk_rope = nb.Rename(nb.Einsum("BHSJ,BSHP->BJP", ds, q_rope), "BSP");
  }
  nb.UseResidual("attention.o", o, mark);
  if (rope) {
    dq_rope = ApplyRopeTranspose(nb, dq_rope, tables, 'P');
    dk_rope = ApplyRopeTranspose(nb, dk_rope, tables, 'P');
  }
  Tensor dq = nb.Concatenate({nb.Rename(dq_nope, "BSHQ"), nb.Rename(dq_rope, "BSHQ")}, 'Q');
  Tensor dkv = nb.Concatenate({dk_nope, dv}, 'W');
  Tensor d_wkv_b = nb.Einsum("BSC,BSHW->CHW", ckvn, dkv);
  auto [dckv, d_kv_norm] =
      RmsNormGrad(c, nb.Einsum("BSHW,CHW->BSC", dkv, wkv_b), kv_norm, 'C', kv_saved);
  Tensor dkv_a = nb.Concatenate({nb.Rename(dckv, "BSL"), nb.Rename(dk_rope, "BSL")}, 'L');
  // The replicated down projections and norms: every device's heads add a part.
  Tensor d_wkv_a = AllReduce(c, nb.Einsum("BSD,BSL->DL", x, dkv_a));
  Tensor dx = nb.Einsum("BSL,DL->BSD", dkv_a, wkv_a);
  std::vector<Tensor> q_grads;
  if (A > 0) {
    Tensor d_wq_b = nb.Einsum("BSA,BSHQ->AHQ", cqn, dq);
    auto [dcq, d_q_norm] =
        RmsNormGrad(c, nb.Einsum("BSHQ,AHQ->BSA", dq, wq_b), q_norm, 'A', q_saved);
    Tensor d_wq_a = AllReduce(c, nb.Einsum("BSD,BSA->DA", x, dcq));
    dx = nb.Add(dx, nb.Einsum("BSA,DA->BSD", dcq, wq_a));
    q_grads = {d_wq_a, AllReduce(c, d_q_norm), d_wq_b};
  } else {
    q_grads = {nb.Einsum("BSD,BSHQ->DHQ", x, dq)};
    dx = nb.Add(dx, nb.Einsum("BSHQ,DHQ->BSD", dq, wq));
  }
  std::vector<Tensor> results = {y, SumOverTp(c, dx)};
  results.insert(results.end(), q_grads.begin(), q_grads.end());
  for (const Tensor& t : {d_wkv_a, AllReduce(c, d_kv_norm), d_wkv_b, d_wo}) results.push_back(t);
  return results;
}

}  // namespace

AttentionLoweringSpec AttentionLoweringSpec::FromModel(const ModelConfig& model, int64_t layer,
                                                       int64_t batch, int64_t seq) {
  AttentionLoweringSpec spec;
  spec.attention = model.attention();
  spec.d_model = model.d_model();
  spec.layer = layer;
  spec.batch = batch;
  spec.seq = seq;
  spec.dtype = PrimitiveTypeOfDType(model.proto().activation_dtype());
  if (model.proto().norm().has_epsilon()) spec.norm_epsilon = model.proto().norm().epsilon();
  return spec;
}

absl::Status AttentionLoweringSpec::Validate() const {
  std::vector<std::string> errors;
  auto expect = [&](bool ok, const std::string& message) {
    if (!ok) errors.push_back(message);
  };
  const AttentionSpec& a = attention;
  const bool mla = a.kind() == ATTENTION_KIND_MLA;
  expect(a.kind() == ATTENTION_KIND_GQA || mla,
         absl::StrCat("attention.kind: expected GQA or MLA; got ", AttentionKind_Name(a.kind())));
  expect(d_model > 0, absl::StrCat("d_model: expected > 0; got ", d_model));
  expect(batch > 0, absl::StrCat("batch: expected > 0; got ", batch));
  expect(seq > 0, absl::StrCat("seq: expected > 0; got ", seq));
  expect(layer >= 0, absl::StrCat("layer: expected >= 0; got ", layer));
  expect(tp > 0, absl::StrCat("tp: expected > 0; got ", tp));
  const int64_t H = a.num_query_heads(), Hkv = a.num_kv_heads();
  expect(H > 0, absl::StrCat("attention.num_query_heads: expected > 0; got ", H));
  expect(Hkv > 0 && H % std::max<int64_t>(Hkv, 1) == 0,
         absl::StrCat("attention.num_kv_heads: expected a divisor of the ", H, " query heads; got ",
                      Hkv));
  if (tp > 0 && H > 0) {
    expect(H % tp == 0,
           absl::StrCat("tp: expected a divisor of the ", H, " query heads; got ", tp));
  }
  if (tp > 0 && Hkv > 0 && !mla) {
    if (Hkv >= tp) {
      expect(Hkv % tp == 0, absl::StrCat("tp: expected a divisor of the ", Hkv,
                                         " K/V heads (as many or more than tp); got ", tp));
    } else {
      expect(tp % Hkv == 0, absl::StrCat("tp: expected a multiple of the ", Hkv,
                                         " K/V heads (fewer than tp); got ", tp));
    }
  }
  if (sequence_parallel && tp > 0 && seq > 0) {
    expect(seq % tp == 0, absl::StrCat("seq: expected a multiple of tp = ", tp,
                                       " under sequence parallelism; got ", seq));
  }
  if (mla) {
    const MlaSpec& m = a.mla();
    expect(Hkv == H, absl::StrCat("attention.num_kv_heads: expected the ", H,
                                  " query heads under MLA; got ", Hkv));
    expect(m.q_lora_rank() >= 0,
           absl::StrCat("attention.mla.q_lora_rank: expected >= 0; got ", m.q_lora_rank()));
    expect(m.kv_lora_rank() > 0,
           absl::StrCat("attention.mla.kv_lora_rank: expected > 0; got ", m.kv_lora_rank()));
    expect(
        m.qk_nope_head_dim() > 0,
        absl::StrCat("attention.mla.qk_nope_head_dim: expected > 0; got ", m.qk_nope_head_dim()));
    expect(m.qk_rope_head_dim() > 0 && m.qk_rope_head_dim() % 2 == 0,
           absl::StrCat("attention.mla.qk_rope_head_dim: expected an even width > 0; got ",
                        m.qk_rope_head_dim()));
    expect(m.v_head_dim() > 0,
           absl::StrCat("attention.mla.v_head_dim: expected > 0; got ", m.v_head_dim()));
    expect(!a.qk_norm(), "attention.qk_norm: expected false under MLA; got true");
  } else {
    const bool rope = HasRope(a, layer);
    expect(a.head_dim() > 0 && (!rope || a.head_dim() % 2 == 0),
           absl::StrCat("attention.head_dim: expected ", rope ? "an even width" : "a width",
                        " > 0; got ", a.head_dim()));
  }
  const AttentionScope scope = layer >= 0 ? ScopeOf(a, layer) : ATTENTION_SCOPE_GLOBAL;
  if (scope == ATTENTION_SCOPE_SLIDING_WINDOW || scope == ATTENTION_SCOPE_CHUNKED) {
    expect(a.local_window_tokens() > 0,
           absl::StrCat("attention.local_window_tokens: expected > 0 for a ",
                        AttentionScope_Name(scope), " layer; got ", a.local_window_tokens()));
  }
  expect(!a.has_bias(),
         "attention.has_bias: expected false (attention biases are not lowered); "
         "got true");
  expect(!a.has_sinks(),
         "attention.has_sinks: expected false (attention sinks are not lowered); "
         "got true");
  if (kernel == AttentionKernel::kFlash) {
    for (const auto& [name, block] :
         {std::pair<const char*, int64_t>{"flash_block_q", flash_block_q},
          std::pair<const char*, int64_t>{"flash_block_kv", flash_block_kv}}) {
      expect(block > 0 && seq > 0 && seq % block == 0,
             absl::StrCat(name, ": expected a divisor of seq = ", seq, "; got ", block));
    }
  }
  expect(norm_epsilon >= 0, absl::StrCat("norm_epsilon: expected >= 0; got ", norm_epsilon));
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

absl::StatusOr<LoweredLayer> LowerAttention(const AttentionLoweringSpec& spec) {
  PERFSIM_RETURN_IF_ERROR(spec.Validate());
  const bool mla = spec.attention.kind() == ATTENTION_KIND_MLA;
  const bool backward = spec.phase == Phase::kForwardBackward;
  LoweredLayer layer;
  ResidualTable residuals;
  ModuleBuilder mb(absl::StrCat("attention_", mla ? "mla" : "gqa", "_", PhaseName(spec.phase)));
  ComputationBuilder& entry = mb.Entry("main");
  NamedBuilder nb(mb, entry, &layer.dim_names, &residuals);
  if (spec.fp8_gemms) nb.set_gemm_type(PrimitiveType::kF8E4M3FN);
  Ctx c{.spec = spec, .nb = nb};
  Lowering l{.c = c, .layer = layer};
  mb.SetOpNameScope("attention");
  std::vector<Tensor> results = mla ? LowerMla(c, l) : LowerGqa(c, l);

  // Outputs: y like x, then the gradients like their parameters.
  const TensorSpec& x = layer.parameters.front();
  layer.outputs.push_back(
      TensorSpec{"y", x.dims, x.global_dims, x.type, x.split, Annotation::ROLE_UNSPECIFIED});
  if (backward) {
    for (const TensorSpec& t : layer.parameters) {
      if (t.role == Annotation::ROLE_COTANGENT) continue;
      TensorSpec g = t;
      g.name = absl::StrCat(t.role == Annotation::ROLE_ACTIVATION ? "d" : "d_", t.name);
      g.role = Annotation::ROLE_UNSPECIFIED;
      layer.outputs.push_back(std::move(g));
    }
  }
  if (mb.status().ok()) {
    std::vector<Instruction*> ops;
    for (const Tensor& t : results) ops.push_back(t.op);
    entry.SetRoot(entry.Tuple(std::move(ops)));
  }
  mb.SetOpNameScope("");
  // Block and phase on every entry instruction: the backward is what follows its first
  // instruction, and the cotangent parameter.
  const auto& instructions = entry.computation()->instructions();
  const size_t backward_begin =
      l.backward_begin < 0 ? instructions.size() : static_cast<size_t>(l.backward_begin);
  for (size_t i = 0; i < instructions.size(); ++i) {
    Instruction* op = instructions[i].get();
    const bool cotangent =
        op->annotation() != nullptr && op->annotation()->role() == Annotation::ROLE_COTANGENT;
    UpdateAnnotation(op, [&](Annotation& a) {
      a.set_block(Annotation::BLOCK_ATTENTION);
      a.set_phase(i >= backward_begin || cotangent ? Annotation::PHASE_BACKWARD
                                                   : Annotation::PHASE_FORWARD);
    });
  }
  absl::StatusOr<std::unique_ptr<Module>> module = mb.Build();
  if (!module.ok()) return Annotate(module.status(), "lowering attention");
  layer.module = *std::move(module);
  if (spec.tp > 1) layer.module->AddHeaderAttribute("num_partitions", absl::StrCat(spec.tp));
  return layer;
}

}  // namespace perfsim
