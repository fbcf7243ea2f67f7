#!/usr/bin/env python3
"""How long `pytorch/record.py` takes on each model of pytorch/models/: wall seconds of a
fresh process (Python's start and torch's import included), the median of --runs runs, and
the allocations recorded. A benchmark: it prints a table; --write also writes it to
reference/notes/record-times.md with the machine's cores and the torch version.

    /work/venv/bin/python reference/pytorch/record_times.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "pytorch", "models")


def once(rel: str, out: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "pytorch/record.py", rel, "--out", out], cwd=ROOT,
                   check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    import torch
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in sorted(os.listdir(MODELS)):
            if not f.endswith(".py"):
                continue
            rel, out = f"pytorch/models/{f}", os.path.join(tmp, "r.pickle")
            times = [once(rel, out) for _ in range(a.runs)]
            with open(out, "rb") as fh:
                d = pickle.load(fh)
            n = sum(e["action"] == "alloc" for e in d["device_traces"][0])
            rows.append((f[:-3], statistics.median(times), min(times), max(times), n))
            print(f"{f[:-3]}: {statistics.median(times):.1f} s", file=sys.stderr)
    lines = ["| model | median s | min s | max s | allocations at the recorded batch |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| `{n}` | {m:.1f} | {lo:.1f} | {hi:.1f} | {k:,} |" for n, m, lo, hi, k in rows]
    text = "\n".join(lines)
    print(text)
    if a.write:
        head = (f"# Record times\n\n`python reference/pytorch/record_times.py --runs {a.runs} "
                f"--write`: `pytorch/record.py MODEL --out FILE` in a fresh process, "
                f"{a.runs} runs each, on this machine ({os.cpu_count()} cores), torch "
                f"{torch.__version__}. Each recording runs the model's three batch sizes.\n\n")
        with open(os.path.join(ROOT, "reference", "notes", "record-times.md"), "w") as fh:
            fh.write(head + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
