"""From the ledger's events to the dict ``torch.cuda.memory._snapshot()`` returns.

Addresses are the recorder's own: each storage gets a fresh one (a bump pointer, 512-byte
aligned, never reused) in a segment of its own, the size of the caching allocator's block
(requested bytes rounded up to 512). The trace is, per storage: ``segment_alloc``, ``alloc``
(requested bytes) ... ``free_requested``, ``free_completed``, ``segment_free``. A storage alive
at the end has no free in the trace and is a segment of the dump with one
``active_allocated`` block, so the dump is the trace's last state.

Frames, innermost first (PyTorch's order; a viewer labels a block by the first):
  0. ``{"filename": "<recorder>", "line": step, "name": LABEL}``: LABEL is the tensor's name
     (``0.weight``, ``0.weight.grad``, ``0.weight.exp_avg``, ``x``) or ``OP in MODULE``;
  1. ``{"filename": "<aten>", "line": 0, "name": OP}`` (``aten::addmm``; ``external``);
  2. ``{"filename": "<module>", "line": 0, "name": MODULE}`` (``""`` outside any module);
  3. ``{"filename": "<phase>", "line": step, "name": PHASE}`` (setup, forward, backward,
     optimizer; step 0 is setup);
  4. ``{"filename": "<thread>", "line": 0, "name": "main" | "autograd"}``;
  5. the learner's file's innermost line on the Python stack when there is one (its path
     relative to the working directory).

The top-level key ``recorder`` (record.py's ``extra``) indexes allocations the way ``affine``
does: the i-th ``alloc`` entry of ``device_traces[0]``, 0-based, in order. ``cuda_host`` is
such a list: the allocations CUDA keeps on the host, not the GPU (``alloc_indices``). Today
they are a torch.optim optimizer's per-parameter ``step`` counters (Adam, AdamW, ...) in a
param group neither ``fused`` nor ``capturable``, and the 0-d tensor foreach adds to them each
step. They stay in the trace, so the trace is the CPU's and its peak MemTracker's; a replay of
a GPU skips them. Empty when there are none.
"""

from __future__ import annotations

import os

ROUND = 512


def block_size(n: int) -> int:
    return max(ROUND, (n + ROUND - 1) // ROUND * ROUND)


def label(info: dict) -> str:
    if info["names"]:
        return ",".join(info["names"])
    mod = f" in {info['module']}" if info["module"] else ""
    return f"{info['op']}{mod}"


def frames(info: dict) -> list[dict]:
    out = [
        {"filename": "<recorder>", "line": info["step"], "name": label(info)},
        {"filename": "<aten>", "line": 0, "name": info["op"]},
        {"filename": "<module>", "line": 0, "name": info["module"]},
        {"filename": "<phase>", "line": info["step"], "name": info["phase"]},
        {"filename": "<thread>", "line": 0, "name": info["thread"]},
    ]
    if info.get("source"):
        f, line, name = info["source"]
        out.append({"filename": os.path.relpath(f), "line": line, "name": name})
    return out


def build(events: list[tuple[str, dict]], extra: dict) -> dict:
    """The snapshot dict. ``extra`` goes under the top-level key ``recorder``. Deaths in one
    burst (no birth between them) are written oldest birth first: their own order can follow
    a hash of addresses (autocast's cache), and no birth sees the difference."""
    events = canonical(events)
    addr_of: dict[int, int] = {}
    next_addr = 0x7F0000000000
    trace = []
    t = 0
    fr: dict[int, list] = {}
    for action, info in events:
        tid = info["id"]
        size = block_size(info["bytes"])
        f = fr.setdefault(tid, frames(info))
        t += 1
        if action == "alloc":
            addr_of[tid] = next_addr
            next_addr += size
            trace.append(_ev("segment_alloc", addr_of[tid], size, t, f))
            trace.append(_ev("alloc", addr_of[tid], info["bytes"], t, f))
        else:
            a = addr_of[tid]
            trace.append(_ev("free_requested", a, info["bytes"], t, f))
            trace.append(_ev("free_completed", a, info["bytes"], t, f))
            trace.append(_ev("segment_free", a, size, t, f))
    freed = {info["id"] for action, info in events if action == "free"}
    segments = []
    for action, info in events:
        if action != "alloc" or info["id"] in freed:
            continue
        size = block_size(info["bytes"])
        f = fr[info["id"]]
        segments.append({
            "device": 0, "address": addr_of[info["id"]], "total_size": size,
            "allocated_size": size, "active_size": size, "requested_size": info["bytes"],
            "stream": 0, "segment_type": "small" if size <= 1 << 20 else "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": f,
            "blocks": [{"address": addr_of[info["id"]], "size": size,
                        "requested_size": info["bytes"], "state": "active_allocated",
                        "frames": f}],
        })
    return {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False, "pinned_num_register_threads": 1,
                               "release_lock_on_cudamalloc": False,
                               "pinned_use_cuda_host_register": False,
                               "roundup_power2_divisions": {}},
        "recorder": extra,
    }


