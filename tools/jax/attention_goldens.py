#!/usr/bin/env python3
"""Attention block goldens (issue 13): forward outputs and jax.grad of sum(y * dy).

Writes, under tests/testdata/attention (or --out), for every case <name>:

  <name>.<param>.npy     the inputs: x, the weights, dy (the cotangent), in parameter order
  <name>.y.npy           the forward output y [B, S, D]
  <name>.dx.npy          d sum(y * dy) / dx
  <name>.d_<w>.npy       d sum(y * dy) / dw for every weight w, in parameter order
  MANIFEST.json          cases: attention kind and sizes, parameter order and shapes, versions

perfsim's attention lowering (sim/lowering/attention.h) computes the same block with its own
explicit backward; tests/lowering/attention_test.cc runs it in the interpreter on these inputs
and compares. The math here is written independently of the lowering and plainly: K/V heads
are repeated to the query heads (jnp.repeat) instead of grouping the query heads, the mask is
a boolean matrix, the softmax is jax.nn.softmax, MLA concatenates its nope and rope parts, and
every gradient comes from jax.vjp.

Parameters (the lowering's documented order):
  GQA / MHA / MQA: x [B,S,D], wq [D,H,Dh], wk [D,Hkv,Dh], wv [D,Hkv,Dh], wo [H,Dh,D],
                   (q_norm [Dh], k_norm [Dh] with qk_norm), dy [B,S,D]
  MLA:             x, wq_a [D,A], q_norm [A], wq_b [A,H,N+P]   (q_lora_rank A > 0; else wq [D,H,N+P])
                   wkv_a [D,C+P], kv_norm [C], wkv_b [C,H,N+V], wo [H,V,D], dy
  (N = qk_nope_head_dim, P = qk_rope_head_dim, V = v_head_dim, C = kv_lora_rank.)

Conventions: RoPE rotates half (HF Llama's rotate_half: the first half of a head's dims pairs
with the second), inv_freq = theta^(-2i/Dh) computed in float64 and rounded to f32, angles
position * inv_freq in f32, positions 0..S-1. Masks: causal (key j visible from query i iff
j <= i); sliding window W: also i - W < j; chunked W: also j // W == i // W. Scores are scaled
by 1/sqrt(qk head width) (MLA: N + P); the softmax runs in f32 over the keys. RMSNorm:
t * rsqrt(mean(t^2) + 1e-6) * scale (Qwen3's q/k norm per head; MLA's latent norms).

Usage (from the repository root): python3 tools/jax/attention_goldens.py [--out DIR]
Deterministic: inputs come from numpy's default_rng with a fixed seed per case.
"""

from __future__ import annotations

import os

# Must happen before jax is imported anywhere.
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position
import json  # pylint: disable=wrong-import-position
import platform  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import jaxlib  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

EPS = 1e-6

# name: attention description. kind gqa covers MHA (kv = heads) and MQA (kv = 1).
CASES = {
    "mha_causal": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=4, hd=8),
    "gqa_causal_rope": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=2, hd=8, theta=10000.0),
    "mqa_causal_rope": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=1, hd=8, theta=10000.0),
    "gqa_sliding_window": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=2, hd=8, theta=10000.0,
                               scope="sliding_window", window=5),
    "gqa_chunked": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=2, hd=8, theta=500000.0,
                        scope="chunked", window=4),
    "gqa_qk_norm": dict(kind="gqa", B=2, S=16, D=32, heads=4, kv=2, hd=8, theta=1000000.0,
                        qk_norm=True),
    "mla_causal": dict(kind="mla", B=2, S=16, D=32, heads=4, q_lora=16, kv_lora=16, nope=8,
                       rope=4, v=8, theta=10000.0),
    "mla_no_q_lora": dict(kind="mla", B=2, S=16, D=32, heads=4, q_lora=0, kv_lora=16, nope=8,
                          rope=4, v=6, theta=10000.0),
}


