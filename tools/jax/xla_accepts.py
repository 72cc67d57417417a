#!/usr/bin/env python3
"""XLA accepts what perfsim prints: every backend's `perfsim lower` HLO, parsed,
compiled and run by XLA:CPU, with XLA's outputs kept as goldens.

For each case (backend x phase x device count, on the `pico` model of
tests/testdata/xla_accepts/pico.textproto) the script

  1. prints the module with `perfsim lower` (the backend's own, "native",
     grouped matmuls) and has XLA parse it (jaxlib `hlo_module_from_text`),
     convert it to StableHLO and compile it for XLA:CPU;
  2. if XLA:CPU cannot compile it (kernel custom-calls perfsim.gmm / tgmm /
     fused_ffn, ragged-dot, ragged-all-to-all: jaxlib 0.10.2 has no CPU
     emitter for the last two, see README.md), prints the same step with
     `--grouped-matmul ragged_dot` (kernel backends: the custom-calls become
     ragged-dot) and `--grouped-matmul masked_dot` (every grouped matmul as
     dense dots under a group mask), has XLA parse both and compiles and runs
     the masked one;
  3. runs the module XLA compiled on the inputs `perfsim validate` uses
     (`perfsim lower --inputs-dir`, seed 1, routing random), on as many XLA:CPU
     host devices as the module has, and writes its inputs, its outputs (one
     .npy per tensor, the devices stacked on a leading axis) and the HLO text
     under --out;
  4. records in MANIFEST.json every module printed: parsed, compiled, ran,
     and for those that did not run, XLA's own error.

tests/lowering/xla_accepts_test.cc then runs each module that ran in XLA
through perfsim's interpreter on the same inputs and compares with XLA's
outputs. Python is test tooling only: the C++ test reads the committed files.

Usage (from the repository root, after building perfsim):
  python3 tools/jax/xla_accepts.py [--perfsim build/perfsim]
      [--out tests/testdata/xla_accepts]

Deterministic: same perfsim, same files (the inputs come from perfsim's
SplitMix64 stream; XLA:CPU's f32 results do not vary between runs).
"""

from __future__ import annotations

import os
import sys

# Before jax is imported: 8 host devices for the multi-device modules.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import argparse  # pylint: disable=wrong-import-position
import dataclasses  # pylint: disable=wrong-import-position
import glob  # pylint: disable=wrong-import-position
import json  # pylint: disable=wrong-import-position
import platform  # pylint: disable=wrong-import-position
import re  # pylint: disable=wrong-import-position
import subprocess  # pylint: disable=wrong-import-position
import tempfile  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import jax.extend  # pylint: disable=wrong-import-position
import jaxlib  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
from jax._src.lib import _jax  # pylint: disable=wrong-import-position
from jax._src.lib import xla_client  # pylint: disable=wrong-import-position
from jax.sharding import Mesh  # pylint: disable=wrong-import-position
from jax.sharding import NamedSharding  # pylint: disable=wrong-import-position
from jax.sharding import PartitionSpec as P  # pylint: disable=wrong-import-position
from jaxlib import _hlo  # pylint: disable=wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
DEFAULT_OUT = os.path.join(_REPO, "tests", "testdata", "xla_accepts")
MODEL = "pico.textproto"
BATCH, SEQ, SEED = 4, 4, 1

