#!/usr/bin/env python3
"""A lowered shard_map program and JAX's outputs, for `perfsim run` on the unpartitioned HLO.

`jax.jit(f).lower(...).as_text(dialect="hlo")` of a shard_map program keeps the program global
and marks the manual region with the xla.sdy.GlobalToLocalShape / LocalToGlobalShape
custom-calls (sim/interp/sdy_custom_calls.h). This script writes such a module and the inputs
and outputs JAX computes for it:

  tests/testdata/hlo/shard_map/shard_map_matmul.lowered.hlo
  tests/testdata/hlo/shard_map/shard_map_matmul.in{0,1}.npy    global inputs
  tests/testdata/hlo/shard_map/shard_map_matmul.out{0,1}.npy   global outputs (from jax)

The program, on a 2x2 mesh ('x', 'y') of 4 host devices:
  x f32[8,6] split P('x','y') -> blocks [4,3]; w f32[6,5] split P('y', None) -> [3,5]
  body: s = psum(a @ w, 'y')            [4,5], the rows of x @ w this 'x' block owns
        g = all_gather(s, 'x', tiled)   [8,5], all of x @ w
  out_specs (P('x', None), P()): both outputs equal x @ w globally.
The psum lowers to an all-reduce over flattened ids {{0,1},{2,3}} and the gather to an
all-gather over {{0,2},{1,3}}, so the run exercises both group directions of the mesh.

tests/cli/run_command_test.cc runs the module with `perfsim run --devices 4 --inputs ...` and
compares every device's outputs with the .npy files. Deterministic: the inputs come from a
fixed NumPy seed and XLA:CPU's f32 results do not vary between runs.

Usage (from the repository root): python3 tools/jax/shard_map_golden.py [--out DIR]
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
from jax import shard_map  # pylint: disable=wrong-import-position
from jax.sharding import Mesh  # pylint: disable=wrong-import-position
from jax.sharding import PartitionSpec as P  # pylint: disable=wrong-import-position

NAME = "shard_map_matmul"


def program(mesh):
  def body(a, w):
    s = jax.lax.psum(a @ w, "y")
    g = jax.lax.all_gather(s, "x", tiled=True)
    return s, g

  def f(x, w):
    return shard_map(
        body,
        mesh=mesh,
        in_specs=(P("x", "y"), P("y", None)),
        out_specs=(P("x", None), P()),
        check_vma=False,
    )(x, w)

  return f


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default="tests/testdata/hlo/shard_map")
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
  rng = np.random.default_rng(20261127)
  x = rng.uniform(-1, 1, (8, 6)).astype(np.float32)
  w = rng.uniform(-1, 1, (6, 5)).astype(np.float32)
  f = jax.jit(program(mesh))
  text = f.lower(jnp.asarray(x), jnp.asarray(w)).as_text(dialect="hlo")
  outputs = f(jnp.asarray(x), jnp.asarray(w))
  with open(os.path.join(args.out, f"{NAME}.lowered.hlo"), "w") as out:
    out.write(text)
  for i, array in enumerate((x, w)):
    np.save(os.path.join(args.out, f"{NAME}.in{i}.npy"), array)
  for i, array in enumerate(outputs):
    np.save(os.path.join(args.out, f"{NAME}.out{i}.npy"), np.asarray(array))
  print(f"wrote {NAME} to {args.out} (jax {jax.__version__})")


if __name__ == "__main__":
  main()
