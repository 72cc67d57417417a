#!/usr/bin/env python3
"""Goldens for the whole step's non-MoE blocks (issue 13, sim/lowering/dense_layers.h).

For each case the script writes, under --out (tests/testdata/dense_layers):
  <case>.<tensor>.npy   its inputs and JAX's outputs, named as MANIFEST.json lists them;
  MANIFEST.json         every case: its sizes, inputs and outputs in order (name, dtype, shape),
                        the conventions below, and the jax / jaxlib / numpy versions.
tests/lowering/dense_layers_test.cc lowers each block with perfsim's own explicit backward,
runs it in the interpreter on these inputs and compares with the outputs.

Sizes: B=2 sequences of S=8 tokens, D=32, F=48, V=64, f32. The reference math is written
here in jnp independently of perfsim (no shared code); gradients come from jax.grad.

Cases and conventions:
  ffn_rmsnorm_silu    y = x + (silu(n·w0) ⊙ (n·w1))·wo,  n = x / sqrt(mean(x², D) + eps)·scale
                      (RMSNorm, eps 1e-6). Gradients: jax.grad of sum(y·dy) with respect to
                      x, scale, w0, w1, wo (the residual add is part of the block).
  ffn_layernorm_gelu  the same with LayerNorm (n = (x − μ)/sqrt(var + eps)·scale + bias, eps
                      1e-5, biased variance) and GeGLU, gelu in its tanh form
                      (jax.nn.gelu(approximate=True), what sim/lowering/ffn.h computes).
  embedding           y[b, s] = table[ids[b, s]]; gradient of sum(y·dy) with respect to the
                      table (a scatter-add: ids repeat on purpose).
  lm_head             loss = mean over the B·S tokens of logsumexp(l) − l[label],
                      l = rmsnorm(h)·scale · w_outᵀ (w_out [V, D], eps 1e-6); gradients of the
                      loss (seed 1) with respect to h, scale, w_out.
  adamw               one AdamW step (optax.adamw with eps_root = 0, identical to
                      torch.optim.AdamW): m' = b1·m + (1 − b1)·g, v' = b2·v + (1 − b2)·g²,
                      m̂ = m'/(1 − b1^t), v̂ = v'/(1 − b2^t),
                      p' = p − lr·(m̂/(sqrt(v̂) + eps) + wd·p); t = count (the step number of
                      this update, from 1) and lr are inputs; b1 0.9, b2 0.95, eps 1e-8,
                      wd 0.1 are constants of the case.

Usage (from the repository root): python3 tools/jax/dense_layer_goldens.py [--out DIR]
Deterministic: fixed numpy seeds; XLA:CPU f32 results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform

os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import jaxlib  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

jax.config.update("jax_enable_x64", False)

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

B, S, D, F, V = 2, 8, 32, 48, 64
RMS_EPS = 1e-6
LN_EPS = 1e-5
ADAM = {"b1": 0.9, "b2": 0.95, "eps": 1e-8, "weight_decay": 0.1}


def _rmsnorm(x, scale, eps):
  ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
  return x * jax.lax.rsqrt(ms + eps) * scale


def _layernorm(x, scale, bias, eps):
  mu = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
  return (x - mu) * jax.lax.rsqrt(var + eps) * scale + bias


def _ffn(n, w0, w1, wo, act):
  h0 = jnp.einsum("bsd,df->bsf", n, w0)
  h1 = jnp.einsum("bsd,df->bsf", n, w1)
  return jnp.einsum("bsf,fd->bsd", act(h0) * h1, wo)


def _ffn_rms_silu(x, scale, w0, w1, wo):
  return x + _ffn(_rmsnorm(x, scale, RMS_EPS), w0, w1, wo, jax.nn.silu)


def _ffn_ln_gelu(x, scale, bias, w0, w1, wo):
  gelu = lambda t: jax.nn.gelu(t, approximate=True)
  return x + _ffn(_layernorm(x, scale, bias, LN_EPS), w0, w1, wo, gelu)


def _lm_loss(h, scale, w_out, labels):
  logits = jnp.einsum("bsd,vd->bsv", _rmsnorm(h, scale, RMS_EPS), w_out)
  logz = jax.nn.logsumexp(logits, axis=-1)
  picked = jnp.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
  return jnp.mean(logz - picked)


def _adamw(p, g, m, v, lr, count):
  b1, b2, eps, wd = ADAM["b1"], ADAM["b2"], ADAM["eps"], ADAM["weight_decay"]
  m2 = b1 * m + (1 - b1) * g
  v2 = b2 * v + (1 - b2) * jnp.square(g)
  m_hat = m2 / (1 - b1**count)
  v_hat = v2 / (1 - b2**count)
  p2 = p - lr * (m_hat / (jnp.sqrt(v_hat) + eps) + wd * p)
  return p2, m2, v2


def _vjp_sum(f, args, dy, argnums):
  """Gradients of sum(f(*args)·dy) with respect to args[argnums]."""
  return jax.grad(lambda *a: jnp.sum(f(*a) * dy), argnums=argnums)(*args)


def _cases(rng):
  f32 = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(np.float32)
  cases = []

  x, dy = f32(B, S, D), f32(B, S, D)
  scale = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
  w0, w1, wo = f32(D, F, s=D**-0.5), f32(D, F, s=D**-0.5), f32(F, D, s=F**-0.5)
  args = (x, scale, w0, w1, wo)
  grads = _vjp_sum(_ffn_rms_silu, args, dy, (0, 1, 2, 3, 4))
  cases.append(("ffn_rmsnorm_silu",
                [("x", x), ("norm_scale", scale), ("w0", w0), ("w1", w1), ("wo", wo),
                 ("dy", dy)],
                [("y", _ffn_rms_silu(*args))] +
                list(zip(["dx", "d_norm_scale", "d_w0", "d_w1", "d_wo"], grads)),
                {"norm": "rmsnorm", "epsilon": RMS_EPS, "activation": "silu"}))

  bias = f32(D, s=0.1)
  args = (x, scale, bias, w0, w1, wo)
  grads = _vjp_sum(_ffn_ln_gelu, args, dy, (0, 1, 2, 3, 4, 5))
  cases.append(("ffn_layernorm_gelu",
                [("x", x), ("norm_scale", scale), ("norm_bias", bias), ("w0", w0), ("w1", w1),
                 ("wo", wo), ("dy", dy)],
                [("y", _ffn_ln_gelu(*args))] +
                list(zip(["dx", "d_norm_scale", "d_norm_bias", "d_w0", "d_w1", "d_wo"], grads)),
                {"norm": "layernorm", "epsilon": LN_EPS, "activation": "gelu_tanh"}))

  # ids cover both halves of the vocabulary (the TP=2 shards) and repeat (scatter-add).
  ids = rng.integers(0, V, size=(B, S)).astype(np.int32)
  ids[0, :4] = [3, 3, V - 1, 3]
  table = f32(V, D)
  lookup = lambda t: t[ids]
  (d_table,) = _vjp_sum(lookup, (table,), dy, (0,))
  cases.append(("embedding", [("ids", ids), ("table", table), ("dy", dy)],
                [("y", lookup(table)), ("d_table", d_table)], {}))

  h = f32(B, S, D)
  w_out = f32(V, D, s=D**-0.5)
  labels = rng.integers(0, V, size=(B, S)).astype(np.int32)
  labels[1, :2] = [0, V - 1]
  loss, grads = jax.value_and_grad(_lm_loss, argnums=(0, 1, 2))(h, scale, w_out, labels)
  cases.append(("lm_head", [("h", h), ("norm_scale", scale), ("w_out", w_out),
                            ("labels", labels)],
                [("loss", loss)] + list(zip(["dh", "d_norm_scale", "d_w_out"], grads)),
                {"norm": "rmsnorm", "epsilon": RMS_EPS}))

  n = 1000
  p, g, m = f32(n), f32(n, s=0.01), f32(n, s=0.001)
  v = np.abs(f32(n, s=1e-4)).astype(np.float32)
  lr, count = np.float32(3e-4), np.float32(3)
  outs = _adamw(p, g, m, v, lr, count)
  cases.append(("adamw", [("param", p), ("grad", g), ("m", m), ("v", v), ("lr", lr),
                          ("count", count)],
                list(zip(["new_param", "new_m", "new_v"], outs)), dict(ADAM)))
  return cases


def _dtype(a: np.ndarray) -> str:
  return {np.dtype(np.float32): "f32", np.dtype(np.int32): "s32"}[a.dtype]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", default=os.path.join(_REPO, "tests", "testdata", "dense_layers"))
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  manifest = {
      "generator": "tools/jax/dense_layer_goldens.py",
      "jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
      "python": platform.python_version(),
      "sizes": {"B": B, "S": S, "D": D, "F": F, "V": V},
      "cases": [],
  }
  for name, inputs, outputs, attrs in _cases(np.random.default_rng(13)):
    entry = {"name": name, "attributes": attrs, "inputs": [], "outputs": []}
    for kind, tensors in (("inputs", inputs), ("outputs", outputs)):
      for tensor, value in tensors:
        a = np.asarray(value)
        np.save(os.path.join(args.out, f"{name}.{tensor}.npy"), a)
        entry[kind].append({"name": tensor, "dtype": _dtype(a), "shape": list(a.shape)})
    manifest["cases"].append(entry)
  with open(os.path.join(args.out, "MANIFEST.json"), "w", encoding="utf-8") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")
  print(f"wrote {len(manifest['cases'])} cases to {args.out}")


if __name__ == "__main__":
  main()
