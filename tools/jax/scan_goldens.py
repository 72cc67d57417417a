#!/usr/bin/env python3
"""Scanned and unrolled layer stacks with their gradient, for costing real XLA loops (issue 12).

Writes, under tests/testdata/hlo/scan (or --out):

  mlp_scan_n{4,8}.{lowered,compiled}.hlo      lax.scan over N stacked layers, value_and_grad
  mlp_unrolled_n{4,8}.{lowered,compiled}.hlo  the same stack as a Python loop over N layers
  mlp_scan_dp8_n4.{lowered,compiled}.hlo      data-parallel shard_map of the scan on 8 devices,
                                              gradients averaged with lax.pmean
  <name>.cost.json                            XLA's cost analysis of each form (see below)
  MANIFEST.json                               shapes, N, versions, XLA's flops / bytes

The layer (D=256, F=1024, batch B=64, f32), residual MLP:

  h <- h + tanh(h @ w1) @ w2,    w1 [D, F], w2 [F, D]
  loss = 0.5 * sum(h_N ** 2)

and every module returns (loss, d loss / d w1, d loss / d w2). The scan form takes the weights
stacked, w1 [N, D, F] and w2 [N, F, D], and scans over the leading axis; the unrolled form
takes 2N separate arrays (w1_0, w2_0, w1_1, ...) so that it is the program a user writes
without a scan, with the same arithmetic and the same bytes of weights and gradients. The
data-parallel module splits the batch (8 x 64 rows) over mesh axis "data" of 8 devices; each
device computes its gradients and lax.pmean averages them, so its compiled (SPMD) module holds
an all-reduce of the gradients (N·2·D·F f32 = 8 MiB for N = 4).

Only HLO text and JSON are written, no .npy (the weights alone are MiBs): these modules are
for costing, not for numerics.

cost.json holds, as generate_goldens.py's do: `lowered` / `compiled` (jax's
Lowered.cost_analysis() / Compiled.cost_analysis() as returned) and `lowered_hlo_text` /
`compiled_hlo_text` (XLA's hlo_module_cost_analysis of the module parsed back from the .hlo
file next to it), the numbers tests/cost compares perfsim's xla-compatible counts with.

Usage (from the repository root): python3 tools/jax/scan_goldens.py [--out DIR]
Deterministic: no random data enters the text (inputs are zeros of the right shape).
"""

from __future__ import annotations

import os
import sys

# Must happen before jax is imported anywhere.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position
import platform  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import jaxlib  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
from jax import shard_map  # pylint: disable=wrong-import-position
from jax.sharding import Mesh  # pylint: disable=wrong-import-position
from jax.sharding import NamedSharding  # pylint: disable=wrong-import-position
from jax.sharding import PartitionSpec as P  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=tools/jax/)")
jax.config.update("jax_traceback_in_locations_limit", 1)

import golden_lib  # pylint: disable=wrong-import-position

DEFAULT_OUT = os.path.join(_REPO, "tests", "testdata", "hlo", "scan")

D = 256
F = 1024
B = 64
DEVICES = 8


def layer(h, w1, w2):
  return h + jnp.tanh(h @ w1) @ w2


def loss_of(h):
  return 0.5 * jnp.sum(h * h)


def scan_loss(w1s, w2s, x):
  def step(h, w):
    return layer(h, w[0], w[1]), None

  h, _ = jax.lax.scan(step, x, (w1s, w2s))
  return loss_of(h)


def scan_program(w1s, w2s, x):
  """(loss, dw1 [N,D,F], dw2 [N,F,D]) of the scanned stack."""
  loss, (g1, g2) = jax.value_and_grad(scan_loss, argnums=(0, 1))(w1s, w2s, x)
  return loss, g1, g2


def unrolled_program(n):
  def unrolled_loss(ws, x):
    h = x
    for i in range(n):
      h = layer(h, ws[2 * i], ws[2 * i + 1])
    return loss_of(h)

  def program(*args):
    ws, x = list(args[:-1]), args[-1]
    loss, grads = jax.value_and_grad(unrolled_loss)(ws, x)
    return (loss, *grads)

  return program


def data_parallel_program(mesh):
  def body(w1s, w2s, x):
    loss, g1, g2 = scan_program(w1s, w2s, x)
    return (jax.lax.pmean(loss, "data"), jax.lax.pmean(g1, "data"),
            jax.lax.pmean(g2, "data"))

  def program(w1s, w2s, x):
    return shard_map(body, mesh=mesh, in_specs=(P(), P(), P("data", None)),
                     out_specs=(P(), P(), P()), check_vma=False)(w1s, w2s, x)

  return program


def named(fn, name):
  def wrapper(*args):
    return fn(*args)

  wrapper.__name__ = name
  wrapper.__qualname__ = name
  return wrapper


