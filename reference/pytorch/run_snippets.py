#!/usr/bin/env python3
"""Runs every PyTorch file the book includes (pytorch/*.py and pytorch/snippets/*.py) and
records what each printed in pytorch/runs/, with the torch version and the file's hash, so the
book can show real output and a test can tell when a file changed after its recorded run.

Each record `pytorch/runs/<name>.txt` starts with four header lines:

    # pytorch/snippets/checkpointing.py
    # sha256 <hex of the file followed by the shared helpers, in HELPERS order>
    # torch <version>, Python <version>, <CUDA device name | CPU, no CUDA>, exit <status>
    # run by reference/pytorch/run_snippets.py; normalised: <what was changed>
    <stdout and stderr, normalised>

Normalised: this machine's paths are shortened (the repository to `.`, the Python's
site-packages to `<site-packages>`, the scratch folder to `<scratch>`), and two kinds of noise
are dropped and counted on the fourth line: Python's warnings (`FILE:LINE: XWarning: ...` and
the source line under it) and the profiler's C++ log lines (`USDT:`/`ERROR:`/... with a time
and `FILE.cpp:LINE]`).

`--cuda` (on a GPU machine; `scripts/gpu-evidence` runs it) runs every file's CUDA branch and
writes `pytorch/runs-cuda/<name>.txt` (or into `--out`) with the same header, whose third line
names torch, CUDA and the GPU. Such a record cannot be remade without a GPU, so it is never
stale for the tests: `pytorch/runs-cuda/<name>.md`, which the pages include beside the CPU
record, shows it and, when the file's hash has changed since, says that it is from an earlier
version of the file. Every run (and `--pages`, which needs no torch) rewrites those .md files.

The hash covers the helpers too (pytorch/lesson.py, pytorch/snippets/measure.py), which every
file may import: change one and every record is stale. The helpers themselves are not run.
`crates/figures/tests/pytorch_runs.rs` recomputes the hashes (no PyTorch needed) and fails on a
missing or stale record. Standard library only besides the torch it runs; installs nothing.

    /work/venv-torch/bin/python reference/pytorch/run_snippets.py [--only TEXT] [--check]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTORCH = ROOT / "pytorch"
RUNS = PYTORCH / "runs"
RUNS_CUDA = PYTORCH / "runs-cuda"
# Imported by the others, never run; in this order in every hash.
HELPERS = ("pytorch/lesson.py", "pytorch/snippets/measure.py")
TIMEOUT = 900  # seconds per file: challenge2.py's no-CUDA search takes about two minutes
CUDA_TIMEOUT = 90  # seconds per file on a GPU (scripts/gpu-evidence's budget)
WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")
CPP_LOG = re.compile(r"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.(cpp|h):\d+\] ")


def files() -> list[Path]:
    found = sorted(PYTORCH.glob("*.py")) + sorted((PYTORCH / "snippets").glob("*.py"))
    return [f for f in found if f.relative_to(ROOT).as_posix() not in HELPERS]


def digest(path: Path) -> str:
    h = hashlib.sha256(path.read_bytes())
    for helper in HELPERS:
        h.update((ROOT / helper).read_bytes())
    return h.hexdigest()


def record_name(path: Path) -> str:
    return path.relative_to(PYTORCH).as_posix().replace("/", "__")[:-3]


def record_path(path: Path, folder: Path = RUNS) -> Path:
    return folder / (record_name(path) + ".txt")


def recorded_hash(path: Path, folder: Path = RUNS) -> str | None:
    try:
        line = record_path(path, folder).read_text().splitlines()[1]
    except (OSError, IndexError):
        return None
    return line.removeprefix("# sha256 ").strip()


def where(python: str, cuda: bool = False) -> str:
    probe = ("import torch, platform; print(torch.__version__, platform.python_version(), "
             "torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() "
             "else 'CPU, no CUDA', sep='|')")
    out = subprocess.run([python, "-W", "ignore", "-c", probe], capture_output=True, text=True,
                         check=True)
    torch_version, py, cuda_version, device = out.stdout.strip().splitlines()[-1].split("|")
    if cuda:
        if device == "CPU, no CUDA":
            raise SystemExit("--cuda: this Python's torch sees no CUDA device")
        return f"torch {torch_version}, CUDA {cuda_version}, Python {py}, {device}"
    return f"torch {torch_version}, Python {py}, {device}"


def normalise(output: str, scratch: str, python: str) -> tuple[str, str]:
    """The output without this machine's paths and noise, and what was done, in words."""
    places = [(str(ROOT), "."), (scratch, "<scratch>"), (os.path.realpath(scratch), "<scratch>")]
    probe = [python, "-c", "import site, sys; print(*site.getsitepackages(), sys.prefix, sep='\\n')"]
    found = subprocess.run(probe, capture_output=True, text=True).stdout.split()
    places += [(p, "<site-packages>") for p in found[:-1]] + [(p, "<python>") for p in found[-1:]]
    kept, warnings, logs, after_warning = [], 0, 0, False
    for line in output.splitlines():
        if WARNING.match(line):
            warnings, after_warning = warnings + 1, True
            continue
        if after_warning and line.startswith("  "):    # the source line a warning shows
            warnings += 1
            continue
        after_warning = False
        if CPP_LOG.match(line):
            logs += 1
            continue
        for place, short in sorted(places, key=lambda p: -len(p[0])):
            if len(place) > 1:
                line = line.replace(place, short)
        kept.append(line)
    text = "\n".join(kept) + ("\n" if kept else "")
    return text, (f"paths shortened, {warnings} warning lines and {logs} profiler log lines "
                  "dropped")


