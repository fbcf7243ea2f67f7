#!/usr/bin/env python3
"""Runs every PyTorch file the book includes (pytorch/*.py and pytorch/snippets/*.py) and
records what each printed in pytorch/runs/, with the torch version and the file's hash, so the
book can show real output and a test can tell when a file changed after its recorded run.

Each record `pytorch/runs/<name>.txt` starts with four header lines:

    # pytorch/snippets/checkpointing.py
    # sha256 <hex of the file followed by the shared helpers, in HELPERS order>
    # torch <version>, Python <version>, <CUDA device name | CPU, no CUDA>, exit <status>
    # run by reference/pytorch/run_snippets.py
    <stdout and stderr>

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTORCH = ROOT / "pytorch"
RUNS = PYTORCH / "runs"
# Imported by the others, never run; in this order in every hash.
HELPERS = ("pytorch/lesson.py", "pytorch/snippets/measure.py")
TIMEOUT = 900  # seconds per file: challenge2.py's no-CUDA search takes about two minutes


def files() -> list[Path]:
    found = sorted(PYTORCH.glob("*.py")) + sorted((PYTORCH / "snippets").glob("*.py"))
    return [f for f in found if f.relative_to(ROOT).as_posix() not in HELPERS]


def digest(path: Path) -> str:
    h = hashlib.sha256(path.read_bytes())
    for helper in HELPERS:
        h.update((ROOT / helper).read_bytes())
    return h.hexdigest()


def record_path(path: Path) -> Path:
    return RUNS / (path.relative_to(PYTORCH).as_posix().replace("/", "__")[:-3] + ".txt")


def recorded_hash(path: Path) -> str | None:
    try:
        line = record_path(path).read_text().splitlines()[1]
    except (OSError, IndexError):
        return None
    return line.removeprefix("# sha256 ").strip()


def where(python: str) -> str:
    probe = ("import torch, platform; print(torch.__version__, platform.python_version(), "
             "torch.cuda.get_device_name() if torch.cuda.is_available() else 'CPU, no CUDA', "
             "sep='|')")
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    torch_version, py, device = out.stdout.strip().splitlines()[-1].split("|")
    return f"torch {torch_version}, Python {py}, {device}"


def run(path: Path, python: str, env_line: str) -> int:
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
            done = subprocess.run([python, str(path)], cwd=cwd, env=env, timeout=TIMEOUT,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            status, output = done.returncode, done.stdout
        except subprocess.TimeoutExpired as e:
            status, output = "timeout", (e.stdout or b"").decode(errors="replace")
    RUNS.mkdir(exist_ok=True)
    record_path(path).write_text(
        f"# {rel}\n# sha256 {digest(path)}\n# {env_line}, exit {status}\n"
        f"# run by reference/pytorch/run_snippets.py\n{output}")
    print(f"{rel}: exit {status}, {time.monotonic() - start:.1f} s")
    return 0 if status == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[],
                    help="run only files whose path contains TEXT (repeatable)")
    ap.add_argument("--check", action="store_true",
                    help="run nothing: list the files whose record is missing or stale")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python with torch (default: this one)")
    args = ap.parse_args()
    chosen = [f for f in files() if not args.only or any(t in str(f) for t in args.only)]
    if args.check:
        stale = [f for f in chosen if recorded_hash(f) != digest(f)]
        for f in stale:
            print(f"stale: {f.relative_to(ROOT)}")
        return 1 if stale else 0
    env_line = where(args.python)
    failed = sum(run(f, args.python, env_line) for f in chosen)
    known = {record_path(f).name for f in files()}
    for extra in sorted(RUNS.glob("*.txt")):
        if extra.name not in known:
            extra.unlink()
            print(f"removed {extra.relative_to(ROOT)}: its file is gone")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
