#!/usr/bin/env python3
"""Writes MoE-layer modules with planted bugs for `perfsim validate --hlo`.

Each module is what a JAX user would hand to `validate --hlo`: the HLO text of
`jax.jit(f, keep_unused=True).lower(*args).as_text(dialect="hlo")` (the
convention of generate_goldens.py's `.lowered.hlo`), with the parameters in
validate's order x [T, D], router_w [D, E], wi_0 [E, D, F], wi_1 [E, D, F],
wo [E, F, D]. The model (tests/testdata/models/jax_buggy.textproto) has
D == F == 16, so a transposed weight is silent by shape; E = 8, K = 2,
T = 32, softmax over E, top-k, the k weights renormalised; f32.

  moe_correct_dense        every token through every expert (passes)
  moe_correct_sorted       argsort + gather + ragged_dot + inverse permutation
                           (passes)
  moe_correct_grad         jax.grad of the dense layer: the gradients of
                           sum(y * dy) w.r.t. the five parameters, dy last
                           (passes with --phase fwd_bwd)
  bug_transposed_wi_0      wi_0 read as [E, F, D]: einsum "td,efd->tef"
  bug_combine_before_unpermute
                           the sorted expert outputs are weighted and summed
                           without the inverse permutation
  bug_no_renormalisation   top-k weights used as the softmax gave them
  bug_router_bf16          the router matmul in bf16
  bug_dropped_tokens       capacity factor 0.5: tokens past an expert's
                           capacity are dropped, in a dropless layer
  bug_grad_wo              gradient module whose d_wo is scaled by 2
  bug_keep_unused          keep_unused=False on a layer that never reads
                           wi_1: the lowered module has 4 parameters

Regenerate (from the repository root; needs jax 0.10.2, see README.md):
  python3 tools/jax/buggy_modules.py
Writes tests/testdata/hlo/jax_buggy/<name>.hlo. perfsim's tests
(tests/validate/validate_hlo_causes_test.cc) check that each bug fails with
its cause named.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
from jax import lax  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
sys.path.insert(0, _HERE)
jax.config.update("jax_hlo_source_file_canonicalization_regex",
                  r".*/(?=tools/jax/)")
jax.config.update("jax_traceback_in_locations_limit", 1)

import golden_lib  # pylint: disable=wrong-import-position,unused-import  # registers ragged-dot

OUT = os.path.join(_REPO, "tests", "testdata", "hlo", "jax_buggy")
T, D, F, E, K = 32, 16, 16, 8, 2


def route(x, router_w, *, renormalise=True, dtype=jnp.float32):
  logits = (x.astype(dtype) @ router_w.astype(dtype)).astype(jnp.float32)
  probs = jax.nn.softmax(logits, axis=-1)
  weights, ids = lax.top_k(probs, K)
  if renormalise:
    weights = weights / jnp.sum(weights, axis=-1, keepdims=True)
  return weights, ids


def dense(x, router_w, wi_0, wi_1, wo, *, wi_0_spec="td,edf->tef",
          renormalise=True, router_dtype=jnp.float32):
  weights, ids = route(x, router_w, renormalise=renormalise, dtype=router_dtype)
  combine = jnp.einsum("tk,tke->te", weights, jax.nn.one_hot(ids, E, dtype=x.dtype))
  h0 = jnp.einsum(wi_0_spec, x, wi_0)
  h1 = jnp.einsum("td,edf->tef", x, wi_1)
  y = jnp.einsum("tef,efd->ted", jax.nn.silu(h0) * h1, wo)
  return jnp.einsum("ted,te->td", y, combine)


def sorted_layer(x, router_w, wi_0, wi_1, wo, *, unpermute=True):
  weights, ids = route(x, router_w)
  flat = ids.reshape(-1)
  sort_idx = jnp.argsort(flat)
  rows = jnp.repeat(x, K, axis=0)[sort_idx]
  sizes = jnp.bincount(flat, length=E).astype(jnp.int32)
  h = jax.nn.silu(lax.ragged_dot(rows, wi_0, sizes)) * lax.ragged_dot(rows, wi_1, sizes)
  y_sorted = lax.ragged_dot(h, wo, sizes)
  if unpermute:
    y_sorted = y_sorted[jnp.argsort(sort_idx)]
  return jnp.einsum("tkd,tk->td", y_sorted.reshape(T, K, D), weights)


def dropping(x, router_w, wi_0, wi_1, wo, *, capacity_factor=0.5):
  """GShard-style capacity dispatch: an assignment past its expert's capacity
  C = capacity_factor * T * K / E is dropped (its contribution is zero)."""
  capacity = int(capacity_factor * T * K / E)
  weights, ids = route(x, router_w)
  mask = jax.nn.one_hot(ids, E, dtype=x.dtype)                  # [T, K, E]
  flat = mask.reshape(T * K, E)
  position = (jnp.cumsum(flat, axis=0) - flat).reshape(T, K, E)  # slot in expert
  keep = mask * (position < capacity)
  slot = jax.nn.one_hot(jnp.sum(position * keep, axis=-1).astype(jnp.int32),
                        capacity, dtype=x.dtype)                 # [T, K, C]
  dispatch = jnp.einsum("tke,tkc->tec", keep, slot)
  combine = jnp.einsum("tke,tkc,tk->tec", keep, slot, weights)
  rows = jnp.einsum("tec,td->ecd", dispatch, x)
  h = jax.nn.silu(jnp.einsum("ecd,edf->ecf", rows, wi_0)) * jnp.einsum(
      "ecd,edf->ecf", rows, wi_1)
  y = jnp.einsum("ecf,efd->ecd", h, wo)
  return jnp.einsum("ecd,tec->td", y, combine)


def no_gate(x, router_w, wi_0, wi_1, wo):  # pylint: disable=unused-argument
  """A GELU expert that never reads wi_1 (jitted with keep_unused=False)."""
  weights, ids = route(x, router_w)
  combine = jnp.einsum("tk,tke->te", weights, jax.nn.one_hot(ids, E, dtype=x.dtype))
  h = jax.nn.gelu(jnp.einsum("td,edf->tef", x, wi_0))
  return jnp.einsum("tef,efd,te->td", h, wo, combine)


def grad_of(forward, scale_wo=1.0):
  def grad(x, router_w, wi_0, wi_1, wo, dy):
    loss = lambda *p: jnp.sum(forward(*p) * dy)
    g = jax.grad(loss, argnums=(0, 1, 2, 3, 4))(x, router_w, wi_0, wi_1, wo)
    return g[:4] + (g[4] * scale_wo,)
  return grad


def modules():
  return [
      ("moe_correct_dense", dense, True),
      ("moe_correct_sorted", sorted_layer, True),
      ("moe_correct_grad", grad_of(dense), True),
      ("bug_transposed_wi_0", lambda *a: dense(*a, wi_0_spec="td,efd->tef"), True),
      ("bug_combine_before_unpermute", lambda *a: sorted_layer(*a, unpermute=False), True),
      ("bug_no_renormalisation", lambda *a: dense(*a, renormalise=False), True),
      ("bug_router_bf16", lambda *a: dense(*a, router_dtype=jnp.bfloat16), True),
      ("bug_dropped_tokens", dropping, True),
      ("bug_grad_wo", grad_of(dense, scale_wo=2.0), True),
      ("bug_keep_unused", no_gate, False),
  ]


def main() -> int:
  rng = np.random.default_rng(0)
  params = [
      rng.standard_normal((T, D)).astype(np.float32),
      (rng.standard_normal((D, E)) / np.sqrt(D)).astype(np.float32),
      (rng.standard_normal((E, D, F)) / np.sqrt(D)).astype(np.float32),
      (rng.standard_normal((E, D, F)) / np.sqrt(D)).astype(np.float32),
      (rng.standard_normal((E, F, D)) / np.sqrt(F)).astype(np.float32),
  ]
  dy = rng.standard_normal((T, D)).astype(np.float32)
  os.makedirs(OUT, exist_ok=True)
  for name, fn, keep_unused in modules():
    args = params + ([dy] if "grad" in name else [])
    wrapper = lambda *a, fn=fn: fn(*a)
    wrapper.__name__ = name
    jax.clear_caches()
    lowered = jax.jit(wrapper, keep_unused=keep_unused).lower(*args)
    text = lowered.as_text(dialect="hlo")
    with open(os.path.join(OUT, name + ".hlo"), "w", encoding="utf-8") as f:
      f.write(text)
    print(f"{name}: {len(text)} characters")
  return 0


if __name__ == "__main__":
  sys.exit(main())
