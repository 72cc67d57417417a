#!/usr/bin/env python3
"""Re-runs the README's examples and reports every one whose output is not what the README shows.

    python3 scripts/check_readme.py        # after building build/ (and build/examples/)

Every line `$ COMMAND` in a fenced block of README.md is run from a scratch directory that links
build/, tests/, hardware/, models/, examples/ and tools/ of this checkout (so `../shared` resolves
as it does from the repository root, and the files examples write do not land in the tree). The
lines after it, up to the next `$ ` line or the end of the block, are the expected output
(trailing spaces ignored). `$ cat FILE` followed by text creates FILE for the commands after it.
Skipped, and counted as such: examples abridged with `...`, commands whose output depends on
timing (`timeout`), Python one-liners, and the rest of a block after a skipped command. Exit 1 if any
example differs.

    python3 scripts/check_readme.py --update   # also writes the new outputs into README.md

--update replaces the shown output of every example that differs with what the command prints
now (after a change that moves numbers on purpose); read the diff before committing it.
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ["build", "tests", "hardware", "models", "examples", "tools"]
SKIP_WORDS = ["python3", "timeout", "sbatch"]


def examples(readme):
    for number, block in enumerate(re.findall(r"```[a-z]*\n(.*?)```", readme, re.S)):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            command = lines[i][2:]
            j = i + 1
            while command.endswith("\\") and j < len(lines):
                command = command[:-1] + " " + lines[j].strip()
                j += 1
            output = []
            while j < len(lines) and not lines[j].startswith("$ "):
                output.append(lines[j].rstrip())
                j += 1
            while output and output[-1] == "":
                output.pop()
            yield number, command, output
            i = j


def update_outputs(readme, new_outputs):
    """README text with the output after each `$ COMMAND` of new_outputs[(block, command)]."""
    counter = iter(range(1 << 30))

    def rewrite(match):
        number = next(counter)
        lines = match.group(1).split("\n")
        out = []
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
                continue
            command = lines[i][2:]
            out.append(lines[i])
            j = i + 1
            while command.endswith("\\") and j < len(lines):
                command = command[:-1] + " " + lines[j].strip()
                out.append(lines[j])
                j += 1
            k = j
            while k < len(lines) and not lines[k].startswith("$ "):
                k += 1
            if (number, command) in new_outputs:
                old = lines[j:k]
                trailing = 0
                while trailing < len(old) and old[len(old) - 1 - trailing].strip() == "":
                    trailing += 1
                out.extend(new_outputs[(number, command)] + [""] * trailing)
            else:
                out.extend(lines[j:k])
            i = k
        return match.group(0)[:match.start(1) - match.start(0)] + "\n".join(out) + "```"

    return re.sub(r"```[a-z]*\n(.*?)```", rewrite, readme, flags=re.S)


def main():
    update = "--update" in sys.argv[1:]
    new_outputs = {}
    readme = open(os.path.join(ROOT, "README.md")).read()
    # The scratch directory sits next to the checkout so that `../shared` is the same folder.
    scratch = tempfile.mkdtemp(prefix=".readme-check-", dir=os.path.dirname(ROOT))
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), os.path.join(scratch, name))
    ok = bad = skipped = 0
    prefix = ""  # shell variable assignments shown in the README, kept for later commands
    skipped_block = None  # a block whose later commands may depend on one that was skipped
    for block, command, output in examples(readme):
        if block == skipped_block:
            skipped += 1
            continue
        if re.match(r"^[A-Za-z_]+=", command):
            prefix += command + "; "
            continue
        if command.startswith("cat ") and len(command.split()) == 2:
            with open(os.path.join(scratch, command.split()[1]), "w") as f:
                f.write("\n".join(output) + "\n")
            continue
        if command.startswith("echo $?"):
            continue
        if any(line.lstrip().startswith("...") for line in output) or any(
                word in command for word in SKIP_WORDS):
            skipped += 1
            skipped_block = block
            continue
        run = subprocess.run(prefix + command, shell=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, cwd=scratch, timeout=600)
        got = [line.rstrip() for line in run.stdout.rstrip("\n").split("\n")]
        if got == [""]:
            got = []
        if got == output:
            ok += 1
            continue
        bad += 1
        new_outputs[(block, command)] = got
        print(f"DIFFERS: {command}")
        for line in list(difflib.unified_diff(output, got, "README", "now", lineterm="", n=0))[:20]:
            print("    " + line)
    subprocess.run(["rm", "-rf", scratch])
    print(f"{ok} examples as shown, {bad} differ, {skipped} skipped")
    if update and new_outputs:
        with open(os.path.join(ROOT, "README.md"), "w") as f:
            f.write(update_outputs(readme, new_outputs))
        print(f"README.md: {len(new_outputs)} outputs updated")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