def write(out_dir, name, description, fn, args, shardings=None, extra=None):
  jax.clear_caches()
  jitted = jax.jit(named(fn, name), in_shardings=shardings)
  lowered = jitted.lower(*args)
  lowered_text = lowered.as_text(dialect="hlo")
  compiled = lowered.compile()
  compiled_text = compiled.runtime_executable().hlo_modules()[0].to_string(
      golden_lib._compiled_print_options())  # pylint: disable=protected-access
  lowered_module = golden_lib.check_round_trip(lowered_text)
  compiled_module = golden_lib.check_round_trip(compiled_text)
  files = {"lowered": f"{name}.lowered.hlo", "compiled": f"{name}.compiled.hlo",
           "cost": f"{name}.cost.json"}
  for form, text in (("lowered", lowered_text), ("compiled", compiled_text)):
    with open(os.path.join(out_dir, files[form]), "w", encoding="utf-8") as f:
      f.write(text if text.endswith("\n") else text + "\n")
  cost = {
      "lowered": golden_lib._plain_cost(lowered.cost_analysis()),  # pylint: disable=protected-access
      "compiled": golden_lib._plain_cost(compiled.cost_analysis()),  # pylint: disable=protected-access
      "lowered_hlo_text": golden_lib._cost_of_text(lowered_module),  # pylint: disable=protected-access
      "compiled_hlo_text": golden_lib._cost_of_text(compiled_module),  # pylint: disable=protected-access
      "notes": ("lowered/compiled: jax Lowered.cost_analysis() and Compiled.cost_analysis()"
                " as returned (XLA:CPU HloCostAnalysis). *_hlo_text: XLA's"
                " hlo_module_cost_analysis of the module parsed back from the .hlo file"
                " next to this one."),
  }
  with open(os.path.join(out_dir, files["cost"]), "w", encoding="utf-8") as f:
    f.write(golden_lib.json_text(cost) + "\n")
  entry = {
      "name": name,
      "description": description,
      "files": files,
      "parameters": [{"shape": list(np.shape(a)), "dtype": "f32"} for a in args],
      "xla_cost": {form: {k: cost[form].get(k) for k in ("flops", "transcendentals",
                                                            "bytes accessed")}
                   for form in ("lowered_hlo_text", "compiled_hlo_text")},
      "opcodes": {"lowered": golden_lib.opcodes_of(lowered_module),
                  "compiled": golden_lib.opcodes_of(compiled_module)},
  }
  entry.update(extra or {})
  print(f"{name}: ok (lowered {len(lowered_text)} B, compiled {len(compiled_text)} B)",
        flush=True)
  return entry


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default=DEFAULT_OUT)
  args = parser.parse_args(argv)
  if jax.device_count() != DEVICES:
    raise SystemExit(f"expected {DEVICES} CPU devices; got {jax.device_count()}")
  os.makedirs(args.out, exist_ok=True)
  for fname in os.listdir(args.out):
    if fname.endswith((".hlo", ".cost.json")):
      os.remove(os.path.join(args.out, fname))

  zeros = lambda *shape: np.zeros(shape, np.float32)  # pylint: disable=unnecessary-lambda-assignment
  entries = []
  for n in (4, 8):
    entries.append(write(
        args.out, f"mlp_scan_n{n}",
        f"lax.scan over {n} residual MLP layers (D={D}, F={F}, B={B}, f32), value_and_grad",
        scan_program, (zeros(n, D, F), zeros(n, F, D), zeros(B, D)),
        extra={"layers": n, "form": "scan", "num_devices": 1}))
    entries.append(write(
        args.out, f"mlp_unrolled_n{n}",
        f"the same {n} layers unrolled (a Python loop over 2N weight arrays), value_and_grad",
        unrolled_program(n), tuple([zeros(D, F), zeros(F, D)] * n) + (zeros(B, D),),
        extra={"layers": n, "form": "unrolled", "num_devices": 1}))
  n = 4
  mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("data",))
  shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P()),
               NamedSharding(mesh, P("data", None)))
  entries.append(write(
      args.out, f"mlp_scan_dp{DEVICES}_n{n}",
      f"data-parallel shard_map of mlp_scan_n{n} over mesh axis 'data' ({DEVICES} devices,"
      f" {B} rows each); loss and gradients averaged with lax.pmean",
      data_parallel_program(mesh), (zeros(n, D, F), zeros(n, F, D), zeros(DEVICES * B, D)),
      shardings=shardings,
      extra={"layers": n, "form": "scan", "num_devices": DEVICES, "mesh": {"data": DEVICES},
             "gradient_bytes_per_device": n * 2 * D * F * 4}))

  manifest = {
      "generator": "tools/jax/scan_goldens.py",
      "command": "python3 tools/jax/scan_goldens.py",
      "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                   "numpy": np.__version__, "python": platform.python_version()},
      "environment": {"XLA_FLAGS": os.environ["XLA_FLAGS"],
                      "JAX_PLATFORMS": os.environ["JAX_PLATFORMS"]},
      "model": {"layer": "h <- h + tanh(h @ w1) @ w2; loss = 0.5 * sum(h_N ** 2)",
                "D": D, "F": F, "B": B, "dtype": "f32",
                "outputs": "(loss, d loss / d w1, d loss / d w2); unrolled: one gradient per"
                           " weight array, in parameter order"},
      "modules": entries,
  }
  with open(os.path.join(args.out, "MANIFEST.json"), "w", encoding="utf-8") as f:
    f.write(golden_lib.json_text(manifest) + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
