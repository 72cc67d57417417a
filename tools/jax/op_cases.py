"""Small golden modules, one per opcode family.

Each case is a tiny JAX function with fixed inputs (numpy default_rng with a
per-case seed). Sizes are a few dozen elements so the .npy files stay small.
Where the semantics are subtle (ragged dot, sort, scatter with duplicates,
collectives) the case also carries an independent numpy reference that the
generator checks the JAX outputs against.
"""

from __future__ import annotations

import zlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

import moe_models
from golden_lib import Case

_AXIS = "x"
_DEVICES = 8


def _rng(name: str) -> np.random.Generator:
  return np.random.default_rng(zlib.crc32(name.encode()))


def _normal(rng, shape, dtype=np.float32):
  return rng.standard_normal(shape).astype(dtype)


# --- elementwise -----------------------------------------------------------


def _elementwise_cases():
  rng = _rng("elementwise")
  x = _normal(rng, (4, 8))
  y = _normal(rng, (4, 8))
  i = rng.integers(-50, 50, (4, 8)).astype(np.int32)
  j = rng.integers(1, 9, (4, 8)).astype(np.int32)  # nonzero, valid shift
  bx = _normal(rng, (4, 8), ml_dtypes.bfloat16)
  by = _normal(rng, (4, 8), ml_dtypes.bfloat16)

  def unary(x):
    pos = jnp.abs(x) + 0.5
    return (-x, jnp.abs(x), jnp.exp(x), jnp.log(pos), jnp.sqrt(pos),
            lax.rsqrt(pos), jnp.tanh(x), jax.nn.sigmoid(x), jnp.sin(x),
            jnp.cos(x), jnp.floor(x), jnp.ceil(x), jnp.sign(x), jnp.expm1(x),
            jnp.log1p(pos), lax.erf(x), jnp.round(x), lax.cbrt(x),
            jnp.isfinite(x / (x - x[0, 0])))

  def binary(x, y):
    return (x + y, x - y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, y),
            jnp.power(jnp.abs(x) + 0.5, y), jnp.arctan2(x, y), lax.rem(x, y))

  def bf16(a, b):
    return (a + b, a * b, a - b, a / b, jnp.exp(a), jnp.tanh(b),
            jnp.maximum(a, b), jax.nn.silu(a))

  def integer(a, b):
    return (a + b, a - b, a * b, lax.div(a, b), lax.rem(a, b), a & b, a | b,
            a ^ b, ~a, lax.shift_left(a, b), lax.shift_right_arithmetic(a, b),
            lax.shift_right_logical(a, b), jnp.maximum(a, b),
            jnp.minimum(a, b), jnp.abs(a), -a, lax.population_count(a),
            lax.clz(a))

  return [
      Case("elementwise_unary_f32",
           "f32 unary ops: negate abs exp log sqrt rsqrt tanh logistic sin"
           " cos floor ceil sign expm1 log1p erf round cbrt is-finite",
           unary, [x], ["x"]),
      Case("elementwise_binary_f32",
           "f32 binary ops: add subtract multiply divide maximum minimum power"
           " atan2 remainder", binary, [x, y], ["x", "y"]),
      Case("elementwise_bf16",
           "bf16 elementwise ops (computed in bf16, outputs bf16)", bf16,
           [bx, by], ["a", "b"]),
      Case("elementwise_s32",
           "s32 ops: add subtract multiply divide remainder and or xor not"
           " shifts maximum minimum abs negate popcnt clz", integer, [i, j],
           ["a", "b"]),
  ]