# (backend, devices, parallelism) on pico. Device counts are the ones validate
# uses (1 and 4: dp=2 x fsdp=2 for the data-parallel backends, ep=4 for the
# expert-parallel ones), with the parallelism spelled out so the C++ test can
# lower the same step.
CASES = [
    ("dense_einsum", 1, "dp=1"),
    ("dense_einsum", 4, "dp=2,fsdp=2"),
    ("capacity_einsum", 1, "dp=1"),
    ("capacity_einsum", 4, "dp=2,fsdp=2"),
    ("sparse_ragged_dot", 1, "dp=1"),
    ("sparse_ragged_dot", 4, "dp=2,fsdp=2"),
    ("megablox_gmm", 1, "dp=1"),
    ("megablox_gmm", 4, "dp=2,fsdp=2"),
    ("ep_ragged_a2a", 1, "ep=1"),
    ("ep_ragged_a2a", 4, "ep=4"),
    ("ring_of_experts", 1, "ep=1"),
    ("ring_of_experts", 4, "ep=4"),
    ("grouped_gemm_aligned", 1, "dp=1"),
    ("grouped_gemm_aligned", 4, "ep=4"),
    ("fused_expert_ffn", 1, "dp=1"),
    ("fused_expert_ffn", 4, "dp=2,fsdp=2"),
]
PHASES = ("fwd", "fwd_bwd")
KERNEL_BACKENDS = ("megablox_gmm", "ring_of_experts", "fused_expert_ffn")


@dataclasses.dataclass
class Module:
  name: str
  backend: str
  phase: str
  devices: int
  parallelism: str
  form: str  # native | ragged_dot | masked_dot
  args: list[str]
  text: str = ""
  parsed: bool = False
  compiled: bool = False
  ran: bool = False
  xla_error: str = ""
  # How XLA ran it: "partitions" (the text as printed, N SPMD partitions) or "replicas" (the
  # text through as_replicas(), N replicas).
  mode: str = "partitions"


def _first_line(e: BaseException) -> str:
  lines = [l for l in str(e).splitlines() if l.strip()]
  return lines[0] if lines else type(e).__name__


def _perfsim_args(m: Module, out: str) -> list[str]:
  # lower takes predict's scenario flags: a slice of the parallelism's device
  # count (a row of TPU v5p chips, one device each) is named with it. The module
  # does not depend on the chip.
  args = ["lower", "--model", os.path.join(out, MODEL), "--backend", m.backend,
          "--phase", m.phase, "--batch", str(BATCH), "--seq", str(SEQ),
          "--parallelism", m.parallelism, "--hw", "tpu_v5p",
          "--mesh", f"{m.devices}x1x1"]
  if m.form != "native":
    args += ["--grouped-matmul", m.form]
  return args


def _lower(perfsim: str, m: Module, out: str, inputs_dir: str | None) -> None:
  args = _perfsim_args(m, out)
  # The recorded command names the model by its repository path.
  m.args = [a if not a.endswith(MODEL) else
            os.path.relpath(a, _REPO) for a in args]
  if inputs_dir is not None:
    args += ["--inputs-dir", inputs_dir, "--seed", str(SEED)]
  result = subprocess.run([perfsim] + args, capture_output=True, text=True,
                          check=False)
  if result.returncode != 0:
    raise SystemExit(f"perfsim {' '.join(args)}: rc={result.returncode}\n"
                     f"{result.stderr}")
  m.text = result.stdout


_ALLOCATE = re.compile(
    r"^(\s*)(\S+) = (\S+) custom-call\(\), custom_call_target=\"AllocateBuffer\".*$",
    re.MULTILINE)


def _probe_without_allocate_buffer(text: str, devices: int) -> str:
  """XLA:CPU has no AllocateBuffer (jax.lax.empty) on the host; with it replaced by zeros,
  what does XLA stop at next? Returns XLA's first error line ("" if it compiles)."""
  if devices > 1 and "partition-id()" in text:
    text = as_replicas(text)
  zeros = _ALLOCATE.sub(
      lambda m: (f"{m.group(1)}{m.group(2)}.zero = {m.group(3).split('[')[0]}[] constant(0)\n"
                 f"{m.group(1)}{m.group(2)} = {m.group(3)} broadcast({m.group(2)}.zero), "
                 "dimensions={}"), text)
  try:
    _compile(_hlo.hlo_module_from_text(zeros), devices,
             replicas=devices > 1 and "replica-id()" in zeros)
  except Exception as e:  # pylint: disable=broad-except
    return _first_line(e)
  return ""


