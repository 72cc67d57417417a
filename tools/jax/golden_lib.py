"""Writes one golden module: HLO text, XLA cost analysis, numerics, manifest entry.

A `Case` is a JAX function plus fixed inputs. `write_case` lowers it, compiles
it for XLA:CPU, records XLA's cost analysis, runs it, saves inputs and outputs
as .npy and returns the manifest entry. Nothing here picks sizes or seeds; the
case modules (op_cases.py, moe_cases.py) do.

Two ops cannot be compiled by XLA:CPU in jaxlib 0.10.2: `ragged-dot` and
`ragged-all-to-all` ("not supported by XLA:CPU ThunkEmitter"). For modules that
contain them:
  * the compiled text is XLA's own optimized module, taken from an HLO dump
    (`xla_dump_to`) that XLA writes after its HLO passes and before the
    backend fails;
  * the numerics come from an executable twin with the same semantics:
    ragged-dot lowered by JAX's reference decomposition (mask + dot) and
    ragged-all-to-all replaced by `moe_models.ragged_all_to_all_emulated`.
The manifest says which source each file came from.

Must be imported after generate_goldens.py has set XLA_FLAGS / JAX_PLATFORMS.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import tempfile
from typing import Any, Callable, Sequence

import jax
import ml_dtypes
import numpy as np
from jax._src import config as jax_config
from jax._src.interpreters import mlir
from jax._src.lax import lax as lax_internal
from jax._src.lib import xla_client
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jaxlib import _hlo

# XLA:CPU lowers lax.ragged_dot_general through JAX's reference decomposition.
# Register JAX's native lowering (the one TPU uses: chlo.ragged_dot, i.e. HLO
# `ragged-dot`) for CPU too; the config flag below then chooses between the two
# at lowering time. Default True in JAX 0.10, so goldens get `ragged-dot`.
mlir.register_lowering(
    lax_internal.ragged_dot_general_p,
    lambda ctx, *args, **kwargs: lax_internal._ragged_dot_general_lower(  # pylint: disable=protected-access
        ctx, *args, **kwargs, platform="cpu"),
    platform="cpu")


@dataclasses.dataclass
class Case:
  """One golden module.

  name: file stem, e.g. "moe_dense_einsum_fwd".
  description: one line for the manifest.
  fn: the function to lower. Its arguments are global arrays.
  args: fixed inputs (numpy arrays; bf16/fp8 as ml_dtypes arrays).
  arg_names: one name per argument.
  in_specs: PartitionSpecs over `mesh` for multi-device cases (None: 1 device).
  mesh: the jax Mesh for multi-device cases.
  exec_fn: executable twin used for numerics when `fn` contains an op XLA:CPU
    cannot run (ragged-all-to-all). Same signature and semantics as `fn`.
  expected: optional callable(args) -> list of arrays; the generator asserts
    the outputs match it (independent numpy/JAX reference).
  notes: free text for the manifest.
  """
  name: str
  description: str
  fn: Callable[..., Any]
  args: Sequence[Any]
  arg_names: Sequence[str]
  in_specs: Sequence[Any] | None = None
  mesh: Any = None
  exec_fn: Callable[..., Any] | None = None
  expected: Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]] | None = None
  expected_tolerance: float = 1e-5
  notes: str = ""

  @property
  def num_devices(self) -> int:
    return 1 if self.mesh is None else int(self.mesh.size)


# --- dtypes ----------------------------------------------------------------

_HLO_DTYPE = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "f8e5m2",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.bool_): "pred",
}

# Narrow float types numpy cannot describe in an .npy header are stored as their
# bit patterns; the manifest keeps the real dtype.
_BITS_STORAGE = {
    "bf16": np.uint16,
    "f8e4m3fn": np.uint8,
    "f8e5m2": np.uint8,
}


def hlo_dtype(array: Any) -> str:
  return _HLO_DTYPE[np.dtype(array.dtype)]


def _save_npy(path: str, array: np.ndarray) -> str:
  """Saves `array`; returns the numpy dtype string used in the file."""
  array = np.asarray(array)
  storage = _BITS_STORAGE.get(hlo_dtype(array))
  if storage is not None:
    array = array.view(storage)
  array = np.array(array, order="C", copy=True)  # keeps 0-d arrays 0-d
  with open(path, "wb") as f:
    np.save(f, array, allow_pickle=False)
  return array.dtype.str


def _spec_to_json(spec: Any) -> list[Any] | None:
  if spec is None:
    return None
  out = []
  for entry in spec:
    if entry is None or isinstance(entry, str):
      out.append(entry)
    else:
      out.append(list(entry))
  return out


def _local_shape(shape: Sequence[int], spec: Any, mesh: Any) -> list[int]:
  local = list(shape)
  for dim, entry in enumerate(spec or ()):
    if entry is None:
      continue
    axes = (entry,) if isinstance(entry, str) else tuple(entry)
    for axis in axes:
      local[dim] //= mesh.shape[axis]
  return local


# --- HLO text helpers -------------------------------------------------------


def _compiled_print_options() -> Any:
  # Same as XLA's default ToString() (what Compiled.as_text() prints) except
  # that large constants are printed in full so the text stays exact.
  options = _hlo.HloPrintOptions()
  options.print_large_constants = True
  return options


def parse_hlo(text: str) -> Any:
  """Parses HLO text with XLA's own parser; raises on error."""
  return _hlo.hlo_module_from_text(text)