def _compare_convert_cases():
  rng = _rng("compare")
  x = _normal(rng, (4, 8))
  y = np.where(rng.random((4, 8)) < 0.3, x, _normal(rng, (4, 8)))
  k = rng.integers(0, 3, (4, 8)).astype(np.int32)
  big = np.clip(rng.standard_normal((4, 8)) * 100, -440, 440).astype(
      np.float32)  # f8e4m3fn saturates at 448
  ints = rng.integers(-1000, 1000, (4, 8)).astype(np.int32)
  bools = rng.random((4, 8)) < 0.5
  halves = _normal(rng, (4, 8), ml_dtypes.bfloat16)

  def compare_select(x, y, k):
    lt = x < y
    return (x == y, x != y, lt, x <= y, x > y, x >= y,
            jnp.where(lt, x, y), jnp.clip(x, -0.5, 0.75),
            lax.clamp(-1.0, x, 1.0), jnp.logical_and(lt, x > 0),
            jnp.logical_or(lt, x > 0), jnp.logical_not(lt),
            lax.select_n(k, x, y, x * y))

  def convert(x, i, p, h):
    return (x.astype(jnp.bfloat16), x.astype(jnp.float8_e4m3fn),
            i.astype(jnp.float32), x.astype(jnp.int32), h.astype(jnp.float32),
            p.astype(jnp.float32), i.astype(jnp.bfloat16), x.astype(jnp.float16))

  def bit_ops(x):
    return (lax.bitcast_convert_type(x, jnp.uint32),
            lax.bitcast_convert_type(x, jnp.int32),
            lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
            lax.optimization_barrier(x * 2.0))

  return [
      Case("compare_select_clamp",
           "compare (all directions), select, clamp, and/or/not on pred,"
           " select_n with 3 cases", compare_select, [x, y, k],
           ["x", "y", "case"]),
      Case("convert",
           "convert f32->bf16, f32->f8e4m3fn, s32->f32, f32->s32, bf16->f32,"
           " pred->f32, s32->bf16, f32->f16", convert,
           [big, ints, bools, halves], ["x", "i", "p", "h"]),
      Case("bitcast_reduce_precision",
           "bitcast-convert f32->u32/s32, reduce-precision to bf16 precision,"
           " opt-barrier", bit_ops, [x], ["x"]),
  ]


# --- shape and data movement ----------------------------------------------


def _shape_cases():
  rng = _rng("shape")
  x = _normal(rng, (2, 3, 4))
  v = _normal(rng, (4,))
  m = _normal(rng, (6, 8))
  u = _normal(rng, (2, 3))
  start = np.array(3, np.int32)

  def reshape_family(x, v):
    return (jnp.broadcast_to(v, (3, 4)), lax.broadcast_in_dim(v, (4, 2, 5),
                                                              (0,)),
            x.reshape(6, 4), jnp.transpose(x, (2, 0, 1)), x[:, None, :, :],
            jnp.swapaxes(x, 0, 2).reshape(-1))

  def slicing(m, u, start):
    return (lax.slice(m, (1, 0), (5, 8), (2, 3)),
            lax.dynamic_slice(m, (start, start - 1), (2, 4)),
            lax.dynamic_update_slice(m, u, (start, 2 * start - 1)),
            jnp.concatenate([m, m * 2.0], axis=1),
            lax.pad(m, 0.5, ((1, -2, 0), (2, 1, 1))),
            lax.rev(m, (0,)))

  return [
      Case("broadcast_reshape_transpose",
           "broadcast (scalar-free and with dims), reshape, transpose,"
           " expand dims", reshape_family, [x, v], ["x", "v"]),
      Case("slice_concat_pad",
           "slice with strides, dynamic-slice, dynamic-update-slice (start"
           " from a parameter), concatenate, pad (negative low, interior),"
           " reverse", slicing, [m, u, start], ["m", "update", "start"]),
  ]