_CHANNEL = re.compile(r", channel_id=\d+|, use_global_device_ids=true")


def as_replicas(text: str) -> str:
  """The same per-device program with the devices numbered as replicas, not partitions.

  XLA's SPMD partitioner refuses partition-id in a module without sharding annotations
  ("PartitionId instruction is not supported for SPMD partitioning"), and PJRT needs the
  partitioner for more than one partition. As N replicas of one partition, replica-id is what
  partition-id was, and collectives without channel_id group replica ids, which are what their
  groups listed. The rewrite renames the device-id space; no value changes."""
  return _CHANNEL.sub("", text.replace("partition-id()", "replica-id()"))


def _compile(module: _hlo.HloModule, devices: int, replicas: bool = False):
  """XLA:CPU executable of a per-device SPMD module on `devices` devices."""
  mlir = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
  options = xla_client.CompileOptions()
  build = options.executable_build_options
  if replicas:
    build.num_replicas = devices
    build.num_partitions = 1
    build.use_spmd_partitioning = False
    build.device_assignment = xla_client.DeviceAssignment.create(
        np.arange(devices).reshape(devices, 1))
    backend = jax.extend.backend.get_backend("cpu")
    device_list = xla_client.DeviceList(tuple(backend.devices()[:devices]))
    return backend.compile_and_load(mlir, device_list, options)
  # perfsim's collectives name devices by partition (channel_id, no
  # use_global_device_ids: XLA's cross-partition mode) and partition-id gives
  # the device's coordinates, so the module runs as `devices` partitions of
  # one replica. The module is already partitioned: the SPMD partitioner has
  # nothing to split (no sharding annotations) and leaves it as is.
  build.num_replicas = 1
  build.num_partitions = devices
  build.use_spmd_partitioning = devices > 1
  # GSPMD CHECK-fails on a ragged-dot ("RaggedDot is only supported with Shardy"), killing the
  # process; Shardy leaves it for the CPU backend to refuse with a Status.
  build.use_shardy_partitioner = True
  build.device_assignment = xla_client.DeviceAssignment.create(
      np.arange(devices).reshape(1, devices))
  backend = jax.extend.backend.get_backend("cpu")
  device_list = xla_client.DeviceList(tuple(backend.devices()[:devices]))
  return backend.compile_and_load(mlir, device_list, options)


def _run(executable, devices: int, inputs: list[list[np.ndarray]]):
  """Runs on per-device inputs[param][device]; returns outputs[out][device]."""
  backend = jax.extend.backend.get_backend("cpu")
  devs = backend.devices()[:devices]
  mesh = Mesh(np.array(devs), ("d",))
  args = []
  for shards in inputs:
    shape = (sum(s.shape[0] for s in shards),) + shards[0].shape[1:]
    args.append(jax.make_array_from_single_device_arrays(
        shape, NamedSharding(mesh, P("d")),
        [jax.device_put(s, d) for s, d in zip(shards, devs)]))
  results = executable.execute_sharded(args)
  outs = results.disassemble_into_single_device_arrays()
  return [[np.asarray(a) for a in per_device] for per_device in outs]


def _stage(path: str | None, text: str) -> None:
  if path:
    with open(path, "w", encoding="utf-8") as f:
      f.write(text)


