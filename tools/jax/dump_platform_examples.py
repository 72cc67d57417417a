"""Writes the README's "your own program" example: one MoE layer lowered for TPU and for CPU.

    python3 tools/jax/dump_platform_examples.py     # from the repository root; ~10 s, no TPU

jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)) lowers for TPU on a machine without
one: the HLO is what a TPU run starts from (before XLA's passes), and lax.ragged_dot stays one
`ragged-dot` instruction. Lowered for CPU (the default on a laptop), JAX replaces each
ragged_dot by its reference decomposition: every token masked against every expert's group, a
dense dot over the expert dimension (num_experts times the FLOPs). perfsim cost and predict
warn when a module carries that decomposition but --hw names a TPU or GPU.

Writes examples/hlo/moe_layer.tpu.hlo and examples/hlo/moe_layer.cpu.hlo (as_text(dialect="hlo"),
with the per-instruction metadata stripped so the files do not name this checkout's paths).
"""

from __future__ import annotations

import functools
import os
import re
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moe_models  # pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "examples", "hlo")

# Mixtral-like proportions at a size a laptop lowers instantly: T tokens, D model width,
# F expert width, E experts, top-k.
TOKENS, D_MODEL, D_FF, EXPERTS, TOP_K = 4096, 1024, 3584, 8, 2


def main() -> None:
  dtype = jnp.bfloat16
  args = (
      jax.ShapeDtypeStruct((TOKENS, D_MODEL), dtype),
      jax.ShapeDtypeStruct((D_MODEL, EXPERTS), dtype),
      jax.ShapeDtypeStruct((EXPERTS, D_MODEL, D_FF), dtype),
      jax.ShapeDtypeStruct((EXPERTS, D_MODEL, D_FF), dtype),
      jax.ShapeDtypeStruct((EXPERTS, D_FF, D_MODEL), dtype),
  )
  layer = jax.jit(functools.partial(moe_models.moe_ragged_dot, top_k=TOP_K))
  os.makedirs(OUT, exist_ok=True)
  for platform in ("tpu", "cpu"):
    lowered = layer.trace(*args).lower(lowering_platforms=(platform,))
    text = lowered.as_text(dialect="hlo")
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    path = os.path.join(OUT, f"moe_layer.{platform}.hlo")
    with open(path, "w", encoding="utf-8") as f:
      f.write(text)
    ragged = text.count(" ragged-dot(")
    print(f"{os.path.relpath(path, ROOT)}: {len(text.splitlines())} lines, "
          f"{ragged} ragged-dot instruction(s)")


if __name__ == "__main__":
  main()
