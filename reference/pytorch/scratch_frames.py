#!/usr/bin/env python3
"""What the allocator served in each snapshot of a folder, by the C++ frames that asked:
for every `alloc` of every `NAME.pickle` (step_peaks.py --history, stacks "all"), its bytes
and the first ATen frames below the allocator (`at::native::...`, `at::_ops::...`), counted.
Writes one JSON document to stdout; the kernels' scratch (a reduction's staging buffer, a
cuBLASLt epilogue's workspace) is there by name beside the tensors' ops. Standard library only.

    python3 reference/pytorch/scratch_frames.py DIR > DIR/frames.json
"""

from __future__ import annotations

import json
import os
import pickle
import re
import sys
from collections import Counter

SKIP = re.compile(r"CUDACachingAllocator|c10::cuda|CapturedTraceback|unwind|empty_|"
                  r"at::detail::empty|redispatch|::call\(|^\?\?|TensorImpl|torch::autograd::VariableType")


def asker(frames: list[dict]) -> str:
    """The first three frames that say which kernel asked (allocator internals left out)."""
    names = [re.sub(r"\(.*", "", f.get("name", "")) for f in frames or []]
    named = [n for n in names if n and not SKIP.search(n)]
    return " < ".join(named[:3]) or "(no C++ frame)"


def summarize(path: str) -> dict:
    with open(path, "rb") as f:
        snap = pickle.load(f)
    allocs = Counter()
    for trace in snap.get("device_traces", []):
        for e in trace:
            if e.get("action") == "alloc":
                allocs[(e.get("size"), asker(e.get("frames")))] += 1
    rows = [{"bytes": b, "asked_by": a, "count": n} for (b, a), n in allocs.most_common()]
    return {"allocations": sum(allocs.values()), "by_asker": rows}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: scratch_frames.py DIR (a folder of snapshot pickles)", file=sys.stderr)
        return 2
    out = {}
    for name in sorted(os.listdir(argv[1])):
        if name.endswith(".pickle"):
            try:
                out[name[:-len(".pickle")]] = summarize(os.path.join(argv[1], name))
            except Exception as e:  # noqa: BLE001 -- one unreadable file must not lose the rest
                out[name[:-len(".pickle")]] = {"error": f"{type(e).__name__}: {e}"}
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