def opcodes_of(module: Any) -> list[str]:
  """Opcode spellings (as in HLO text) of every instruction in `module`."""
  names = set()
  for computation in module.computations():
    for instruction in computation.instructions():
      names.add(_opcode_spelling(instruction.to_string()))
  return sorted(names)


def _opcode_spelling(instruction_text: str) -> str:
  # "[ROOT ]%name = SHAPE opcode(operands), attrs"; SHAPE may be a tuple
  # "(f32[2], /*index=5*/s32[])" and so contain spaces and parentheses.
  rest = instruction_text.split(" = ", 1)[1]
  if rest.startswith("("):
    depth = 0
    for i, ch in enumerate(rest):
      depth += {"(": 1, ")": -1}.get(ch, 0)
      if depth == 0:
        rest = rest[i + 1:]
        break
  else:
    rest = rest.split(" ", 1)[1]
  return rest.strip().split("(", 1)[0]


def check_round_trip(text: str) -> Any:
  """XLA parses `text`, and printing then re-parsing it gives the same module.

  Compared without metadata: XLA renumbers the stack-frame table when it
  re-prints a parsed module, which changes ids but not meaning.
  """
  module = parse_hlo(text)
  options = _compiled_print_options()
  options.print_metadata = False
  printed = module.to_string(options)
  again = parse_hlo(printed).to_string(options)
  if again != printed:
    raise AssertionError("XLA print/parse round trip is not stable")
  return module


def _cost_of_text(module: Any) -> dict[str, float]:
  client = jax.devices()[0].client
  return _plain_cost(xla_client._xla.hlo_module_cost_analysis(client, module))  # pylint: disable=protected-access


def _plain_cost(cost: Any) -> dict[str, float] | None:
  if cost is None:
    return None
  if isinstance(cost, (list, tuple)):  # older JAX returned one dict per device
    cost = cost[0]
  return {key: float(cost[key]) for key in sorted(cost)}


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
  value = 0
  shift = 0
  while True:
    byte = data[pos]
    pos += 1
    value |= (byte & 0x7F) << shift
    shift += 7
    if not byte & 0x80:
      return value, pos


def _hlo_module_from_hlo_proto(data: bytes) -> bytes:
  """The dump's .hlo.pb is an xla.HloProto; field 1 is its HloModuleProto."""
  pos = 0
  while pos < len(data):
    key, pos = _read_varint(data, pos)
    field, wire_type = key >> 3, key & 7
    if wire_type == 0:
      _, pos = _read_varint(data, pos)
    elif wire_type == 2:
      length, pos = _read_varint(data, pos)
      if field == 1:
        return data[pos:pos + length]
      pos += length
    elif wire_type in (1, 5):
      pos += 8 if wire_type == 1 else 4
    else:
      raise ValueError(f"unexpected protobuf wire type {wire_type}")
  raise ValueError("HloProto has no hlo_module field")


