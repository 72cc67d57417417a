#!/usr/bin/env python3
"""XLA reads back what perfsim prints of XLA's own test modules.

For every module of XLA's test suite (../shared/reference/xla_test_suite,
expectations.csv) that perfsim accepts (`perfsim hlo print` exits 0), the
script

  1. prints it with `perfsim hlo print` and prints that print again: the
     second print must equal the first (a fixed point);
  2. has jaxlib's HLO parser read perfsim's print (`hlo_module_from_text`,
     the XLA that jaxlib 0.10.2 is built from, the same XLA the suite was
     taken from);
  3. compares XLA's own print of perfsim's print with XLA's own print of the
     original text (metadata left out, since XLA renumbers its stack-frame
     tables): a difference means perfsim's print changed the module's meaning
     (an attribute lost or moved), even where XLA parses both.

It prints the failures of each kind and a summary as its last line, and exits
1 if any module failed a step. Run by hand (not in CI; see README.md):

  python3 tools/jax/xla_print_check.py [--perfsim build/perfsim] [-v]
      [--only NAME_SUBSTRING] [--all] [--jobs N]

`--all` also checks the modules marked `may-reject` that perfsim accepts.
`--jobs` (default: the number of cores) perfsim and XLA processes run at a
time; every 500 modules a progress line goes to stderr.
XLA runs in child worker processes, because it CHECK-fails or crashes on some
texts instead of returning an error; a crash is reported as a failure of the
module that caused it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import re
import subprocess
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))
SUITE = os.path.join(os.path.dirname(_REPO), "shared", "reference", "xla_test_suite")


def _first_line(text: str) -> str:
  """The error's first lines (XLA's first is only "Syntax error when ..."), on one line."""
  lines = [l.strip() for l in text.splitlines() if l.strip()]
  return " | ".join(lines[:2])[:300]


# --- the XLA side, in a worker process -------------------------------------------------------


def _xla_canonical(text: str) -> str:
  """XLA's print of `text` without metadata (raises if XLA does not parse it)."""
  from jaxlib import _hlo  # pylint: disable=import-outside-toplevel
  module = _hlo.hlo_module_from_text(text)
  options = _hlo.HloPrintOptions()
  options.print_metadata = False
  return module.to_string(options)