def _reduce_cases():
  rng = _rng("reduce")
  x = _normal(rng, (4, 6, 5))
  i = rng.integers(-9, 9, (4, 6)).astype(np.int32)
  img = _normal(rng, (1, 6, 6, 2))

  def reduces(x, i):
    return (jnp.sum(x, axis=1), jnp.max(x, axis=(0, 2)), jnp.min(x),
            jnp.prod(x[0], axis=0), jnp.argmax(x, axis=2),
            jnp.argmin(x[:, :, 0], axis=0), jnp.any(i > 5, axis=1),
            jnp.sum(i, axis=0), jnp.mean(x, axis=-1))

  def windows(x, img):
    pool = lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1),
                                       (1, 2, 2, 1), "VALID")
    return (jnp.cumsum(x, axis=1), lax.cummax(x, axis=2),
            jnp.cumprod(x[:, :, 0], axis=0),
            pool(img),
            lax.reduce_window(img, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1),
                              ((0, 0), (1, 1), (1, 1), (0, 0))),
            jax.grad(lambda a: jnp.sum(pool(a) ** 2))(img))

  return [
      Case("reduce",
           "reduce: sum, max over two dims, min over all, prod, variadic"
           " argmax/argmin (value+index reduce), any on pred, s32 sum, mean",
           reduces, [x, i], ["x", "i"]),
      Case("reduce_window_cumsum",
           "reduce-window: cumsum, cummax, cumprod, 2x2 max pool, padded 3x3"
           " sum window, and the max-pool gradient (select-and-scatter)",
           windows, [x, img], ["x", "image"]),
  ]


# --- dot and ragged dot ----------------------------------------------------


def _dot_cases():
  rng = _rng("dot")
  a = _normal(rng, (3, 4, 5))
  b = _normal(rng, (3, 5, 6))
  c = _normal(rng, (2, 3, 4))
  d = _normal(rng, (4, 3, 7))
  ha = _normal(rng, (4, 8), ml_dtypes.bfloat16)
  hb = _normal(rng, (8, 5), ml_dtypes.bfloat16)

  def dots(a, b, c, d, ha, hb):
    return (jnp.einsum("bij,bjk->bik", a, b),
            lax.dot_general(c, d, (((1, 2), (1, 0)), ((), ()))),
            a[0] @ b[0, :, 0],
            lax.dot_general(ha, hb, (((1,), (0,)), ((), ())),
                            preferred_element_type=jnp.float32),
            jnp.einsum("bij,bkj->bki", a, a))

  def expected(args):
    a, b, c, d, ha, hb = (np.asarray(t, np.float64) for t in args)
    return [np.einsum("bij,bjk->bik", a, b), np.einsum("xij,jiy->xy", c, d),
            a[0] @ b[0, :, 0], ha @ hb, np.einsum("bij,bkj->bki", a, a)]

  return [
      Case("dot_general",
           "dot: batch matmul, two contracting dims, matrix-vector, bf16"
           " operands with f32 result, batch dims with transposed rhs", dots,
           [a, b, c, d, ha, hb], ["a", "b", "c", "d", "ha", "hb"],
           expected=expected, expected_tolerance=1e-4),
  ]


def _ragged_reference_rows(group_sizes, rows):
  """Group id of each row; -1 for rows past sum(group_sizes)."""
  ids = np.full(rows, -1)
  start = 0
  for g, size in enumerate(group_sizes):
    ids[start:start + int(size)] = g
    start += int(size)
  return ids