def run(path: Path, python: str, env_line: str, folder: Path = RUNS, cuda: bool = False) -> int:
    rel = path.relative_to(ROOT).as_posix()
    start = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONHASHSEED="0")
    # The learners' scripts (pytorch/*.py) run from the repository root, as their README says
    # (they call `cargo run -p challengeN`); a snippet runs in a scratch folder, so that what
    # it writes (a CUDA snapshot) lands outside the tree.
    learner_script = path.parent == PYTORCH
    with tempfile.TemporaryDirectory() as scratch:
        cwd = ROOT if learner_script else scratch
        try:
            done = subprocess.run([python, str(path)], cwd=cwd, env=env,
                                  timeout=CUDA_TIMEOUT if cuda else TIMEOUT,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            status, output = done.returncode, done.stdout
        except subprocess.TimeoutExpired as e:
            status, output = "timeout", (e.stdout or b"").decode(errors="replace")
        output, done_to_it = normalise(output, scratch, python)
    folder.mkdir(parents=True, exist_ok=True)
    by = "reference/pytorch/run_snippets.py" + (" --cuda" if cuda else "")
    record_path(path, folder).write_text(
        f"# {rel}\n# sha256 {digest(path)}\n# {env_line}, exit {status}\n"
        f"# run by {by}; normalised: {done_to_it}\n{output}")
    print(f"{rel}: exit {status}, {time.monotonic() - start:.1f} s")
    return 0 if status == 0 else 1


def page_fragment(path: Path) -> str:
    """What a page shows of the file's CUDA record, beside its CPU record (the same text as
    crates/figures/tests/pytorch_runs.rs's `cuda_fragment`)."""
    rel = path.relative_to(ROOT).as_posix()
    try:
        lines = record_path(path, RUNS_CUDA).read_text().splitlines()
    except OSError:
        return (f"<!-- No run of {rel} on a CUDA card is recorded yet: scripts/gpu-evidence "
                "makes one (pytorch/README.md). -->\n")
    recorded = lines[1].removeprefix("# sha256 ").strip()
    machine = lines[2].removeprefix("# ").rsplit(", exit ", 1)[0]
    out = f"On a CUDA card ({machine}):\n\n"
    if recorded != digest(path):
        out += (f"> [!NOTE]\n> This run on a CUDA card is from an earlier version of `{rel}`: "
                "the file has changed since. `scripts/gpu-evidence` on a GPU machine "
                "records it again.\n\n")
    return out + "```text\n" + "".join(line + "\n" for line in lines[4:]) + "```\n"


def write_pages() -> None:
    RUNS_CUDA.mkdir(exist_ok=True)
    for f in files():
        (RUNS_CUDA / (record_name(f) + ".md")).write_text(page_fragment(f))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[],
                    help="run only files whose path contains TEXT (repeatable)")
    ap.add_argument("--check", action="store_true",
                    help="run nothing: list the files whose record is missing or stale")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python with torch (default: this one)")
    ap.add_argument("--cuda", action="store_true",
                    help="run every file's CUDA branch (a GPU machine) into pytorch/runs-cuda/")
    ap.add_argument("--out", type=Path, default=None,
                    help="with --cuda: write the records here instead (e.g. gpu-evidence's folder)")
    ap.add_argument("--dry-run", action="store_true",
                    help="run nothing: list every file and the command that would run it")
    ap.add_argument("--pages", action="store_true",
                    help="run nothing: rewrite pytorch/runs-cuda/*.md, what the pages show of "
                         "the CUDA records (needs no torch)")
    args = ap.parse_args()
    chosen = [f for f in files() if not args.only or any(t in str(f) for t in args.only)]
    folder = (args.out or RUNS_CUDA) if args.cuda else RUNS
    if args.dry_run:
        for f in chosen:
            cwd = "." if f.parent == PYTORCH else "<scratch>"
            print(f"{f.relative_to(ROOT)}: {args.python} {f.relative_to(ROOT)} (in {cwd}) "
                  f"-> {record_path(f, folder).relative_to(ROOT) if folder.is_relative_to(ROOT) else record_path(f, folder)}")
        return 0
    if args.pages:
        write_pages()
        return 0
    if args.check:
        stale = [f for f in chosen if recorded_hash(f) != digest(f)]
        for f in stale:
            print(f"stale: {f.relative_to(ROOT)}")
        return 1 if stale else 0
    env_line = where(args.python, args.cuda)
    failed = sum(run(f, args.python, env_line, folder, args.cuda) for f in chosen)
    if not args.cuda:
        known = {record_path(f).name for f in files()}
        for extra in sorted(RUNS.glob("*.txt")):
            if extra.name not in known:
                extra.unlink()
                print(f"removed {extra.relative_to(ROOT)}: its file is gone")
    if not args.out:                  # records written elsewhere are copied in later
        write_pages()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