def _process(perfsim: str, m: Module, out: str, run: bool,
             stage_file: str | None = None) -> dict:
  with tempfile.TemporaryDirectory() as tmp:
    _lower(perfsim, m, out, tmp if run else None)
    _stage(stage_file, "parse")
    try:
      module = _hlo.hlo_module_from_text(m.text)
      m.parsed = True
    except Exception as e:  # pylint: disable=broad-except
      m.xla_error = f"parse: {_first_line(e)}"
      return _entry(m, [])
    _stage(stage_file, "compile")
    try:
      if m.devices > 1 and "partition-id()" in m.text:
        m.mode = "replicas"
        executable = _compile(_hlo.hlo_module_from_text(as_replicas(m.text)), m.devices,
                              replicas=True)
      else:
        executable = _compile(module, m.devices)
      m.compiled = True
    except Exception as e:  # pylint: disable=broad-except
      m.xla_error = f"compile: {_first_line(e)}"
      if "AllocateBuffer" in m.xla_error:
        _stage(stage_file, f"{m.xla_error}; with AllocateBuffer replaced by zeros: compile")
        m.xla_error += ("; with AllocateBuffer replaced by zeros: "
                        f"{_probe_without_allocate_buffer(m.text, m.devices) or 'compiles'}")
      return _entry(m, [])
    if not run:
      return _entry(m, [])
    count = len(glob.glob(os.path.join(tmp, "in*.d0.npy")))
    inputs = [[np.load(os.path.join(tmp, f"in{i}.d{d}.npy"))
               for d in range(m.devices)] for i in range(count)]
  _stage(stage_file, "run")
  outputs = _run(executable, m.devices, inputs)
  m.ran = True
  files = []
  with open(os.path.join(out, f"{m.name}.hlo"), "w", encoding="utf-8") as f:
    f.write(m.text)
  files.append(f"{m.name}.hlo")
  for kind, arrays in (("in", inputs), ("out", outputs)):
    for i, per_device in enumerate(arrays):
      # One file per tensor: the devices' values stacked on a new leading axis.
      name = f"{m.name}.{kind}{i}.npy"
      np.save(os.path.join(out, name), np.ascontiguousarray(np.stack(per_device)))
      files.append(name)
  return _entry(m, files, len(inputs), len(outputs))


def _entry(m: Module, files: list[str], inputs: int = 0,
           outputs: int = 0) -> dict:
  return {
      "name": m.name, "backend": m.backend, "phase": m.phase,
      "devices": m.devices, "parallelism": m.parallelism, "form": m.form,
      "command": "perfsim " + " ".join(m.args),
      "parsed": m.parsed, "compiled": m.compiled, "ran": m.ran,
      "xla_error": m.xla_error, "files": files, "inputs": inputs,
      "outputs": outputs, "mode": m.mode,
  }


def _process_isolated(perfsim: str, m: Module, out: str, run: bool) -> dict:
  """_process in a child process: XLA CHECK-fails or segfaults on some modules it cannot
  compile (e.g. a ragged-all-to-all among replicas) instead of returning a Status. The crash
  is recorded with the stage it happened in."""
  with tempfile.NamedTemporaryFile("r", suffix=".stage", delete=False) as stage:
    stage_path = stage.name
  request = json.dumps({"perfsim": perfsim, "out": out, "run": run,
                        "module": dataclasses.asdict(m), "stage": stage_path})
  result = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"],
                          input=request, capture_output=True, text=True, check=False)
  with open(stage_path, encoding="utf-8") as f:
    reached = f.read()
  os.remove(stage_path)
  if result.returncode == 0:
    entry = json.loads(result.stdout.strip().splitlines()[-1])
    m.parsed, m.compiled, m.ran = entry["parsed"], entry["compiled"], entry["ran"]
    m.xla_error, m.mode = entry["xla_error"], entry["mode"]
    return entry
  if result.returncode > 0:
    raise SystemExit(f"{m.name}: worker failed (rc={result.returncode}):\n{result.stderr}")
  # Killed by a signal inside XLA.
  _lower(perfsim, m, out, None)
  m.parsed = reached != "parse"
  m.xla_error = f"{reached}: XLA crashed (signal {-result.returncode})"
  if m.devices > 1 and "partition-id()" in m.text:
    m.mode = "replicas"
  return _entry(m, [])