def _ragged_dot_cases():
  rng = _rng("ragged_dot")
  m, k, n, g = 12, 5, 7, 4
  # An empty group and a tail of rows past sum(group_sizes) (which must be 0).
  sizes = np.array([3, 0, 5, 2], np.int32)
  lhs = _normal(rng, (m, k))
  rhs = _normal(rng, (g, k, n))
  dy = _normal(rng, (m, n))
  blhs = _normal(rng, (g, 3, k))
  brhs = _normal(rng, (g, k, n))
  bsizes = np.array([1, 1, 1, 1], np.int32)

  def dnums(contract, batch, ragged, group):
    return lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=(contract, batch),
        lhs_ragged_dimensions=ragged, rhs_group_dimensions=group)

  noncontracting = dnums(([1], [1]), ([], []), [0], [0])
  dlhs = dnums(([1], [2]), ([], []), [0], [0])
  contracting = dnums(([0], [0]), ([], []), [0], [])
  batch = dnums(([2], [1]), ([0], [0]), [0], [])

  def ref_noncontracting(args):
    lhs, rhs, sizes = args
    ids = _ragged_reference_rows(sizes, lhs.shape[0])
    out = np.zeros((lhs.shape[0], rhs.shape[2]))
    for r, gid in enumerate(ids):
      if gid >= 0:
        out[r] = lhs[r].astype(np.float64) @ rhs[gid]
    return [out]

  def ref_dlhs(args):
    dy, rhs, sizes = args
    ids = _ragged_reference_rows(sizes, dy.shape[0])
    out = np.zeros((dy.shape[0], rhs.shape[1]))
    for r, gid in enumerate(ids):
      if gid >= 0:
        out[r] = rhs[gid].astype(np.float64) @ dy[r]
    return [out]

  def ref_contracting(args):
    lhs, dy, sizes = args
    ids = _ragged_reference_rows(sizes, lhs.shape[0])
    out = np.zeros((len(sizes), lhs.shape[1], dy.shape[1]))
    for gid in range(len(sizes)):
      rows = ids == gid
      out[gid] = lhs[rows].T.astype(np.float64) @ dy[rows]
    return [out]

  def ref_batch(args):
    blhs, brhs, _ = args
    return [np.einsum("bmk,bkn->bmn", blhs.astype(np.float64), brhs)]

  def case(name, desc, dn, args, names, ref):
    fn = lambda a, b, s: lax.ragged_dot_general(a, b, s, dn)
    return Case(name, desc, fn, args, names, expected=ref,
                expected_tolerance=1e-5,
                notes="group_sizes [3,0,5,2] over 12 rows: an empty group and"
                " 2 trailing rows outside every group" if dn is not batch
                else "group_sizes [1,1,1,1] over the batch dimension")

  return [
      case("ragged_dot_noncontracting",
           "ragged-dot mode 1 (forward GMM): lhs [m,k] ragged in m, rhs"
           " [g,k,n] -> [m,n]", noncontracting, [lhs, rhs, sizes],
           ["lhs", "rhs", "group_sizes"], ref_noncontracting),
      case("ragged_dot_dlhs",
           "ragged-dot mode 1, dlhs form: dy [m,n] x rhs [g,k,n] contracting"
           " n -> [m,k]", dlhs, [dy, rhs, sizes],
           ["dy", "rhs", "group_sizes"], ref_dlhs),
      case("ragged_dot_contracting",
           "ragged-dot mode 2 (weight gradient / tgmm): lhs [m,k], rhs [m,n]"
           " ragged in the contracting m -> [g,k,n]", contracting,
           [lhs, dy, sizes], ["lhs", "rhs", "group_sizes"], ref_contracting),
      case("ragged_dot_batch",
           "ragged-dot mode 3: ragged batch dimension, lhs [b,m,k], rhs"
           " [b,k,n] -> [b,m,n]; XLA turns it into a plain batched dot"
           " (a ragged batch dim does not change the result)", batch, [blhs, brhs, bsizes],
           ["lhs", "rhs", "group_sizes"], ref_batch),
  ]


# --- sort, gather, scatter, top-k -------------------------------------------


