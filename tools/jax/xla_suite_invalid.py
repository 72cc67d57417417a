#!/usr/bin/env python3
"""XLA's parser reads them, XLA's compiler refuses them: the suite modules perfsim rejects.

tests/testdata/xla_suite_known_rejections.txt lists the modules of XLA's test suite
(../shared/reference/xla_test_suite) marked `accept` in expectations.csv that
`perfsim hlo check` rejects. The suite's `accept` is what jaxlib's HLO parser
(`hlo_module_from_text`, no verifier) reads; the tests holding these modules parse
them with ParseAndReturnUnverifiedModule. For every listed module this script

  1. has jaxlib 0.10.2 (the XLA the suite was taken from) parse it: it must parse;
  2. has XLA compile it for XLA:CPU on one device (HLO -> StableHLO -> compile, which
     verifies the program) and prints XLA's first error line: XLA's own compiler refuses
     each one, for the rule the list names;
  3. prints perfsim's message for it (`perfsim hlo check`).

It exits 1 if a listed module does not parse in XLA or compiles in XLA (then it is
valid and perfsim must accept it). Run by hand, not in CI:

  python3 tools/jax/xla_suite_invalid.py [--perfsim build/perfsim]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # pylint: disable=wrong-import-position
import subprocess  # pylint: disable=wrong-import-position
import sys  # pylint: disable=wrong-import-position

import jax.extend  # pylint: disable=wrong-import-position
from jax._src.lib import _jax  # pylint: disable=wrong-import-position
from jax._src.lib import xla_client  # pylint: disable=wrong-import-position
from jaxlib import _hlo  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
_SUITE = os.path.join(os.path.dirname(_REPO), "shared", "reference", "xla_test_suite")
_LIST = os.path.join(_REPO, "tests", "testdata", "xla_suite_known_rejections.txt")


def _listed() -> list[tuple[str, str]]:
  out = []
  with open(_LIST, encoding="utf-8") as f:
    for line in f:
      name, _, why = line.partition("#")
      if name.strip():
        out.append((name.strip(), why.strip()))
  return out


def _one_line(text: str) -> str:
  return " | ".join(l.strip() for l in text.splitlines() if l.strip())[:240]


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--perfsim", default=os.path.join(_REPO, "build", "perfsim"))
  args = parser.parse_args()
  backend = jax.extend.backend.get_backend("cpu")
  devices = xla_client.DeviceList(tuple(backend.devices()[:1]))
  failures = 0
  for name, why in _listed():
    path = os.path.join(_SUITE, "modules", name)
    with open(path, encoding="utf-8") as f:
      text = f.read()
    print(f"{name}  ({why})")
    try:
      module = _hlo.hlo_module_from_text(text)
    except Exception as e:  # pylint: disable=broad-except
      print(f"  XLA parser: REJECTS ({_one_line(str(e))})")
      failures += 1
      continue
    print("  XLA parser: accepts")
    try:
      mlir = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
      backend.compile_and_load(mlir, devices, xla_client.CompileOptions())
      print("  XLA compile: COMPILES (valid: perfsim must accept it)")
      failures += 1
    except Exception as e:  # pylint: disable=broad-except
      print(f"  XLA compile: refuses: {_one_line(str(e))}")
    check = subprocess.run([args.perfsim, "hlo", "check", path], capture_output=True, text=True,
                           check=False)
    print(f"  perfsim (exit {check.returncode}): {_one_line(check.stderr)}")
  print(f"{len(_listed())} listed; {failures} that XLA does not refuse")
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
