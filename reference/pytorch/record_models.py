#!/usr/bin/env python3
"""Records every model of pytorch/models/ into crates/gpumem/tests/fixtures/recorded/.

For each NAME.py: NAME.pickle (pytorch/record.py's snapshot) and NAME.memtracker.json
(PyTorch's MemTracker on the same step code, fake CPU tensors, the same batch). The JSON holds
the torch version, the command, the SHA-256 of every input (the model file, record.py and
recorder/*.py, in that order; `cargo test -p gpumem --test recorded_models` recomputes them),
the recorded trace's raw peak as Python counts it, and `explained`: each difference between
the two peaks, tensor by tensor, with its evidence (empty where they are equal). Where the
recorder follows CUDA and MemTracker the CPU, `cuda_delta` states what a GPU changes: the
allocations the snapshot's `recorder.cuda_host` lists (CUDA keeps them on the host).

    /work/venv-torch/bin/python reference/pytorch/record_models.py [--only NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "pytorch"))

import record  # noqa: E402

MODELS = os.path.join(ROOT, "pytorch", "models")
OUT = os.path.join(ROOT, "crates", "gpumem", "tests", "fixtures", "recorded")


def inputs(model_rel: str) -> list[str]:
    rec = sorted(f"pytorch/recorder/{f}" for f in os.listdir(os.path.join(ROOT, "pytorch", "recorder"))
                 if f.endswith(".py"))
    return [model_rel, "pytorch/record.py"] + rec


def sha(rel: str) -> str:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# The opcodes PyTorch's browser viewer (torch/utils/viz/MemoryViz.js, `unpickle`) reads.
VIEWER_OPCODES = {
    "PROTO", "APPEND", "APPENDS", "LIST", "TUPLE", "NEWFALSE", "NEWTRUE", "NONE", "BINGET",
    "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME", "LONG1", "LONG_BINGET",
    "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT", "SETITEMS", "SETITEM", "DICT",
    "SHORT_BINUNICODE", "BINUNICODE", "STOP", "EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "BINFLOAT",
}


def pytorch_reads(data: bytes) -> str:
    """PyTorch's own tools on the pickle: _memory_viz's segsum and trace (the CLI's `stats`
    and `trace`) read it, and every opcode is one MemoryViz.js's unpickler knows."""
    import pickletools

    from torch.cuda import _memory_viz

    snap = pickle.loads(data)
    _memory_viz.segsum(snap)
    _memory_viz.trace(snap)
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    unknown = sorted(ops - VIEWER_OPCODES)
    if unknown:
        raise SystemExit(f"opcodes PyTorch's viewer cannot read: {unknown}")
    return "torch.cuda._memory_viz segsum and trace read it; MemoryViz.js knows all its opcodes"


def cuda_delta(d: dict) -> list[dict]:
    """What a GPU's trace lacks, from the snapshot's ``recorder.cuda_host`` (its one source):
    the allocations CUDA keeps on the host (the optimizer's `step` counters, foreach, neither
    fused nor capturable, and the 0-d tensor foreach adds to them each step). ``allocs``: their
    indices among the trace's ``alloc`` entries; ``bytes``: their sizes summed."""
    host = d["recorder"]["cuda_host"]
    if not host:
        return []
    allocs = [e for e in d["device_traces"][0] if e["action"] == "alloc"]
    return [{"what": "the optimizer's step counters, and the 0-d tensor foreach adds to them "
                     "each step, are CPU tensors on CUDA (recorder.cuda_host)",
             "allocs": host,
             "tensors": [allocs[i]["frames"][0]["name"] for i in host],
             "bytes": sum(allocs[i]["size"] for i in host)}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="one model (file name without .py)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    names = sorted(f[:-3] for f in os.listdir(MODELS) if f.endswith(".py"))
    for name in names:
        if a.only and name != a.only:
            continue
        rel = f"pytorch/models/{name}.py"
        t0 = time.perf_counter()
        os.chdir(ROOT)
        d = record.record(rel)  # for the default card: compute capability 9.0, an H200
        mt = record.memtracker(rel)
        ins = inputs(rel)
        d["recorder"]["inputs"] = {f: sha(f) for f in ins}
        peak = d["recorder"]["raw_peak_bytes"]
        out = {
            "model": rel,
            "torch": mt["torch"],
            "command": "python reference/pytorch/record_models.py",
            "inputs": [{"path": f, "sha256": sha(f)} for f in ins],
            "batch": mt["batch"],
            "steps": mt["steps"],
            "memtracker_peak_bytes": mt["peak_bytes"],
            "memtracker_categories": mt["categories"],
            "recorded_raw_peak_bytes": peak,
            "explained": [],
            "cuda_choices": d["recorder"]["cuda_choices"],
            "cuda_delta": cuda_delta(d),
            "not_in_trace": d["recorder"]["not_in_trace"],
            "card": d["recorder"]["card"],
            "cuda_kernels": d["recorder"]["cuda_kernels"],
            "approximate": d["recorder"]["approximate"],
            "affine": d["recorder"]["affine"]["affine"],
        }
        # The same step with the CPU's kernels (no card): the ledger against MemTracker.
        cpu = record.runner.run(record.runner.load(rel), mt["batch"])
        out["cpu_kernels_raw_peak_bytes"] = cpu["peak"]
        if cpu["peak"] != mt["peak_bytes"]:
            out["explained"].append({"tensors": [], "bytes": cpu["peak"] - mt["peak_bytes"],
                                     "evidence": "UNEXPLAINED: the CPU's kernels, recorded, "
                                     "are not at MemTracker's peak: look at the trace"})
        if peak != cpu["peak"]:
            kernels = d["recorder"]["cuda_kernels"]
            out["explained"].append({
                "tensors": [f"{k['op']} as {k['as']} ({k['calls']} calls)" for k in kernels]
                + ["bias added in place by linear; gradients accumulated in place"],
                "bytes": peak - cpu["peak"],
                "evidence": "CUDA's kernels (recorder.cuda_kernels) and a real tensor's "
                            "in-place adds; with the CPU's kernels the recording is MemTracker's "
                            "peak to the byte"})
        data = pickle.dumps(d, protocol=2)
        out["pytorch_reads"] = pytorch_reads(data)
        with open(os.path.join(OUT, name + ".pickle"), "wb") as f:
            f.write(data)
        with open(os.path.join(OUT, name + ".memtracker.json"), "w") as f:
            f.write(json.dumps(out, indent=1) + "\n")
        print(f"{name}: recorded {peak:,} B, MemTracker {mt['peak_bytes']:,} B "
              f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
