#!/usr/bin/env python3
"""The tables of reference/notes/gpu-h200-step-peaks.md, from the committed files of the H200 run.

Reads, from reference/pytorch/gpu/2026-11-28-h200/part1/:

* cuda_step_peaks.json: `step_peaks.py --backend cuda` on the card: for each setup PyTorch's
  max_memory_allocated over two steps (`peak_bytes`), MemTracker's peak on the same CUDA
  tensors (`memtracker_peak_bytes`), and per step the maximum of each phase;
* engine_vs_pytorch.json: `cargo run -p gpumem --example pytorch_gap -- --fixture
  .../cuda_step_peaks.json --json`, the engine's planned peak allocated of every setup, tensors
  only (`engine_allocated`) and with each reading of PyTorch's workspace rules
  (`engine_allocated_with`). The card ran torch 2.11, which takes the 2.8 row of
  gpumem::versions: the reading the example labels "torch 2.10".

Writes the tables between the note's `<!-- gpu_step_gap.py: begin -->` and `<!-- ... end -->`
markers (`--write`), prints them (default), or exits 1 when the note's copy differs (`--check`).
Standard library only; no torch, no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "reference/pytorch/gpu/2026-11-28-h200/part1"
NOTE = ROOT / "reference/notes/gpu-h200-step-peaks.md"
READING = "torch 2.10"  # pytorch_gap's label for TorchRules::V2_10, the 2.8 row 2.11 takes
BEGIN = "<!-- gpu_step_gap.py: begin -->"
END = "<!-- gpu_step_gap.py: end -->"

# The features a setup can have, in the order a setup's group is chosen.
FEATURES = ("autocast", "accumulation", "checkpointing", "ReLU in place", "zero_grad zeroes", "scaler")


def features(s: dict) -> list[str]:
    st = s["strategy"]
    out = []
    if st.get("autocast"):
        out.append("autocast")
    if st.get("accumulation", 1) > 1:
        out.append("accumulation")
    if st.get("checkpoint_segment", 0) or st.get("checkpoint_last_segment"):
        out.append("checkpointing")
    if st.get("relu_inplace"):
        out.append("ReLU in place")
    if not st.get("zero_grad_set_to_none", True):
        out.append("zero_grad zeroes")
    if st.get("grad_scaler"):
        out.append("scaler")
    return out


def group(s: dict) -> str:
    f = features(s)
    if not f:
        return "none (optimizers)"
    if len(f) > 1 and f != ["autocast", "scaler"]:
        return "combined"
    return f[0]


def b(n: int) -> str:
    return f"{n:,}".replace(",", "\u202f")


def signed(n: int) -> str:
    return "0" if n == 0 else ("+" if n > 0 else "−") + b(abs(n))


def peak_phase(s: dict) -> str:
    phases = []
    for step in s["step_peaks"]:
        pm = step["phase_max_memory_allocated"]
        phases.append(max(pm, key=pm.get))
    return ", ".join(phases)


def render() -> str:
    cuda = json.loads((RUN / "cuda_step_peaks.json").read_text())
    gap = json.loads((RUN / "engine_vs_pytorch.json").read_text())
    engine = {r["name"]: r for r in gap["rows"]}
    rows = []
    skipped = []
    for s in cuda["setups"]:
        e = engine[s["name"]]
        if "not_modelled" in e:
            skipped.append((s["name"], e["not_modelled"]))
            continue
        with_ws = e["engine_allocated_with"][READING]
        workspaces = with_ws - e["engine_allocated"]
        pytorch = s["max_memory_allocated"]
        assert pytorch == s["peak_bytes"], s["name"]
        rows.append({
            "group": group(s),
            "features": features(s),
            "name": s["name"],
            "pytorch": pytorch,
            "engine": with_ws,
            "gap": pytorch - with_ws,
            # What neither MemTracker (tensors, on the card) nor the engine's workspaces explain.
            "beyond": pytorch - s["memtracker_peak_bytes"] - workspaces,
            "tensors": e["engine_allocated"] - s["memtracker_peak_bytes"],
            "phase": peak_phase(s),
        })
    order = ["none (optimizers)", *FEATURES, "combined"]
    rows.sort(key=lambda r: (order.index(r["group"]), r["gap"] != 0, r["name"]))

    out = []
    equal = sum(r["gap"] == 0 for r in rows)
    out.append(
        f"{len(cuda['setups'])} setups ran on {cuda['device']} with torch {cuda['torch_version']}; "
        f"the engine models {len(rows)} of them. With the card's workspaces (the reading "
        f"`{READING}`, the 2.8 row, which torch 2.11 takes, at compute capability "
        f"{'.'.join(map(str, gap['compute_capability']))}), {equal} of {len(rows)} are equal to the "
        f"byte; the engine is above PyTorch on {sum(r['gap'] < 0 for r in rows)}.\n"
    )
    out.append("By feature (a setup with several counts under each of them):\n")
    out.append("| feature | setups | equal | PyTorch higher by |")
    out.append("|---|---:|---:|---|")
    for f in ("none (optimizers)", *FEATURES):
        these = [r for r in rows if (f in r["features"]) or (f == "none (optimizers)" and not r["features"])]
        higher = sorted(r["gap"] for r in these if r["gap"] != 0)
        span = "—" if not higher else (b(higher[0]) if len(set(higher)) == 1 else f"{b(higher[0])} to {b(higher[-1])}")
        out.append(f"| {f} | {len(these)} | {sum(r['gap'] == 0 for r in these)} | {span} |")
    out.append("")
    out.append("Every setup, bytes (PyTorch: `max_memory_allocated()` over two steps; engine: the "
               "planned peak allocated with the card's workspaces; beyond MemTracker: PyTorch − "
               "MemTracker's peak on the same CUDA tensors − the engine's workspaces; engine tensors − "
               "MemTracker: the engine's tensors-only peak against MemTracker's, which counts storages, "
               "not the allocator's blocks; peak in: the phase of PyTorch's maximum, per step):\n")
    out.append("| group | setup | PyTorch | engine | PyTorch − engine | beyond MemTracker | engine tensors − MemTracker | peak in |")
    out.append("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        out.append(
            f"| {r['group']} | `{r['name']}` | {b(r['pytorch'])} | {b(r['engine'])} | {signed(r['gap'])} "
            f"| {signed(r['beyond'])} | {signed(r['tensors'])} | {r['phase']} |"
        )
    out.append("")
    out.append("Not modelled by the engine (listed, not compared):\n")
    for name, why in skipped:
        out.append(f"- `{name}`: {why}")
    out.append("")
    others = [k for k in next(iter(engine.values()))["engine_allocated_with"] if k != READING]
    for k in others:
        n = sum(engine[r["name"]]["engine_allocated_with"][k] == r["pytorch"] for r in rows)
        out.append(f"With the reading `{k}` instead: {n} of {len(rows)} equal.")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the note's tables in place")
    mode.add_argument("--check", action="store_true", help="exit 1 if the note's tables are stale")
    a = ap.parse_args(argv)
    tables = render()
    if not (a.write or a.check):
        sys.stdout.write(tables)
        return 0
    note = NOTE.read_text()
    head, rest = note.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + tables + END + tail
    if a.check:
        if new != note:
            print(f"{NOTE.relative_to(ROOT)}: tables are stale; run {Path(__file__).name} --write")
            return 1
        return 0
    NOTE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