def canonical(events):
    out, burst = [], []
    for e in events:
        if e[0] == "free":
            burst.append(e)
            continue
        out += sorted(burst, key=lambda x: x[1]["id"])
        burst = []
        out.append(e)
    return out + sorted(burst, key=lambda x: x[1]["id"])


def _ev(action, addr, size, t, frames_):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": frames_}


def raw_peak(events, skip=frozenset()) -> int:
    """The most requested bytes alive at once; ``skip``: ids of storages left out."""
    total = peak = 0
    for action, info in events:
        if info["id"] in skip:
            continue
        total += info["bytes"] if action == "alloc" else -info["bytes"]
        peak = max(peak, total)
    return peak


def alloc_indices(events, ids) -> list[int]:
    """The positions, among the trace's ``alloc`` entries (as ``affine`` counts them), of the
    storages whose ids are in ``ids``."""
    allocs = [info["id"] for action, info in events if action == "alloc"]
    return [i for i, tid in enumerate(allocs) if tid in ids]


def key(events) -> list[tuple]:
    """What must match between batch sizes for the affine form: each birth's op, module,
    phase and step, and which earlier births die between two births. Deaths in one burst
    (no birth between them) are compared as a set: their order can follow a hash of
    addresses (autocast's cache, cleared at the end of its region, is one)."""
    order = {}
    out = []
    burst = []
    for action, info in events:
        if action == "alloc":
            if burst:
                out.append(("free", tuple(sorted(burst))))
                burst = []
            order[info["id"]] = len(order)
            out.append(("alloc", info["op"], info["module"], info["phase"], info["step"]))
        else:
            burst.append(order[info["id"]])
    if burst:
        out.append(("free", tuple(sorted(burst))))
    return out


def affine(runs: dict[int, list]) -> dict:
    """Given the events at three batch sizes, each event's bytes as ``a + b * batch`` when
    the sequences match and every size is affine in the batch; else why not. The lists run
    over the trace's ``alloc`` entries in order (the i-th ``alloc`` of ``device_traces[0]``):
    its ``size`` at B rows is ``bytes_at_zero[i] + bytes_per_row[i] * B``."""
    (b0, e0), (b1, e1), (b2, e2) = sorted(runs.items())
    k0 = key(e0)
    for b, e in ((b1, e1), (b2, e2)):
        k = key(e)
        if k != k0:
            n = next((i for i, (x, y) in enumerate(zip(k0, k)) if x != y), min(len(k), len(k0)))
            return {"affine": False, "reason": f"the sequence at batch {b} differs from batch "
                    f"{b0}'s at step {n} ({len(k)} vs {len(k0)} births and bursts of deaths)"}
    const, slope = [], []
    allocs = [(x0, x1, x2) for (a, x0), (_, x1), (_, x2) in zip(e0, e1, e2) if a == "alloc"]
    for i, (x0, x1, x2) in enumerate(allocs):
        s0, s1, s2 = x0["bytes"], x1["bytes"], x2["bytes"]
        if (s1 - s0) % (b1 - b0) != 0:
            return {"affine": False, "reason": f"alloc {i}: {s0}, {s1} B at {b0}, {b1} rows "
                    "is not a whole number of bytes per row"}
        per = (s1 - s0) // (b1 - b0)
        if s0 + per * (b2 - b0) != s2:
            return {"affine": False, "reason": f"alloc {i} ({x0['op']}): {s0}, {s1}, {s2} B at "
                    f"{b0}, {b1}, {b2} rows is not affine"}
        const.append(s0 - per * b0)
        slope.append(per)
    return {"affine": True, "bytes_at_zero": const, "bytes_per_row": slope}