_COMPUTATION_HEADER = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(", re.MULTILINE)
_COMPUTATION_REF = re.compile(
    r"\b(calls|to_apply|condition|body|select|scatter|true_computation|false_computation|"
    r"branch_computations|called_computations)=(\{[^}]*\}|%[\w.\-]+)")
_CONSTANT = re.compile(r"constant\(.*\)")
_DEFINITION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ", re.MULTILINE)
_HEADER_PARAMETER = re.compile(r"([(,]\s*)([\w.\-]+): ")
_INSTRUCTION_REF = re.compile(r"%([\w.\-]+)")


def _without_instruction_names(text: str) -> str:
  """Each computation's instructions renamed by position (`%i0`, `%i1`, ... in XLA's print
  order, references and the header's parameter names alike). XLA makes instruction names
  unique across the whole module, so which of two equal names gets a `.1` depends on which
  computation XLA reads first: an async wrapper perfsim prints as sugar (`subtract-start`)
  holds no names of its own in perfsim's print, and the entry's `a` that XLA read as `a.1`
  after the wrapper's `a` stays `a`. The operands still compare, by position."""
  out = []
  for block in re.split(r"(?<=\n)(?=(?:ENTRY )?%[\w.\-]+ \()", text):
    names = {name: f"%i{i}" for i, name in enumerate(_DEFINITION.findall(block))}
    if not names:
      out.append(block)
      continue
    header, newline, body = block.partition("\n")
    header = _HEADER_PARAMETER.sub(
        lambda m: m.group(1) + names.get(m.group(2), m.group(2)).lstrip("%") + ": ", header)
    body = _INSTRUCTION_REF.sub(lambda m: names.get(m.group(1), m.group(0)), body)
    out.append(header + newline + body)
  return "".join(out)


def _without_names(text: str, elided_constants: bool) -> str:
  """XLA's print with what carries no meaning made equal: the module's name (a module without
  an `HloModule` line is named after its entry by XLA and by perfsim differently), whitespace
  runs (perfsim keeps a multi-line backend_config on one line), computation names (XLA names
  the inline computations `{...}` of a text `_`, `_.1`, ...; perfsim after their caller),
  instruction names (see _without_instruction_names), and, for a text with elided constants
  `{...}` (XLA fills those with arbitrary values), the constants' values."""
  text = re.sub(r"^HloModule [^,\n]*", "HloModule _", text)
  names = {name: f"__c{i}" for i, name in enumerate(_COMPUTATION_HEADER.findall(text))}
  rename = lambda name: "%" + names.get(name, name)
  text = _COMPUTATION_HEADER.sub(
      lambda m: m.group(0).replace("%" + m.group(1), rename(m.group(1)), 1), text)
  text = _COMPUTATION_REF.sub(
      lambda m: f"{m.group(1)}=" + re.sub(r"%([\w.\-]+)", lambda n: rename(n.group(1)),
                                          m.group(2)), text)
  # After the computations, whose references are then `%__cN`, no instruction's name.
  text = _without_instruction_names(text)
  if elided_constants:
    text = _CONSTANT.sub("constant(...)", text)
  return " ".join(text.split())


def _same_meaning(original: str, printed: str, printed_canonical: str | None = None) -> bool:
  """Whether XLA reads the original text and perfsim's print of it as the same module.
  `printed_canonical`, XLA's print of `printed` when the caller has it: XLA takes tens of
  seconds to parse a module with a large elided constant (host_offloader_test__028: it fills 2*10^8 elements), so the
  worker parses each text once."""
  elided = "{...}" in original
  if printed_canonical is None:
    printed_canonical = _xla_canonical(printed)
  return (_without_names(_xla_canonical(original), elided) ==
          _without_names(printed_canonical, elided))


def _worker() -> None:
  """Reads one JSON request per line ({original, printed}); writes one JSON answer per line."""
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  for line in sys.stdin:
    request = json.loads(line)
    answer = {"parsed": False, "error": "", "same": None}
    try:
      printed_canonical = _xla_canonical(request["printed"])
      answer["parsed"] = True
    except Exception as e:  # pylint: disable=broad-except
      answer["error"] = _first_line(str(e))
    if answer["parsed"]:
      try:
        answer["same"] = _same_meaning(request["original"], request["printed"],
                                       printed_canonical)
      except Exception:  # pylint: disable=broad-except
        answer["same"] = None  # XLA does not parse the original on its own (a fragment).
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


class XlaWorker:
  """A child process running _worker(); restarted after it dies."""

  def __init__(self):
    self._process = None

  def _start(self):
    self._process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

  def ask(self, original: str, printed: str) -> dict:
    if self._process is None or self._process.poll() is not None:
      self._start()
    try:
      self._process.stdin.write(json.dumps({"original": original, "printed": printed}) + "\n")
      self._process.stdin.flush()
      line = self._process.stdout.readline()
    except BrokenPipeError:
      line = ""
    if line:
      return json.loads(line)
    self._process.wait()
    error = _first_line(self._process.stderr.read()) or "no answer"
    self._process = None
    return {"parsed": False, "error": f"XLA crashed: {error}", "same": None}

  def close(self):
    if self._process is not None and self._process.poll() is None:
      self._process.stdin.close()
      self._process.wait()


# --- the perfsim side -------------------------------------------------------------------------


def _perfsim_print(perfsim: str, path: str, stdin: str | None = None):
  result = subprocess.run([perfsim, "hlo", "print", path], input=stdin, capture_output=True,
                          text=True, check=False)
  return result.returncode, result.stdout, result.stderr


def _perfsim_side(perfsim: str, path: str) -> dict:
  rc, printed, err = _perfsim_print(perfsim, path)
  if rc != 0:
    return {"accepted": False, "rc": rc, "error": _first_line(err)}
  rc2, reprinted, err2 = _perfsim_print(perfsim, "-", printed)
  return {"accepted": True, "printed": printed,
          "reparsed": rc2 == 0, "reparse_error": _first_line(err2),
          "fixed_point": rc2 == 0 and reprinted == printed}


def _show_diff(perfsim: str, path: str) -> int:
  import difflib  # pylint: disable=import-outside-toplevel
  rc, printed, err = _perfsim_print(perfsim, path)
  if rc != 0:
    print(f"perfsim rejects {path}: {err}")
    return 1
  with open(path, encoding="utf-8") as f:
    text = f.read()
  original = _xla_canonical(text)
  try:
    ours = _xla_canonical(printed)
  except Exception as e:  # pylint: disable=broad-except
    print(printed)
    print(f"XLA rejects perfsim's print: {e}")
    return 1
  sys.stdout.writelines(difflib.unified_diff(original.splitlines(True), ours.splitlines(True),
                                             "xla(original)", "xla(perfsim print)"))
  same = _same_meaning(text, printed)
  print("same meaning (names and whitespace aside)" if same else "MEANING DIFFERS")
  return 0 if same else 1


def main() -> int:
  if "--worker" in sys.argv:
    _worker()
    return 0
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--perfsim", default=os.path.join(_REPO, "build", "perfsim"))
  parser.add_argument("--suite", default=SUITE)
  parser.add_argument("--only", default="", help="check only files whose name contains this")
  parser.add_argument("--all", action="store_true", help="also the may-reject modules")
  parser.add_argument("-v", "--verbose", action="store_true", help="print each failure's error")
  parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                      help="perfsim processes, and XLA worker processes, at a time")
  parser.add_argument("--diff", metavar="FILE",
                      help="show XLA's print of FILE (a suite module) against XLA's print of "
                      "perfsim's print, as a unified diff, and exit")
  args = parser.parse_args()
  if args.diff:
    return _show_diff(args.perfsim, os.path.join(args.suite, "modules", args.diff))

  with open(os.path.join(args.suite, "expectations.csv"), encoding="utf-8") as f:
    rows = [r for r in csv.DictReader(f)
            if (args.all or r["expect"] == "accept") and args.only in r["file"]]
  paths = [os.path.join(args.suite, "modules", r["file"]) for r in rows]

  with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    sides = list(pool.map(lambda p: _perfsim_side(args.perfsim, p), paths))

  # XLA's side in `--jobs` worker processes, each module's request from one thread (a thread
  # waits on its worker's pipe); the answers are read back in the suite's order.
  local = threading.local()
  workers = []
  workers_lock = threading.Lock()
  done = [0]
  started = time.monotonic()

  def ask_xla(path: str, side: dict) -> dict | None:
    if not side["accepted"]:
      return None
    if not hasattr(local, "worker"):
      local.worker = XlaWorker()
      with workers_lock:
        workers.append(local.worker)
    with open(path, encoding="utf-8") as f:
      answer = local.worker.ask(f.read(), side["printed"])
    with workers_lock:
      done[0] += 1
      if done[0] % 500 == 0:
        print(f"xla print check: {done[0]} modules through XLA, "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return answer

  try:
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
      answers = list(pool.map(ask_xla, paths, sides))
  finally:
    for worker in workers:
      worker.close()

  failures = {"reparse": [], "fixed_point": [], "xla_rejects": [], "meaning": [], "crash": []}
  accepted = 0
  for row, side, answer in zip(rows, sides, answers):
    name = row["file"]
    if not side["accepted"]:
      if side["rc"] not in (1, 2):
        failures["crash"].append((name, f"perfsim exit {side['rc']}: {side['error']}"))
      continue
    accepted += 1
    if not side["reparsed"]:
      failures["reparse"].append((name, side["reparse_error"]))
    elif not side["fixed_point"]:
      failures["fixed_point"].append((name, "print -> parse -> print differs"))
    if not answer["parsed"]:
      failures["xla_rejects"].append((name, answer["error"]))
    elif answer["same"] is False:
      failures["meaning"].append((name, "XLA prints the original and perfsim's print "
                                        "differently"))

  for kind, items in failures.items():
    for name, error in items:
      print(f"{kind}: {name}" + (f": {error}" if args.verbose else ""))
  print(f"xla print check: {accepted}/{len(rows)} modules accepted by perfsim; "
        f"perfsim re-parse fails {len(failures['reparse'])}, not a fixed point "
        f"{len(failures['fixed_point'])}; XLA rejects the print {len(failures['xla_rejects'])}, "
        f"meaning changed {len(failures['meaning'])}; perfsim crashes {len(failures['crash'])}")
  return 0 if not any(failures.values()) else 1


if __name__ == "__main__":
  sys.exit(main())
