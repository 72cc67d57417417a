#!/usr/bin/env python3
"""Times XLA:CPU running the JAX MoE golden modules, compile excluded.

For each `moe_*` case of moe_cases.py (the cases tests/testdata/hlo/jax was
generated from, on the same fixed inputs), the function is jitted, compiled
once (not timed), run once to warm up, then run --reps times; the median wall
time of one run (until every output is ready) is reported in seconds.

XLA:CPU cannot execute `ragged-dot` or `ragged-all-to-all` (jaxlib 0.10.2), so,
as for the goldens, the cases that contain them run their executable twin:
ragged-dot through JAX's masked dense decomposition and ragged-all-to-all
through moe_models.ragged_all_to_all_emulated. The output says which ran.

Usage (repository root):
  python3 tools/jax/time_xla_cpu.py [--reps 20] [--only REGEX] [--json OUT]
bench/run_vs_xla.py calls it and prints perfsim's time beside it.
"""

from __future__ import annotations

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position
import json  # pylint: disable=wrong-import-position
import re  # pylint: disable=wrong-import-position
import statistics  # pylint: disable=wrong-import-position
import time  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
from jax._src import config as jax_config  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import golden_lib  # pylint: disable=wrong-import-position
import moe_cases  # pylint: disable=wrong-import-position


def time_case(case: golden_lib.Case, reps: int) -> dict:
  placed = golden_lib._place(case)  # pylint: disable=protected-access
  run_fn = case.exec_fn or case.fn
  jax.clear_caches()
  # The executable twin: native ragged-dot off, as golden_lib.write_case runs it.
  with jax_config.jax_ragged_dot_use_ragged_dot_instruction(False):
    compiled = jax.jit(run_fn).lower(*placed).compile()
  jax.block_until_ready(compiled(*placed))  # warm-up
  times = []
  for _ in range(reps):
    start = time.perf_counter()
    jax.block_until_ready(compiled(*placed))
    times.append(time.perf_counter() - start)
  return {
      "name": case.name,
      "xla_cpu_seconds": statistics.median(times),
      "reps": reps,
      "ran": "executable twin" if case.exec_fn is not None or "ragged" in case.name
             else "the module",
  }


def main(argv: list[str]) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--reps", type=int, default=20)
  parser.add_argument("--only", default="moe_.*")
  parser.add_argument("--json", default=None, help="write the results here")
  args = parser.parse_args(argv)
  results = [time_case(c, args.reps) for c in moe_cases.cases()
             if re.fullmatch(args.only, c.name)]
  for r in results:
    print(f"{r['name']:28s} {r['xla_cpu_seconds'] * 1e3:9.3f} ms  ({r['ran']})")
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump({"jax": jax.__version__, "results": results}, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
