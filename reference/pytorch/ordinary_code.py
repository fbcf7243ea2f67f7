#!/usr/bin/env python3
"""Runs pytorch/record.py on ordinary code and bad input, as a learner would, and writes what
happened to reference/pytorch/ordinary/ordinary.json (`cargo test -p gpumem --test
ordinary_code` reads it, with the SHA-256 of every input, so a stale record fails).

Cases: a template written for a GPU (`ordinary/gpu_style.py`), a step whose sizes depend on
the data (`ordinary/data_dependent.py`), a step with a mistake (`ordinary/step_error.py`), a
path that is not a .py file, a folder, a missing file, and the summary into a closed pipe
(`record.py T | head -1`). Each: the exit status, stdout and stderr; for a recording, what its
`recorder` key says (approximate entries, CUDA facts, the allocations kept on the host).

    /work/venv/bin/python reference/pytorch/ordinary_code.py
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = "reference/pytorch/ordinary"
OUT = os.path.join(ROOT, HERE, "ordinary.json")


def inputs() -> list[str]:
    rec = sorted(f"pytorch/recorder/{f}" for f in os.listdir(os.path.join(ROOT, "pytorch", "recorder"))
                 if f.endswith(".py"))
    mine = sorted(f"{HERE}/{f}" for f in os.listdir(os.path.join(ROOT, HERE)) if f.endswith(".py"))
    return mine + ["pytorch/record.py", "reference/pytorch/ordinary_code.py"] + rec


def sha(rel: str) -> str:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(args: list[str], shell: str | None = None) -> dict:
    cmd = shell or " ".join(["python", "pytorch/record.py"] + args)
    if shell:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", shell], cwd=ROOT, text=True,
                           capture_output=True)
    else:
        p = subprocess.run([sys.executable, "pytorch/record.py"] + args, cwd=ROOT, text=True,
                           capture_output=True)
    err = [line for line in p.stderr.splitlines() if "NumPy" not in line and
           "_conversion_method_template" not in line and not line.startswith("(")]
    return {"command": cmd, "exit": p.returncode, "stdout": p.stdout.splitlines(),
            "stderr": err}


def recorded(args: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.pickle")
        r = run(args + ["--out", out])
        if r["exit"] == 0:
            with open(out, "rb") as f:
                d = pickle.load(f)
            rec = d["recorder"]
            allocs = [e for e in d["device_traces"][0] if e["action"] == "alloc"]
            r["recorder"] = {
                "approximate": rec["approximate"],
                "cuda_difference_facts": rec["cuda_difference_facts"],
                "cuda_kernels": rec["cuda_kernels"],
                "on_host": [allocs[i]["frames"][0]["name"] for i in rec["cuda_host"]],
                "allocations": len(allocs),
                "affine": rec["affine"]["affine"],
            }
    r["command"] = r["command"].replace(" --out " + out, " --out FILE.pickle")
    return r


def main() -> int:
    import torch
    os.chdir(ROOT)
    cases = {
        "gpu_style": recorded([f"{HERE}/gpu_style.py"]),
        "data_dependent": recorded([f"{HERE}/data_dependent.py"]),
        "step_error": run([f"{HERE}/step_error.py"]),
        "not_python": run(["pytorch/README.md"]),
        "folder": run([HERE]),
        "missing": run([f"{HERE}/missing.py"]),
        "closed_pipe": run([], shell=f"{sys.executable} pytorch/record.py {HERE}/gpu_style.py "
                                      "| head -1"),
    }
    cases["closed_pipe"]["command"] = f"python pytorch/record.py {HERE}/gpu_style.py | head -1"
    out = {
        "torch": str(torch.__version__),
        "command": "python reference/pytorch/ordinary_code.py",
        "inputs": [{"path": f, "sha256": sha(f)} for f in inputs()],
        "cases": cases,
    }
    with open(OUT, "w") as f:
        f.write(json.dumps(out, indent=1) + "\n")
    for name, c in cases.items():
        print(f"{name}: exit {c['exit']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
