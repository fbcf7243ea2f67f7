#!/usr/bin/env python3
"""Records the lesson's network (reference/pytorch/lesson_step.py) into
crates/memviz/tests/fixtures/lesson/, for cross-checks against the engine:

    /work/venv-torch/bin/python reference/pytorch/record_lesson.py

  c1_sgd.pickle                          HIDDEN 2000, LAYERS 1, SGD (with its affine form)
  c2_sgd_85.pickle, c2_sgd_86.pickle     HIDDEN 5000, LAYERS 85 / 86, SGD, batch 32
  c2_adam_34.pickle, c2_adam_35.pickle   HIDDEN 5000, LAYERS 34 / 35, Adam, batch 32
  lesson.json                            the torch version, the command, the SHA-256 of every
                                         input (lesson_step.py, record.py, recorder/*.py) and,
                                         per file: its overrides, batch, allocations, raw peak
                                         and cuda_host (the allocations CUDA keeps on the host)

Each pickle is pytorch/record.py's snapshot (``record.record(..., overrides=...)``, pickled with
protocol 2 as record.py writes it). Runs from any working directory; installs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "pytorch"))

import torch  # noqa: E402

import record  # noqa: E402

TEMPLATE = "reference/pytorch/lesson_step.py"
OUT = os.path.join(ROOT, "crates", "memviz", "tests", "fixtures", "lesson")
# name: (overrides, batch)
FILES = {
    "c1_sgd.pickle": ({"HIDDEN": 2000, "LAYERS": 1, "OPTIMIZER": "sgd"}, 32),
    "c2_sgd_85.pickle": ({"HIDDEN": 5000, "LAYERS": 85, "OPTIMIZER": "sgd"}, 32),
    "c2_sgd_86.pickle": ({"HIDDEN": 5000, "LAYERS": 86, "OPTIMIZER": "sgd"}, 32),
    "c2_adam_34.pickle": ({"HIDDEN": 5000, "LAYERS": 34, "OPTIMIZER": "adam"}, 32),
    "c2_adam_35.pickle": ({"HIDDEN": 5000, "LAYERS": 35, "OPTIMIZER": "adam"}, 32),
}
# The file whose affine form must be present.
AFFINE = ("c1_sgd.pickle",)


def inputs() -> list[str]:
    rec = sorted(f"pytorch/recorder/{f}" for f in os.listdir(os.path.join(ROOT, "pytorch", "recorder"))
                 if f.endswith(".py"))
    return [TEMPLATE, "pytorch/record.py"] + rec


def sha(rel: str) -> str:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main() -> int:
    os.chdir(ROOT)  # the snapshot names the template and its frames relative to the root
    os.makedirs(OUT, exist_ok=True)
    files = {}
    for name, (overrides, batch) in FILES.items():
        t0 = time.perf_counter()
        d = record.record(TEMPLATE, batch, overrides)
        r = d["recorder"]
        if name in AFFINE and not r["affine"]["affine"]:
            raise SystemExit(f"{name}: no affine form: {r['affine']['reason']}")
        data = pickle.dumps(d, protocol=2)
        tmp = os.path.join(OUT, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(OUT, name))
        allocs = sum(e["action"] == "alloc" for e in d["device_traces"][0])
        files[name] = {"overrides": overrides, "batch": r["batch"], "allocs": allocs,
                       "raw_peak_bytes": r["raw_peak_bytes"], "cuda_host": r["cuda_host"]}
        host, peak = record.host_bytes(d)
        print(f"{name}: {allocs} allocations, raw peak {r['raw_peak_bytes']:,} B "
              f"({peak:,} B without the {len(r['cuda_host'])} CUDA keeps on the host), "
              f"affine {r['affine']['affine']}, {len(data):,} B "
              f"({time.perf_counter() - t0:.1f} s)")
    out = {
        "torch": str(torch.__version__),
        "command": "python reference/pytorch/record_lesson.py",
        "inputs": [{"path": f, "sha256": sha(f)} for f in inputs()],
        "files": files,
    }
    with open(os.path.join(OUT, "lesson.json"), "w") as f:
        f.write(json.dumps(out, indent=1) + "\n")
    print(f"wrote {os.path.relpath(OUT)}/lesson.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
