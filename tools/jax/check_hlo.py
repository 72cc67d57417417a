#!/usr/bin/env python3
"""Checks the generated goldens: XLA parses every .hlo file, the manifest
matches the files on disk, and (optionally) perfsim's parser accepts them.

Usage (from the repository root):
  python3 tools/jax/check_hlo.py [--dir tests/testdata/hlo/jax]
                                 [--perfsim build/perfsim]

Exit status 0 when every check passes, 1 otherwise. With --perfsim, each
file is run through `perfsim hlo check FILE` and failures are listed with
the first line of perfsim's error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from jaxlib import _hlo

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def _check_manifest(directory: str) -> list[str]:
  problems = []
  with open(os.path.join(directory, "MANIFEST.json"), encoding="utf-8") as f:
    manifest = json.load(f)
  listed = {"MANIFEST.json"}
  for module in manifest["modules"]:
    files = module["files"]
    names = [files["lowered"], files["compiled"], files["cost"]]
    names += files["inputs"] + files["outputs"]
    listed.update(names)
    for name in names:
      if not os.path.exists(os.path.join(directory, name)):
        problems.append(f"{module['name']}: missing {name}")
    for kind, entries in (("inputs", module["parameters"]),
                          ("outputs", module["outputs"])):
      for name, entry in zip(files[kind], entries):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
          continue
        array = np.load(path, allow_pickle=False)
        if list(array.shape) != entry["shape"]:
          problems.append(f"{name}: shape {list(array.shape)} vs manifest"
                          f" {entry['shape']}")
        if array.dtype.str != entry["npy_dtype"]:
          problems.append(f"{name}: npy dtype {array.dtype.str} vs manifest"
                          f" {entry['npy_dtype']}")
  for name in sorted(os.listdir(directory)):
    if name not in listed:
      problems.append(f"{name}: not listed in MANIFEST.json")
  return problems


def main(argv: list[str]) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
      "--dir", default=os.path.join(_REPO, "tests", "testdata", "hlo", "jax"))
  parser.add_argument("--perfsim", default=None,
                      help="path of the perfsim binary; runs `hlo check`")
  args = parser.parse_args(argv)

  hlo_files = sorted(f for f in os.listdir(args.dir) if f.endswith(".hlo"))
  failures = _check_manifest(args.dir)
  for name in hlo_files:
    with open(os.path.join(args.dir, name), encoding="utf-8") as f:
      text = f.read()
    try:
      _hlo.hlo_module_from_text(text)
    except Exception as e:  # pylint: disable=broad-except
      failures.append(f"{name}: XLA parser: {str(e).splitlines()[0]}")
  print(f"XLA parser: {len(hlo_files)} files checked")

  if args.perfsim:
    perfsim_failures = 0
    for name in hlo_files:
      result = subprocess.run(
          [args.perfsim, "hlo", "check", os.path.join(args.dir, name)],
          capture_output=True, text=True, check=False)
      if result.returncode != 0:
        perfsim_failures += 1
        message = (result.stderr or result.stdout).strip().splitlines()
        failures.append(f"{name}: perfsim hlo check rc={result.returncode}: "
                        f"{message[0] if message else '(no output)'}")
    print(f"perfsim hlo check: {len(hlo_files) - perfsim_failures} of"
          f" {len(hlo_files)} files pass")

  for failure in failures:
    print("FAIL", failure)
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