def _sort_gather_cases():
  rng = _rng("sort")
  keys = rng.integers(0, 4, (3, 10)).astype(np.int32)  # many duplicates
  vals = _normal(rng, (3, 10))
  fkeys = np.round(_normal(rng, (2, 9)), 1)
  table = _normal(rng, (6, 4))
  rows = rng.integers(0, 6, (5,)).astype(np.int32)
  cols = rng.integers(0, 4, (6, 3)).astype(np.int32)
  dup = np.array([0, 2, 2, 5, 0, 2], np.int32)
  upd = _normal(rng, (6, 4))
  scores = _normal(rng, (4, 16))

  def sorts(keys, vals, fkeys):
    k_sorted, v_sorted, pos = lax.sort(
        (keys, vals, lax.broadcasted_iota(jnp.int32, keys.shape, 1)),
        dimension=1, is_stable=True, num_keys=1)
    return (k_sorted, v_sorted, pos, jnp.sort(fkeys, axis=0),
            jnp.argsort(keys, axis=1, stable=True),
            jnp.argsort(fkeys, axis=1, descending=True))

  def sort_expected(args):
    keys, vals, fkeys = args
    order = np.argsort(keys, axis=1, kind="stable")
    desc = np.argsort(-fkeys, axis=1, kind="stable")
    return [np.take_along_axis(keys, order, 1),
            np.take_along_axis(vals, order, 1), order, np.sort(fkeys, axis=0),
            order, desc]

  def gathers(table, rows, cols):
    return (table[rows], jnp.take_along_axis(table, cols[:, :2], axis=1),
            table[rows[:3], rows[1:4] % 4], jnp.take(table, cols, axis=1),
            table[2:5:2, 1])

  def gather_expected(args):
    table, rows, cols = args
    return [table[rows], np.take_along_axis(table, cols[:, :2], axis=1),
            table[rows[:3], rows[1:4] % 4], np.take(table, cols, axis=1),
            table[2:5:2, 1]]

  def scatters(table, dup, upd):
    return (table.at[dup].add(upd), table.at[jnp.array([4, 1, 3])].set(
        upd[:3]), table.at[dup].max(upd), table.at[dup].mul(upd),
            jax.ops.segment_sum(upd, dup, num_segments=6))

  def scatter_expected(args):
    table, dup, upd = args
    add, mx, mul, seg = (table.astype(np.float64).copy() for _ in range(4))
    seg[:] = 0
    for r, d in enumerate(dup):
      add[d] += upd[r]
      mx[d] = np.maximum(mx[d], upd[r])
      mul[d] *= upd[r]
      seg[d] += upd[r]
    setv = table.copy()
    setv[[4, 1, 3]] = upd[:3]
    return [add, setv, mx, mul, seg]

  def topk(scores):
    return lax.top_k(scores, 3) + lax.top_k(scores[0], 5)

  def topk_expected(args):
    (s,) = args
    order = np.argsort(-s, axis=1, kind="stable")[:, :3]
    order1 = np.argsort(-s[0], kind="stable")[:5]
    return [np.take_along_axis(s, order, 1), order, s[0][order1], order1]

  return [
      Case("sort_multi_operand",
           "sort: stable 3-operand sort with 1 key (duplicate keys), f32"
           " sort along dim 0, argsort ascending and descending", sorts,
           [keys, vals, fkeys], ["keys", "values", "fkeys"],
           expected=sort_expected),
      Case("gather",
           "gather: row indexing, take_along_axis, point gather, take with 2-D"
           " indices along axis 1, strided static index", gathers,
           [table, rows, cols], ["table", "rows", "cols"],
           expected=gather_expected),
      Case("scatter",
           "scatter: .at[].add with duplicate indices, .at[].set, .at[].max,"
           " .at[].mul, segment_sum", scatters, [table, dup, upd],
           ["table", "indices", "updates"], expected=scatter_expected),
      Case("top_k",
           "topk: k=3 over the last dim of [4,16], k=5 over a vector", topk,
           [scores], ["scores"], expected=topk_expected),
  ]


# --- iota, control flow, custom derivatives --------------------------------