def _compile_via_dump(lowered: Any) -> tuple[str, str]:
  """Returns (optimized HLO text, failure message) from XLA's dump of a
  compile that fails in the CPU backend after the HLO passes ran."""
  with tempfile.TemporaryDirectory() as dump_dir:
    options = {
        "xla_dump_to": dump_dir,
        "xla_dump_hlo_as_proto": True,
        "xla_dump_hlo_module_re": ".*",
    }
    message = ""
    try:
      lowered.compile(compiler_options=options)
    except Exception as e:  # pylint: disable=broad-except
      message = str(e).splitlines()[0]
    protos = glob.glob(
        os.path.join(dump_dir, "*.cpu_after_optimizations.hlo.pb"))
    if len(protos) != 1:
      raise RuntimeError(
          f"expected one cpu_after_optimizations dump; got {protos}"
          f" (compile error: {message})")
    with open(protos[0], "rb") as f:
      module = _hlo.HloModule.from_serialized_hlo_module_proto(
          _hlo_module_from_hlo_proto(f.read()))
  return module.to_string(_compiled_print_options()), message


# --- the writer ------------------------------------------------------------


def _place(case: Case) -> list[Any]:
  if case.mesh is None:
    return [jax.numpy.asarray(a) for a in case.args]
  return [
      jax.device_put(a, NamedSharding(case.mesh, spec if spec is not None else P()))
      for a, spec in zip(case.args, case.in_specs)
  ]


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
  # The HloModule name is "jit_" + the function's __name__.
  def wrapper(*args):
    return fn(*args)

  wrapper.__name__ = name
  wrapper.__qualname__ = name
  return wrapper