def _worker() -> int:
  request = json.loads(sys.stdin.read())
  m = Module(**request["module"])
  entry = _process(request["perfsim"], m, request["out"], request["run"], request["stage"])
  print(json.dumps(entry))
  return 0


def main(argv: list[str]) -> int:
  if argv == ["--worker"]:
    return _worker()
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--perfsim", default=os.path.join(_REPO, "build",
                                                        "perfsim"))
  parser.add_argument("--out", default=DEFAULT_OUT)
  args = parser.parse_args(argv)
  if jax.device_count() < 8:
    raise SystemExit(f"expected 8 CPU devices; got {jax.device_count()}")
  for name in os.listdir(args.out):
    if name.endswith((".hlo", ".npy")):
      os.remove(os.path.join(args.out, name))

  entries = []
  for backend, devices, parallelism in CASES:
    for phase in PHASES:
      stem = f"{backend}_{phase}_{devices}dev"
      native = Module(f"{stem}_native", backend, phase, devices, parallelism,
                      "native", [])
      entry = _process_isolated(args.perfsim, native, args.out, run=True)
      entries.append(entry)
      if native.ran:
        print(f"{native.name}: parsed, compiled, ran", flush=True)
        continue
      print(f"{native.name}: parsed={native.parsed}: {native.xla_error}",
            flush=True)
      if backend in KERNEL_BACKENDS:
        ragged = Module(f"{stem}_ragged_dot", backend, phase, devices,
                        parallelism, "ragged_dot", [])
        entries.append(_process_isolated(args.perfsim, ragged, args.out, run=False))
        print(f"{ragged.name}: parsed={ragged.parsed} "
              f"compiled={ragged.compiled} {ragged.xla_error}", flush=True)
      masked = Module(f"{stem}_masked_dot", backend, phase, devices,
                      parallelism, "masked_dot", [])
      entries.append(_process_isolated(args.perfsim, masked, args.out, run=True))
      print(f"{masked.name}: parsed={masked.parsed} compiled={masked.compiled}"
            f" ran={masked.ran} {masked.xla_error}", flush=True)

  manifest = {
      "generator": "tools/jax/xla_accepts.py",
      "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
                   "numpy": np.__version__,
                   "python": platform.python_version()},
      "environment": {"XLA_FLAGS": os.environ["XLA_FLAGS"],
                      "JAX_PLATFORMS": os.environ["JAX_PLATFORMS"]},
      "model": MODEL, "batch": BATCH, "seq": SEQ, "seed": SEED,
      "routing": "random",
      "conventions": "<name>.in<i>.npy: parameter i, [devices, per-device shape...]: "
                     "entry d is device d's shard (perfsim lower --inputs-dir); "
                     "<name>.out<o>.npy: element o of the root tuple, each device's "
                     "value XLA computed stacked the same way.",
      "modules": entries,
  }
  with open(os.path.join(args.out, "MANIFEST.json"), "w",
            encoding="utf-8") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
    f.write("\n")
  # The C++ test's view (no JSON parser there): one line per module.
  with open(os.path.join(args.out, "INDEX.tsv"), "w", encoding="utf-8") as f:
    f.write("# name\tbackend\tphase\tdevices\tparallelism\tform\tinputs\toutputs"
            "\tstatus\txla_error\tmode  (written by tools/jax/xla_accepts.py)\n")
    for e in entries:
      status = "ran" if e["ran"] else "parsed" if e["parsed"] else "rejected"
      f.write("\t".join(str(v) for v in (
          e["name"], e["backend"], e["phase"], e["devices"], e["parallelism"],
          e["form"], e["inputs"], e["outputs"], status,
          e["xla_error"].replace("\t", " "), e["mode"])) + "\n")
  ran = sum(e["ran"] for e in entries)
  parsed = sum(e["parsed"] for e in entries)
  print(f"{len(entries)} modules: {parsed} parsed by XLA, {ran} run")
  return 0 if parsed == len(entries) else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
