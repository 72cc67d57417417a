#!/usr/bin/env python3
"""Goldens for the interpreter's fft, triangular-solve, cholesky and batch-norm.

For each case the script writes, under --out (tests/testdata/linalg):
  <case>.hlo           a one-op HLO module (XLA's parser reads it: checked here);
  <case>.in<i>.npy     its inputs (fixed seeds);
  <case>.out<i>.npy    JAX's answer for the same op and attributes:
                       jnp.fft.{fftn, ifftn, rfftn, irfftn},
                       jax.scipy.linalg.solve_triangular, jnp.linalg.cholesky, and the
                       batch-norm formulas of XLA's operation semantics in jnp.
jaxlib lowers cholesky and triangular-solve to LAPACK custom-calls on CPU, so the HLO op
itself is written by hand here and JAX computes the numbers. tests/interp/linalg_test.cc
runs each module through perfsim's interpreter and compares.

Usage (from the repository root): python3 tools/jax/linalg_goldens.py [--out DIR]
Deterministic: same inputs (numpy seeds), same outputs (XLA:CPU f32/c64 results).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
from jax.scipy.linalg import solve_triangular  # pylint: disable=wrong-import-position
from jaxlib import _hlo  # pylint: disable=wrong-import-position

jax.config.update("jax_enable_x64", False)

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def _shape(a: np.ndarray) -> str:
  kind = {np.dtype(np.float32): "f32", np.dtype(np.complex64): "c64"}[a.dtype]
  return f"{kind}[{','.join(str(d) for d in a.shape)}]"


def _module(name: str, inputs: list[np.ndarray], result: str, op: str) -> str:
  params = "\n".join(f"  p{i} = {_shape(a)} parameter({i})" for i, a in enumerate(inputs))
  args = ", ".join(f"p{i}" for i in range(len(inputs)))
  return f"HloModule {name}\n\nENTRY e {{\n{params}\n  ROOT r = {result} {op.format(args=args)}\n}}\n"


def _cases():
  rng = np.random.default_rng(15)
  f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
  c64 = lambda *s: (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)

  x = c64(3, 8)
  yield "fft_1d", [x], [jnp.fft.fft(x)], "fft({args}), fft_type=FFT, fft_length={{8}}"
  x = c64(2, 4, 6)
  yield "ifft_2d", [x], [jnp.fft.ifftn(x, axes=(-2, -1))], "fft({args}), fft_type=IFFT, fft_length={{4,6}}"
  x = f32(2, 4, 6)
  yield "rfft_2d", [x], [jnp.fft.rfftn(x, axes=(-2, -1))], "fft({args}), fft_type=RFFT, fft_length={{4,6}}"
  x = c64(3, 5)
  yield "irfft_1d", [x], [jnp.fft.irfft(x, n=8)], "fft({args}), fft_type=IRFFT, fft_length={{8}}"
  x = c64(2, 3, 4)
  yield "irfft_2d", [x], [jnp.fft.irfftn(x, s=(3, 6), axes=(-2, -1))], "fft({args}), fft_type=IRFFT, fft_length={{3,6}}"

  # Well-conditioned triangles: a random matrix plus 4 on the diagonal.
  def tri(*s):
    return (f32(*s) + 4 * np.eye(s[-1], dtype=np.float32)).astype(np.float32)
  a, b = tri(2, 4, 4), f32(2, 4, 3)
  yield ("trsm_left_lower", [a, b], [solve_triangular(a, b, lower=True)],
         "triangular-solve({args}), left_side=true, lower=true, transpose_a=NO_TRANSPOSE")
  a, b = tri(4, 4), f32(4, 3)
  yield ("trsm_left_upper_transpose", [a, b], [solve_triangular(a, b, trans=1, lower=False)],
         "triangular-solve({args}), left_side=true, lower=false, transpose_a=TRANSPOSE")
  a, b = tri(4, 4), f32(3, 4)
  # x · a = b  <=>  a^T · x^T = b^T.
  yield ("trsm_right_lower_unit", [a, b],
         [solve_triangular(a, b.T, trans=1, lower=True, unit_diagonal=True).T],
         "triangular-solve({args}), left_side=false, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE")
  a, b = c64(3, 3) + 4 * np.eye(3, dtype=np.complex64), c64(3, 2)
  yield ("trsm_left_lower_adjoint_c64", [a, b], [solve_triangular(a, b, trans=2, lower=True)],
         "triangular-solve({args}), left_side=true, lower=true, transpose_a=ADJOINT")

  m = f32(2, 5, 5)
  spd = (m @ np.swapaxes(m, -1, -2) + 5 * np.eye(5, dtype=np.float32)).astype(np.float32)
  yield "cholesky_lower", [spd], [jnp.linalg.cholesky(spd)], "cholesky({args}), lower=true"
  yield ("cholesky_upper", [spd], [np.swapaxes(jnp.linalg.cholesky(spd), -1, -2)],
         "cholesky({args}), lower=false")

  eps = 0.001
  x, scale, offset = f32(4, 3, 2), f32(3), f32(3)
  axes = (0, 2)
  shape = (1, 3, 1)
  mean = jnp.mean(x, axis=axes)
  var = jnp.mean((x - mean.reshape(shape)) ** 2, axis=axes)
  norm = lambda v, m, s, o: (v - m.reshape(shape)) / jnp.sqrt(s.reshape(shape) + eps) * \
      scale.reshape(shape) + o.reshape(shape)
  yield ("batch_norm_training", [x, scale, offset], [norm(x, mean, var, offset), mean, var],
         "batch-norm-training({args}), epsilon=0.001, feature_index=1")
  given_mean, given_var = f32(3), np.abs(f32(3)) + 0.5
  yield ("batch_norm_inference", [x, scale, offset, given_mean, given_var],
         [norm(x, given_mean, given_var, offset)],
         "batch-norm-inference({args}), epsilon=0.001, feature_index=1")
  # batch-norm-grad: the gradient of the training normalisation, by jax.vjp, at the batch's
  # own mean and variance (which is what XLA's BatchNormGrad formula is).
  dy = f32(4, 3, 2)
  def train(v, s, o):
    m = jnp.mean(v, axis=axes)
    s2 = jnp.mean((v - m.reshape(shape)) ** 2, axis=axes)
    return (v - m.reshape(shape)) / jnp.sqrt(s2.reshape(shape) + eps) * s.reshape(shape) + o.reshape(shape)
  _, vjp = jax.vjp(train, x, scale, offset)
  dx, dscale, doffset = vjp(dy)
  yield ("batch_norm_grad", [x, scale, np.asarray(mean), np.asarray(var), dy], [dx, dscale, doffset],
         "batch-norm-grad({args}), epsilon=0.001, feature_index=1")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=os.path.join(_REPO, "tests", "testdata", "linalg"))
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  for name, inputs, outputs, op in _cases():
    outputs = [np.asarray(o) for o in outputs]
    result = _shape(outputs[0]) if len(outputs) == 1 else \
        "(" + ", ".join(_shape(o) for o in outputs) + ")"
    text = _module(name, inputs, result, op)
    _hlo.hlo_module_from_text(text)  # XLA's parser reads it
    with open(os.path.join(args.out, f"{name}.hlo"), "w", encoding="utf-8") as f:
      f.write(text)
    for i, a in enumerate(inputs):
      np.save(os.path.join(args.out, f"{name}.in{i}.npy"), np.asarray(a))
    for i, a in enumerate(outputs):
      np.save(os.path.join(args.out, f"{name}.out{i}.npy"), a)
    print(name, result)


if __name__ == "__main__":
  main()