def json_text(value: Any, indent: int = 0) -> str:
  """JSON with sorted keys; lists of scalars stay on one line."""
  pad = " " * indent
  if isinstance(value, dict):
    if not value:
      return "{}"
    items = [f'{pad} {json.dumps(k)}: {json_text(value[k], indent + 1)}'
             for k in sorted(value)]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"
  if isinstance(value, (list, tuple)):
    if all(not isinstance(v, (dict, list, tuple)) for v in value):
      return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    items = [pad + " " + json_text(v, indent + 1) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"
  return json.dumps(value)


def _write_text(path: str, text: str) -> None:
  if not text.endswith("\n"):
    text += "\n"
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def write_case(case: Case, out_dir: str) -> dict[str, Any]:
  """Writes all files of `case` into `out_dir`; returns its manifest entry."""
  placed = _place(case)
  jax.clear_caches()
  with jax_config.jax_ragged_dot_use_ragged_dot_instruction(True):
    lowered = jax.jit(_named(case.fn, case.name)).lower(*placed)
    lowered_text = lowered.as_text(dialect="hlo")
    lowered_cost = _plain_cost(lowered.cost_analysis())
  if not lowered_text.startswith("HloModule "):
    raise AssertionError(f"{case.name}: lowered text is not HLO")

  compiled_cost = None
  compile_error = ""
  try:
    compiled = lowered.compile()
    executable = compiled.runtime_executable()
    compiled_text = executable.hlo_modules()[0].to_string(
        _compiled_print_options())
    compiled_cost = _plain_cost(compiled.cost_analysis())
    compiled_source = "jax Compiled (XLA:CPU optimized module)"
  except Exception as e:  # pylint: disable=broad-except
    if "not supported by XLA:CPU" not in str(e):
      raise
    compiled_text, compile_error = _compile_via_dump(lowered)
    compiled_source = ("XLA dump cpu_after_optimizations (XLA:CPU cannot emit"
                       " code for this module: " + compile_error + ")")

  lowered_module = check_round_trip(lowered_text)
  compiled_module = check_round_trip(compiled_text)

  files = {
      "lowered": f"{case.name}.lowered.hlo",
      "compiled": f"{case.name}.compiled.hlo",
      "cost": f"{case.name}.cost.json",
  }
  _write_text(os.path.join(out_dir, files["lowered"]), lowered_text)
  _write_text(os.path.join(out_dir, files["compiled"]), compiled_text)

  cost = {
      "lowered": lowered_cost,
      "compiled": compiled_cost,
      "lowered_hlo_text": _cost_of_text(lowered_module),
      "compiled_hlo_text": _cost_of_text(compiled_module),
      "notes": (
          "lowered/compiled: jax Lowered.cost_analysis() and"
          " Compiled.cost_analysis() as returned (XLA:CPU HloCostAnalysis);"
          " compiled is null where XLA:CPU cannot compile the module."
          " *_hlo_text: XLA's hlo_module_cost_analysis run on the module"
          " parsed back from the .hlo file next to this one."),
  }
  _write_text(os.path.join(out_dir, files["cost"]), json_text(cost))

  # Numerics: run the executable twin with the native ragged-dot lowering off.
  jax.clear_caches()
  with jax_config.jax_ragged_dot_use_ragged_dot_instruction(False):
    run_fn = case.exec_fn or case.fn
    outputs = jax.jit(_named(run_fn, case.name + "_exec"))(*placed)
    outputs = [np.asarray(o) for o in jax.tree.leaves(outputs)]
  jax.clear_caches()

  if case.expected is not None:
    want = case.expected([np.asarray(a) for a in case.args])
    if len(want) != len(outputs):
      raise AssertionError(f"{case.name}: {len(outputs)} outputs vs reference"
                           f" {len(want)}")
    for i, (got, ref) in enumerate(zip(outputs, want)):
      np.testing.assert_allclose(
          np.asarray(got, np.float64), np.asarray(ref, np.float64),
          rtol=case.expected_tolerance, atol=case.expected_tolerance,
          err_msg=f"{case.name} output {i} vs independent reference")

  params = []
  files["inputs"] = []
  for i, (arg, name) in enumerate(zip(case.args, case.arg_names)):
    fname = f"{case.name}.in{i}.npy"
    npy_dtype = _save_npy(os.path.join(out_dir, fname), arg)
    files["inputs"].append(fname)
    entry = {
        "name": name,
        "shape": list(np.shape(arg)),
        "dtype": hlo_dtype(arg),
        "npy_dtype": npy_dtype,
    }
    if case.mesh is not None:
      spec = case.in_specs[i]
      entry["partition_spec"] = _spec_to_json(spec if spec is not None else P())
      entry["per_device_shape"] = _local_shape(np.shape(arg), spec, case.mesh)
    params.append(entry)
  out_entries = []
  files["outputs"] = []
  for i, out in enumerate(outputs):
    fname = f"{case.name}.out{i}.npy"
    npy_dtype = _save_npy(os.path.join(out_dir, fname), out)
    files["outputs"].append(fname)
    out_entries.append({
        "shape": list(out.shape),
        "dtype": hlo_dtype(out),
        "npy_dtype": npy_dtype
    })

  entry = {
      "name": case.name,
      "description": case.description,
      "files": files,
      "parameters": params,
      "outputs": out_entries,
      "num_devices": case.num_devices,
      "compiled_source": compiled_source,
      "numerics_source": _numerics_source(case, lowered_text),
      "opcodes": {
          "lowered": opcodes_of(lowered_module),
          "compiled": opcodes_of(compiled_module),
      },
  }
  if case.mesh is not None:
    entry["mesh"] = {name: int(size) for name, size in case.mesh.shape.items()}
    entry["spmd"] = (
        "lowered: global program; the shard_map body is a called computation"
        " with per-device shapes between xla.sdy.GlobalToLocalShape and"
        " xla.sdy.LocalToGlobalShape custom-calls. compiled: the per-device"
        " SPMD program (parameters have per_device_shape; device d holds"
        " block d of each sharded dimension).")
  if case.notes:
    entry["notes"] = case.notes
  return entry


def _numerics_source(case: Case, lowered_text: str) -> str:
  parts = []
  if case.exec_fn is not None:
    parts.append("executed an equivalent program with ragged_all_to_all"
                 " emulated by all_to_all + scatter (XLA:CPU cannot run"
                 " ragged-all-to-all)")
  if " ragged-dot(" in lowered_text:
    parts.append("ragged-dot executed through JAX's reference decomposition"
                 " (jax_ragged_dot_use_ragged_dot_instruction=False)")
  if not parts:
    return "executed this module with XLA:CPU"
  return "; ".join(parts)