def rms_norm(t, scale):
  t32 = t.astype(jnp.float32)
  r = jax.lax.rsqrt(jnp.mean(t32 * t32, axis=-1, keepdims=True) + EPS)
  return t32 * r * scale


def rope_tables(S, width, theta):
  half = width // 2
  inv = (1.0 / theta ** (np.arange(half, dtype=np.float64) * 2.0 / width)).astype(np.float32)
  angle = jnp.arange(S, dtype=jnp.float32)[:, None] * jnp.asarray(inv)[None, :]
  cos = jnp.concatenate([jnp.cos(angle), jnp.cos(angle)], axis=-1)
  sin = jnp.concatenate([jnp.sin(angle), jnp.sin(angle)], axis=-1)
  return cos, sin  # [S, width]


def rotate_half(t):
  half = t.shape[-1] // 2
  return jnp.concatenate([-t[..., half:], t[..., :half]], axis=-1)


def apply_rope(t, theta):
  """t [B, S, ..., width]: rotated per position (axis 1)."""
  cos, sin = rope_tables(t.shape[1], t.shape[-1], theta)
  extra = t.ndim - 3  # head axes between S and width
  shape = (1, t.shape[1]) + (1,) * extra + (t.shape[-1],)
  return t * cos.reshape(shape) + rotate_half(t) * sin.reshape(shape)