def _control_cases():
  rng = _rng("control")
  x = _normal(rng, (3, 4))
  pred_true = np.array(True)
  index = np.array(2, np.int32)

  def iotas(x):
    return (lax.iota(jnp.int32, 8),
            lax.broadcasted_iota(jnp.float32, (3, 4), 1),
            x + jnp.arange(4, dtype=jnp.float32) * 0.5 - 1.0)

  def loops(x):
    def body(carry):
      value, count = carry
      return value * 0.5, count + 1

    halved, count = lax.while_loop(
        lambda c: jnp.sum(jnp.abs(c[0])) > 1.0, body, (x, jnp.int32(0)))
    summed = lax.fori_loop(0, 5, lambda i, acc: acc + x * i, jnp.zeros_like(x))
    return halved, count, summed

  def branches(x, p, i):
    c = lax.cond(p, lambda a: jnp.sin(a), lambda a: jnp.cos(a), x)
    s = lax.switch(i, [lambda a: a + 1.0, lambda a: a * 2.0,
                       lambda a: jnp.exp(a)], x)
    return c, s

  @jax.custom_jvp
  def softplus(a):
    return jnp.logaddexp(a, 0.0)

  @softplus.defjvp
  def _softplus_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    return softplus(a), da * jax.nn.sigmoid(a)

  @jax.custom_vjp
  def clip_grad(a):
    return a

  clip_grad.defvjp(lambda a: (a, None),
                   lambda _, g: (jnp.clip(g, -0.1, 0.1),))

  def custom(x):
    return (softplus(x), jax.grad(lambda a: jnp.sum(softplus(a) ** 2))(x),
            jax.grad(lambda a: jnp.sum(clip_grad(a) ** 3))(x))

  return [
      Case("iota", "iota: s32 vector, f32 broadcasted along dim 1, arange"
           " folded into arithmetic", iotas, [x], ["x"]),
      Case("while_fori_loop",
           "while with a data-dependent condition and tuple carry; fori_loop"
           " with a fixed trip count", loops, [x], ["x"]),
      Case("cond_switch",
           "conditional: cond on a pred parameter, 3-way switch on an s32"
           " parameter", branches, [x, pred_true, index],
           ["x", "pred", "index"]),
      Case("custom_jvp_vjp",
           "custom_jvp softplus (value and grad) and custom_vjp gradient"
           " clipping", custom, [x], ["x"]),
  ]


# --- collectives under shard_map -------------------------------------------


def _collective_cases():
  mesh = jax.make_mesh((_DEVICES,), (_AXIS,))
  rng = _rng("collectives")
  x = _normal(rng, (_DEVICES * 2, 4))      # [2, 4] per device
  big = _normal(rng, (_DEVICES * 16, 3))   # [16, 3] per device
  row = P(_AXIS)

  def smap(body, n_in, out_specs):
    return jax.shard_map(body, mesh=mesh, in_specs=(row,) * n_in,
                         out_specs=out_specs)

  # Each device ends with the whole array; the global result stacks the 8
  # identical copies (JAX cannot type all_gather's result as replicated).
  all_gather = smap(lambda a: lax.all_gather(a, _AXIS, tiled=True), 1, row)
  all_reduce = smap(lambda a: (lax.psum(a, _AXIS), lax.pmax(a, _AXIS)), 1,
                    (P(), P()))
  reduce_scatter = smap(
      lambda a: lax.psum_scatter(a, _AXIS, scatter_dimension=0, tiled=True),
      1, row)
  all_to_all = smap(
      lambda a: lax.all_to_all(a, _AXIS, split_axis=0, concat_axis=1,
                               tiled=True), 1, row)
  ring = [(i, (i + 1) % _DEVICES) for i in range(_DEVICES)]
  pairs = [(0, 3), (3, 0), (5, 6)]  # devices nobody sends to get zeros
  permute = smap(lambda a: (lax.ppermute(a, _AXIS, ring),
                            lax.ppermute(a, _AXIS, pairs)), 1, (row, row))

  def split(a):
    return np.split(np.asarray(a, np.float64), _DEVICES)

  def ag_expected(args):
    return [np.concatenate([args[0]] * _DEVICES)]

  def ar_expected(args):
    parts = split(args[0])
    return [sum(parts), np.max(parts, axis=0)]

  def rs_expected(args):
    return [sum(split(args[0]))]

  def a2a_expected(args):
    parts = split(args[0])  # device d: [16, 3] -> 8 chunks of [2, 3]
    out = []
    for d in range(_DEVICES):
      out.append(np.concatenate(
          [parts[s][2 * d:2 * d + 2] for s in range(_DEVICES)], axis=1))
    return [np.concatenate(out)]

  def permute_expected(args):
    parts = split(args[0])
    ring_out = [parts[(d - 1) % _DEVICES] for d in range(_DEVICES)]
    pair_out = [np.zeros_like(parts[0]) for _ in range(_DEVICES)]
    for src, dst in pairs:
      pair_out[dst] = parts[src]
    return [np.concatenate(ring_out), np.concatenate(pair_out)]

  common = dict(mesh=mesh)
  return [
      Case("collective_all_gather",
           "all-gather (tiled) of [2,4] per device over 8 devices", all_gather,
           [x], ["x"], in_specs=[row], expected=ag_expected, **common),
      Case("collective_all_reduce",
           "all-reduce: psum and pmax over 8 devices", all_reduce, [x], ["x"],
           in_specs=[row], expected=ar_expected, **common),
      Case("collective_reduce_scatter",
           "reduce-scatter: psum_scatter (tiled, dim 0) of [16,3] per device",
           reduce_scatter, [big], ["x"], in_specs=[row],
           expected=rs_expected, **common),
      Case("collective_all_to_all",
           "all-to-all: split dim 0 ([16,3] per device), concat dim 1",
           all_to_all, [big], ["x"], in_specs=[row], expected=a2a_expected,
           **common),
      Case("collective_permute",
           "collective-permute: full ring shift and a partial permutation"
           " (unreached devices get zeros)", permute, [x], ["x"],
           in_specs=[row], expected=permute_expected, **common),
      _ragged_all_to_all_case(mesh),
  ]


