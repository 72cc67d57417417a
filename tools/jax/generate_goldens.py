#!/usr/bin/env python3
"""Generates the JAX golden HLO modules under tests/testdata/hlo/jax.

For every module: <name>.lowered.hlo, <name>.compiled.hlo (HLO text),
<name>.cost.json (XLA cost analysis), <name>.in<i>.npy / <name>.out<i>.npy
(inputs and JAX's outputs), plus MANIFEST.json listing all of them.

Usage (from the repository root):
  python3 tools/jax/generate_goldens.py [--out DIR] [--only NAME_REGEX]

JAX is test tooling only; perfsim never imports or links it. The script pins
itself to 8 virtual CPU devices and is deterministic (fixed seeds; source
paths in HLO metadata are made relative to the repository root). See
tools/jax/README.md.
"""

from __future__ import annotations

import os
import sys

# Must happen before jax is imported anywhere.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position
import platform  # pylint: disable=wrong-import-position
import re  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import jaxlib  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

# Source paths in metadata become repository-relative ("tools/jax/...").
jax.config.update("jax_hlo_source_file_canonicalization_regex",
                  r".*/(?=tools/jax/)")
# Only the innermost Python frame per op, so stack-frame tables do not churn
# when the driver changes.
jax.config.update("jax_traceback_in_locations_limit", 1)

import golden_lib  # pylint: disable=wrong-import-position
import moe_cases  # pylint: disable=wrong-import-position
import op_cases  # pylint: disable=wrong-import-position

DEFAULT_OUT = os.path.join(_REPO, "tests", "testdata", "hlo", "jax")


def _all_cases():
  return op_cases.cases() + moe_cases.cases()


def main(argv: list[str]) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=DEFAULT_OUT)
  parser.add_argument("--only", default=None,
                      help="regex; write only matching modules (the manifest"
                      " is then not rewritten)")
  args = parser.parse_args(argv)

  if jax.device_count() != 8:
    raise SystemExit(f"expected 8 CPU devices; got {jax.device_count()}")
  os.makedirs(args.out, exist_ok=True)
  cases = _all_cases()
  names = [c.name for c in cases]
  if len(set(names)) != len(names):
    raise SystemExit("duplicate case names")
  if args.only:
    cases = [c for c in cases if re.search(args.only, c.name)]

  if args.only is None:
    # Stale files from renamed/removed modules must not linger.
    for fname in os.listdir(args.out):
      if fname.endswith((".hlo", ".npy", ".cost.json")):
        os.remove(os.path.join(args.out, fname))

  entries = []
  for case in cases:
    entry = golden_lib.write_case(case, args.out)
    print(f"{case.name}: ok ({', '.join(entry['opcodes']['lowered'])})",
          flush=True)
    entries.append(entry)

  if args.only is not None:
    return 0
  all_opcodes = sorted({op for e in entries for op in e["opcodes"]["lowered"]}
                       | {op for e in entries for op in e["opcodes"]["compiled"]})
  manifest = {
      "generator": "tools/jax/generate_goldens.py",
      "command": "python3 tools/jax/generate_goldens.py",
      "versions": {
          "jax": jax.__version__,
          "jaxlib": jaxlib.__version__,
          "numpy": np.__version__,
          "python": platform.python_version(),
      },
      "environment": {
          "XLA_FLAGS": os.environ["XLA_FLAGS"],
          "JAX_PLATFORMS": os.environ["JAX_PLATFORMS"],
      },
      "conventions": {
          "npy": "inputs <name>.in<i>.npy in parameter order; outputs"
                 " <name>.out<i>.npy, tuple outputs flattened in order. bf16"
                 " and f8 arrays are stored as their bit patterns (npy_dtype"
                 " <u2 / |u1); 'dtype' is the real element type.",
          "multi_device": "inputs/outputs are global arrays; partition_spec"
                          " gives the mesh axis per dimension (null ="
                          " replicated) and per_device_shape the block each"
                          " device holds in the compiled (SPMD) module.",
      },
      "moe_config": moe_cases.config_json(),
      "opcodes_used": all_opcodes,
      "modules": entries,
  }
  with open(os.path.join(args.out, "MANIFEST.json"), "w",
            encoding="utf-8") as f:
    f.write(golden_lib.json_text(manifest) + "\n")
  print(f"wrote {len(entries)} modules to {args.out}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