def visible(S, scope, window):
  i = np.arange(S)[:, None]
  j = np.arange(S)[None, :]
  mask = j <= i
  if scope == "sliding_window":
    mask &= j > i - window
  elif scope == "chunked":
    mask &= (j // window) == (i // window)
  return mask  # [S(query), S(key)]


def softmax_attention(q, k, v, scale, mask):
  """q, k [B,S,H,*], v [B,S,H,V] (already one K/V per query head) -> o [B,S,H,V]."""
  scores = jnp.einsum("bshd,bthd->bhst", q, k).astype(jnp.float32) * scale
  scores = jnp.where(mask[None, None], scores, -jnp.inf)
  p = jax.nn.softmax(scores, axis=-1)
  return jnp.einsum("bhst,bthv->bshv", p.astype(v.dtype), v)


def gqa_block(c, names):
  def f(x, *ws):
    w = dict(zip(names, ws))
    q = jnp.einsum("bsd,dhk->bshk", x, w["wq"])
    k = jnp.einsum("bsd,dhk->bshk", x, w["wk"])
    v = jnp.einsum("bsd,dhk->bshk", x, w["wv"])
    if c.get("qk_norm"):
      q = rms_norm(q, w["q_norm"])
      k = rms_norm(k, w["k_norm"])
    if "theta" in c:
      q = apply_rope(q, c["theta"])
      k = apply_rope(k, c["theta"])
    group = c["heads"] // c["kv"]
    k = jnp.repeat(k, group, axis=2)  # query head h reads K/V head h // group
    v = jnp.repeat(v, group, axis=2)
    mask = visible(c["S"], c.get("scope", "global"), c.get("window", 0))
    o = softmax_attention(q, k, v, 1.0 / np.sqrt(c["hd"]), mask)
    return jnp.einsum("bshv,hvd->bsd", o, w["wo"])
  return f


def mla_block(c, names):
  N, P = c["nope"], c["rope"]
  def f(x, *ws):
    w = dict(zip(names, ws))
    if c["q_lora"] > 0:
      cq = rms_norm(x @ w["wq_a"], w["q_norm"])
      q = jnp.einsum("bsa,ahk->bshk", cq, w["wq_b"])
    else:
      q = jnp.einsum("bsd,dhk->bshk", x, w["wq"])
    q_nope, q_rope = q[..., :N], apply_rope(q[..., N:], c["theta"])
    kv_a = x @ w["wkv_a"]
    c_kv = rms_norm(kv_a[..., :c["kv_lora"]], w["kv_norm"])
    k_rope = apply_rope(kv_a[..., c["kv_lora"]:], c["theta"])  # [B,S,P], one for all heads
    kv = jnp.einsum("bsc,chk->bshk", c_kv, w["wkv_b"])
    k_nope, v = kv[..., :N], kv[..., N:]
    H = c["heads"]
    k_full = jnp.concatenate(
        [k_nope, jnp.broadcast_to(k_rope[:, :, None, :], k_rope.shape[:2] + (H, P))], axis=-1)
    q_full = jnp.concatenate([q_nope, q_rope], axis=-1)
    mask = visible(c["S"], c.get("scope", "global"), c.get("window", 0))
    o = softmax_attention(q_full, k_full, v, 1.0 / np.sqrt(N + P), mask)
    return jnp.einsum("bshv,hvd->bsd", o, w["wo"])
  return f


def parameters(c):
  """[(name, shape, fan_in)] of the weights, in parameter order."""
  D, H = c["D"], c["heads"]
  if c["kind"] == "gqa":
    hd, kv = c["hd"], c["kv"]
    ws = [("wq", (D, H, hd), D), ("wk", (D, kv, hd), D), ("wv", (D, kv, hd), D),
          ("wo", (H, hd, D), H * hd)]
    if c.get("qk_norm"):
      ws += [("q_norm", (hd,), 0), ("k_norm", (hd,), 0)]
    return ws
  A, C, N, P, V = c["q_lora"], c["kv_lora"], c["nope"], c["rope"], c["v"]
  if A > 0:
    ws = [("wq_a", (D, A), D), ("q_norm", (A,), 0), ("wq_b", (A, H, N + P), A)]
  else:
    ws = [("wq", (D, H, N + P), D)]
  return ws + [("wkv_a", (D, C + P), D), ("kv_norm", (C,), 0), ("wkv_b", (C, H, N + V), C),
               ("wo", (H, V, D), H * V)]


def make_case(name, c, seed):
  rng = np.random.default_rng(seed)
  B, S, D = c["B"], c["S"], c["D"]
  ws = parameters(c)
  x = rng.standard_normal((B, S, D)).astype(np.float32)
  weights = []
  for _, shape, fan_in in ws:
    if fan_in == 0:  # a norm scale: around 1
      weights.append((1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32))
    else:
      weights.append((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32))
  dy = rng.standard_normal((B, S, D)).astype(np.float32)
  names = [n for n, _, _ in ws]
  block = gqa_block(c, names) if c["kind"] == "gqa" else mla_block(c, names)
  y, vjp = jax.vjp(block, jnp.asarray(x), *[jnp.asarray(w) for w in weights])
  grads = vjp(jnp.asarray(dy))
  files = {"x": x, **dict(zip(names, weights)), "dy": dy, "y": np.asarray(y),
           "dx": np.asarray(grads[0])}
  for n, g in zip(names, grads[1:]):
    files["d_" + n] = np.asarray(g)
  for k, v in files.items():
    assert v.dtype == np.float32 and np.all(np.isfinite(v)), (name, k)
  return files, ["x"] + names + ["dy"], ["y", "dx"] + ["d_" + n for n in names]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=os.path.join(_REPO, "tests", "testdata", "attention"))
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  manifest = {"versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                           "numpy": np.__version__, "python": platform.python_version()},
              "eps": EPS, "cases": {}}
  for seed, (name, c) in enumerate(CASES.items()):
    files, params, outputs = make_case(name, c, 1000 + seed)
    for k, v in files.items():
      np.save(os.path.join(args.out, f"{name}.{k}.npy"), v)
    manifest["cases"][name] = {
        "attention": c,
        "parameters": [[p, list(files[p].shape)] for p in params],
        "outputs": [[o, list(files[o].shape)] for o in outputs]}
    print(name, "y", files["y"].shape, "max|y|", float(np.abs(files["y"]).max()))
  with open(os.path.join(args.out, "MANIFEST.json"), "w", encoding="utf-8") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main()