def _ragged_all_to_all_case(mesh):
  """Random traffic with empty slices, receiver-side chunks placed in reverse
  sender order, and an output buffer of -1 so unwritten rows are visible."""
  rng = _rng("ragged_all_to_all")
  rows_in, rows_out, width = 8, 10, 3
  while True:
    traffic = rng.integers(0, 3, (_DEVICES, _DEVICES))
    if (traffic.sum(1).max() <= rows_in and traffic.sum(0).max() <= rows_out
        and (traffic == 0).any()):
      break
  input_offsets = np.cumsum(traffic, axis=1) - traffic       # [src, dst]
  # Chunk from src lands at dst after the chunks of all senders > src.
  output_offsets = np.flip(np.cumsum(np.flip(traffic, 0), axis=0), 0) - traffic
  send_sizes = traffic
  recv_sizes = traffic.T                                     # [dst, src]
  operand = _normal(rng, (_DEVICES * rows_in, width))
  output = np.full((_DEVICES * rows_out, width), -1.0, np.float32)
  flat = lambda a: a.reshape(-1).astype(np.int32)
  args = [operand, output, flat(input_offsets), flat(send_sizes),
          flat(output_offsets), flat(recv_sizes)]
  row = P(_AXIS)

  def body(ra2a):
    return jax.shard_map(
        lambda *a: ra2a(*a, axis_name=_AXIS), mesh=mesh, in_specs=(row,) * 6,
        out_specs=row)

  def expected(args):
    per = [np.split(np.asarray(a), _DEVICES) for a in args]
    return [np.concatenate(moe_models.ragged_all_to_all_numpy(*per))]

  return Case(
      "collective_ragged_all_to_all",
      "ragged-all-to-all over 8 devices: operand [8,3] and output [10,3] per"
      " device, random traffic 0..2 rows per pair, sender-side output offsets",
      body(lax.ragged_all_to_all), args,
      ["operand", "output", "input_offsets", "send_sizes", "output_offsets",
       "recv_sizes"],
      in_specs=[row] * 6, mesh=mesh,
      exec_fn=body(moe_models.ragged_all_to_all_emulated), expected=expected,
      notes="traffic matrix (rows: sender, cols: receiver) = "
      + str(traffic.tolist()))


def cases():
  return (_elementwise_cases() + _compare_convert_cases() + _shape_cases() +
          _reduce_cases() + _dot_cases() + _ragged_dot_cases() +
          _sort_gather_cases() + _control_cases() + _collective_cases())
