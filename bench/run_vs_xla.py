#!/usr/bin/env python3
"""`perfsim run`'s interpreter against XLA:CPU on the JAX MoE goldens, with the ratio.

perfsim: bench/moe_golden_bench (Google Benchmark) times RunModule on each
tests/testdata/hlo/jax/moe_* compiled module and its golden inputs, sharded per
device, parse and loading excluded. XLA:CPU: tools/jax/time_xla_cpu.py times
the same cases on the same inputs, compile excluded (for modules with ragged-dot
or ragged-all-to-all, which XLA:CPU cannot run, the executable twin the goldens
come from). Both are medians or means of repeated runs in one process each;
ratio = perfsim / XLA:CPU (below 1: perfsim is faster).

Usage (repository root, after `ninja -C BUILD moe_golden_bench`):
  python3 bench/run_vs_xla.py --bench BUILD/bench/moe_golden_bench
      [--xla-json FILE]   (reuse a time_xla_cpu.py --json result)
      [--min-time 0.5]
Times depend on the machine and its load: compare figures of one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str]) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--bench", default=os.path.join(_REPO, "build", "bench",
                                                      "moe_golden_bench"))
  parser.add_argument("--xla-json", default=None)
  parser.add_argument("--min-time", default="0.5")
  args = parser.parse_args(argv)

  xla_json = args.xla_json
  if xla_json is None:
    xla_json = os.path.join(tempfile.mkdtemp(), "xla.json")
    subprocess.run([sys.executable, os.path.join(_REPO, "tools", "jax", "time_xla_cpu.py"),
                    "--json", xla_json], check=True, capture_output=True)
  with open(xla_json, encoding="utf-8") as f:
    xla = {r["name"]: r for r in json.load(f)["results"]}

  bench = subprocess.run([args.bench, "--benchmark_format=json",
                          f"--benchmark_min_time={args.min_time}"],
                         check=True, capture_output=True, text=True)
  results = json.loads(bench.stdout)["benchmarks"]

  print(f"{'module':26s} {'devices':>7s} {'perfsim ms':>10s} {'XLA:CPU ms':>10s} {'ratio':>7s}"
        "  XLA ran")
  for r in results:
    name = r["name"].split("/")[1]
    perfsim_s = r["real_time"] / 1e3  # milliseconds
    x = xla.get(name)
    if x is None:
      continue
    print(f"{name:26s} {int(r.get('devices', 1)):7d} {perfsim_s * 1e3:10.3f}"
          f" {x['xla_cpu_seconds'] * 1e3:10.3f} {perfsim_s / x['xla_cpu_seconds']:7.2f}"
          f"  {x['ran']}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
