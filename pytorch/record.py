#!/usr/bin/env python3
"""The recorder: your training step's memory, as PyTorch's allocator would see it, no GPU.

    python pytorch/record.py TEMPLATE.py [--out FILE.pickle] [--batch N] [--memtracker FILE.json]
                             [--set NAME=VALUE ...] [--compute-capability 9.0] [--cudnn 91900]

TEMPLATE.py is a copy of pytorch/record_template.py with your model, optimizer, loss and
batch (or your own step). The recorder runs its steps under FakeTensorMode and records every
storage's birth and death as PyTorch's dispatcher sees them, with its bytes, operator, module,
phase and thread. Where CUDA's kernel keeps other tensors than the CPU's it records CUDA's, for
the card named by ``--compute-capability`` and ``--cudnn`` (dropout's bool mask, the attention
kernel CUDA's selection rule picks; ``recorder["cuda_kernels"]``, and what stays approximate in
``recorder["approximate"]``; see recorder/cuda_kernels.py), and tensors as a real run holds
them (a linear's bias added in place, gradients accumulated in place); it writes them as a memory snapshot in PyTorch's format (the dict
``torch.cuda.memory._snapshot()`` returns, pickled), which memviz and PyTorch's own tools read.
It records at the template's three BATCH_SIZES and, when the three sequences match and every
size is affine in the batch, stores ``bytes = a + b * batch`` for each allocation (the
snapshot's extra key ``recorder``; see pytorch/README.md). ``--memtracker`` also runs the same
step code under PyTorch's MemTracker and writes its peak as JSON. ``--set NAME=VALUE``
(repeatable) overrides a module-level constant of the template once it is loaded, before
BATCH_SIZES and STEPS are read (VALUE by ``ast.literal_eval``, else the plain string:
``--set STEPS=1 --set HIDDEN=5000 --set OPTIMIZER=adam``); ``recorder["overrides"]`` keeps them.

Allocations CUDA keeps on the host, not the GPU, stay in the trace (the CPU's, MemTracker's
to the byte) and are listed in ``recorder["cuda_host"]``: their indices among the trace's
``alloc`` entries (as ``affine`` counts them), so that a replay on a GPU can skip them. Today
they are a torch.optim optimizer's ``step`` counters (Adam, AdamW, ... in a param group
neither ``fused`` nor ``capturable``) and the 0-d tensor foreach adds to them each step.

Importable: ``record.record(path, batch=None, overrides=None)`` returns the snapshot dict,
``record.memtracker(path, batch=None, overrides=None)`` MemTracker's peak (``overrides``: a dict
NAME -> value, as ``--set``).
Exit status: 0 recorded; 2 bad input (no template, a template that does not import or lacks
a function, a malformed ``--set`` or one naming what the template does not define, a step that
raises, a template path that is not a ``.py`` file): one line, ``record.py: ...``. Nothing is
written unless the recording succeeded. Output into a closed pipe (``record.py T.py | head -1``)
is dropped quietly; the files are still written.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pickle
import sys
import time
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from recorder import run as runner  # noqa: E402
from recorder import snapshot as snap  # noqa: E402
from recorder.run import StepError, TemplateError  # noqa: E402
from recorder.sdpa import CudaCard, parse_capability  # noqa: E402

FORMAT = 1

# What CUDA does differently from the fake CPU step recorded here (stated, not recorded): each
# a stable fact id, which readers act on, and its sentence, which they only show. The recording
# keeps the sentences in `cuda_differences` and their ids, in the same order, in
# `cuda_difference_facts`.
CUDA_DIFFERENCES = [
    ("cublas_workspaces",
     "cuBLAS workspaces: on CUDA each (handle, stream) takes one workspace from the allocator "
     "at its first matrix product, one for the main thread and one for autograd's device "
     "thread (frames <thread> main/autograd say which products each follows); not in this trace."),
    ("host_step_counters",
     "Adam/AdamW and the other torch.optim optimizers with `step` counters (neither fused nor "
     "capturable): the per-parameter counters (and, with foreach, the 0-d tensor it adds to "
     "them each step) are CPU tensors on CUDA; they are in this trace (4 B each), and "
     "`cuda_host` lists them."),
    ("autocast",
     "autocast: recorded with CUDA's op lists (read from this PyTorch's "
     "ATen/autocast_mode.h) and the template's dtype, weights' casts cached until autocast "
     "exits, as CUDA's autocast does; norm's fp32_append_dtype overloads are not cast."),
    ("attention",
     "scaled_dot_product_attention: recorded as the kernel CUDA's own selection rule picks for "
     "this card (flash, memory-efficient, cuDNN or math: `cuda_kernels` says which, and why "
     "the others were refused), with that kernel's outputs and saved tensors; what the kernel "
     "allocates inside itself and cannot be known here is listed in `approximate`."),
]


def relevant(fact: str, module_types, kernels, t, host, autocast_used=False) -> bool:
    """Whether the CUDA difference ``fact`` (its id) applies to this template (cuBLAS's always
    does)."""
    if fact == "host_step_counters":
        return bool(host)
    if fact == "autocast":
        return bool(getattr(t, "AUTOCAST", None)) or autocast_used
    if fact == "attention":
        return any(k["op"] == "scaled_dot_product_attention" for k in kernels)
    return True


# Modules whose CUDA kernels (cuDNN) take memory through the allocator that no CPU trace shows.
CUDNN = [
    (("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"),
     "cuDNN convolution workspaces (forward and both backward kernels; size by algorithm and card)"),
    (("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"),
     "cuDNN BatchNorm's reserve space (training, saved for backward)"),
    (("LSTM", "GRU", "RNN"),
     "cuDNN RNN (not run as cuDNN's here: a projection, packed sequences or mixed dtypes): "
     "its workspace, reserve space and flattened weights"),
]


def cudnn_notes(module_types, kernels) -> list[str]:
    """cuDNN's buffers a model's modules take that the recording does not hold; an RNN that
    ran as cuDNN's (``cuda_kernels``) lists its workspace and reserve in ``approximate``."""
    out = []
    as_cudnn = {k["op"] for k in kernels if k["as"] == "cudnn"}
    for kinds, what in CUDNN:
        used = [k for k in kinds if k in module_types]
        if used and kinds[0] == "LSTM" and as_cudnn & {"lstm", "gru", "rnn_tanh", "rnn_relu"}:
            continue
        if used:
            out.append(f"{what}: taken through the allocator on a GPU, not in a CPU trace "
                       f"(this model has {', '.join(used)})")
    return out


def parse_set(items) -> dict:
    """``--set NAME=VALUE`` items as {NAME: value}: VALUE by ``ast.literal_eval``, else the
    plain string. ValueError for an item that is not NAME=VALUE with NAME an identifier."""
    out = {}
    for item in items or []:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise ValueError(f"--set {item}: expected NAME=VALUE (e.g. --set STEPS=1)")
        try:
            out[name] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[name] = text
    return out


def plain(v):
    """A value as plain data for the snapshot (what PyTorch's viewer unpickles); else its repr."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return type(v)(plain(x) for x in v)
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: plain(x) for k, x in v.items()}
    return repr(v)


def progress(text: str):
    """One line of progress on a terminal's stderr, rewritten in place (nothing in a pipe)."""
    if sys.stderr.isatty():
        print(f"\r\x1b[2K{'record.py: ' + text + '…' if text else ''}", end="", file=sys.stderr,
              flush=True)


def record(path: str, batch: int | None = None, overrides: dict | None = None,
           card: CudaCard | None = None) -> dict:
    """Records the template at ``path`` for ``card`` (default ``CudaCard()``: compute
    capability 9.0, the H200's cuDNN); ``overrides``: {NAME: value} set on it once loaded."""
    overrides = dict(overrides or {})
    card = card or CudaCard()
    t = runner.load(path, overrides)
    sizes = tuple(t.BATCH_SIZES) if hasattr(t, "BATCH_SIZES") else (2, 4, 8)
    batch = sizes[0] if batch is None else batch
    todo = list(sizes) + ([] if batch in sizes else [batch])
    runs = {}
    for i, b in enumerate(todo, 1):
        progress(f"recording batch {b} ({i} of {len(todo)})")
        runs[b] = runner.run(t, b, card=card)
    progress("")
    main = runs[batch]
    runs = {b: runs[b] for b in sizes}
    events = main["events"]
    af = snap.affine({b: r["events"] for b, r in runs.items()})
    host = snap.alloc_indices(events, main["cuda_host"])
    differences = [(fact, text) for fact, text in CUDA_DIFFERENCES
                   if relevant(fact, main["module_types"], main["cuda_kernels"], t, host,
                               main["autocast_used"])]
    extra = {
        "format": FORMAT,
        "template": os.path.relpath(path),
        "overrides": {k: plain(v) for k, v in overrides.items()},
        "torch": str(torch.__version__),
        "batch": batch,
        "batch_sizes": list(sizes),
        "steps": getattr(t, "STEPS", 2),
        "device": "fake CPU tensors (FakeTensorMode) with CUDA's choices made explicit and "
                  "CUDA's kernels substituted where they allocate differently",
        "card": {"compute_capability": f"{card.major}.{card.minor}", "cudnn": card.cudnn},
        "raw_peak_bytes": snap.raw_peak(events),
        "end_bytes": main["end"],
        "cuda_choices": main["notes"],
        "cuda_differences": [text for _, text in differences],
        "cuda_difference_facts": [fact for fact, _ in differences],
        "cuda_host": host,
        "not_in_trace": cudnn_notes(main["module_types"], main["cuda_kernels"]),
        "cuda_kernels": main["cuda_kernels"],
        "approximate": main["approximate"],
        "affine": af,
    }
    return snap.build(events, extra)


def memtracker(path: str, batch: int | None = None, overrides: dict | None = None) -> dict:
    """MemTracker's peak on the template's step code (``overrides`` as ``record``'s)."""
    overrides = dict(overrides or {})
    t = runner.load(path, overrides)
    sizes = tuple(getattr(t, "BATCH_SIZES", (2, 4, 8)))
    batch = sizes[0] if batch is None else batch
    r = runner.run(t, batch, tracker="memtracker")
    return {"template": os.path.relpath(path), "overrides": {k: plain(v) for k, v in overrides.items()},
            "torch": str(torch.__version__), "batch": batch,
            "steps": getattr(t, "STEPS", 2), "peak_bytes": r["peak"],
            "categories": r["categories"], "cuda_choices": r["notes"]}


def peak_at(snapshot: dict, batch: int) -> int:
    """The raw peak at ``batch`` rows from a snapshot's affine form, without recording again."""
    af = snapshot["recorder"]["affine"]
    if not af["affine"]:
        raise ValueError(f"no affine form: {af['reason']}")
    sizes, i = {}, 0
    total = peak = 0
    for e in snapshot["device_traces"][0]:
        if e["action"] == "alloc":
            sizes[e["addr"]] = af["bytes_at_zero"][i] + af["bytes_per_row"][i] * batch
            i += 1
            total += sizes[e["addr"]]
        elif e["action"] == "free_completed":
            total -= sizes.pop(e["addr"])
        peak = max(peak, total)
    return peak


def host_bytes(snapshot: dict) -> tuple[int, int]:
    """The bytes of the allocations ``cuda_host`` lists, in all, and the trace's raw peak
    without them (what a GPU's trace would show)."""
    host = set(snapshot["recorder"].get("cuda_host", []))
    skip, i = set(), 0
    total = peak = every = 0
    for e in snapshot["device_traces"][0]:
        if e["action"] == "alloc":
            if i in host:
                skip.add(e["addr"])
                every += e["size"]
            else:
                total += e["size"]
            i += 1
        elif e["action"] == "free_completed" and e["addr"] not in skip:
            total -= e["size"]
        peak = max(peak, total)
    return every, peak


def summary(d: dict) -> str:
    r = d["recorder"]
    n = sum(e["action"] == "alloc" for e in d["device_traces"][0])
    lines = [f"{r['template']}: {r['steps']} step(s) at batch {r['batch']}, {n} allocations, "
             f"raw peak {r['raw_peak_bytes']:,} B, {r['end_bytes']:,} B alive at the end "
             f"({len(d['segments'])} block(s) in the dump)"]
    if r.get("overrides"):
        lines.append("overrides (--set): " + ", ".join(f"{k}={v!r}" for k, v in r["overrides"].items()))
    af = r["affine"]
    if af["affine"]:
        lines.append(f"affine in the batch (checked at {r['batch_sizes']}): any batch without "
                     "recording again (record.peak_at)")
    else:
        lines.append(f"not affine in the batch: {af['reason']}")
    lines += [f"CUDA's choice: {c}" for c in r["cuda_choices"]]
    lines += [f"not in this trace: {c}" for c in r["not_in_trace"]]
    for k in r["cuda_kernels"]:
        why = f" (refused: {k['refused']})" if k["refused"] else ""
        lines.append(f"CUDA's kernel, recorded: {k['op']} as {k['as']}, {k['calls']} call(s){why}")
    for a in r["approximate"]:
        size = f": {a['bytes']:,} B" if a["bytes"] is not None else ""
        seen = f"; measured: {a['measured']}" if a["measured"] else ""
        lines.append(f"approximate: {a['kernel']}: {a['what']}{size}{seen}")
    lines += [f"on CUDA: {c}" for c in r["cuda_differences"]]
    if r.get("cuda_host"):
        every, peak = host_bytes(d)
        lines.append(f"on CUDA, on the host: {len(r['cuda_host'])} allocation(s), {every:,} B "
                     f"in all (recorder.cuda_host; in this trace): raw peak without them "
                     f"{peak:,} B")
    return "\n".join(lines)


def _write(path: str, data: bytes):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _quiet_stdout():
    """Sends what is left of the output to /dev/null: its reader (``| head``) has gone."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _say(text: str):
    """Prints a line of the summary; into a closed pipe, drops it (and the rest) quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _quiet_stdout()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="record.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See pytorch/README.md, section 'The recorder'.")
    ap.add_argument("template", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "record_template.py"),
                    help="your copy of pytorch/record_template.py (default: the template itself, as an example)")
    ap.add_argument("--out", help="write the snapshot pickle here (else only the summary)")
    ap.add_argument("--batch", type=int, help="the batch size recorded (default: BATCH_SIZES[0])")
    ap.add_argument("--memtracker", metavar="JSON", help="also run MemTracker on the same step; write its peak here")
    ap.add_argument("--compute-capability", default="9.0", metavar="MAJOR.MINOR",
                    help="the card recorded for (torch.cuda.get_device_capability()): which "
                    "attention kernel CUDA picks depends on it (default 9.0, an H100/H200)")
    ap.add_argument("--cudnn", type=int, default=CudaCard.cudnn, metavar="VERSION",
                    help="torch.backends.cudnn.version() of the PyTorch the card runs "
                    f"(default {CudaCard.cudnn}: torch 2.11+cu130)")
    ap.add_argument("--peak-at", type=int, metavar="B", help="also print the raw peak at B rows from the affine form")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override the template's module-level constant NAME (repeatable); VALUE "
                    "is read as a Python literal, else taken as a string: --set STEPS=1 --set HIDDEN=5000")
    a = ap.parse_args(argv)
    if a.batch is not None and a.batch < 1:
        ap.error("--batch must be at least 1")
    t0 = time.perf_counter()
    try:
        overrides = parse_set(a.set)
        major, minor = parse_capability(a.compute_capability)
        if a.cudnn < 1:
            raise ValueError(f"--cudnn {a.cudnn}: expected a version such as 91900")
        card = CudaCard(major, minor, a.cudnn)
    except ValueError as e:
        print(f"record.py: {e} (nothing written)", file=sys.stderr)
        return 2
    try:
        d = record(a.template, a.batch, overrides, card)
        mt = memtracker(a.template, a.batch, overrides) if a.memtracker else None
    except (TemplateError, StepError) as e:
        print(f"record.py: {e} (nothing written)", file=sys.stderr)
        return 2
    _say(summary(d))
    if a.peak_at is not None:
        try:
            _say(f"raw peak at batch {a.peak_at}: {peak_at(d, a.peak_at):,} B (from the affine form)")
        except ValueError as e:
            print(f"record.py: {e}", file=sys.stderr)
            return 2
    if a.out:
        _write(a.out, pickle.dumps(d, protocol=2))
        _say(f"wrote {a.out}")
    if mt is not None:
        _write(a.memtracker, (json.dumps(mt, indent=1) + "\n").encode())
        _say(f"MemTracker: peak {mt['peak_bytes']:,} B; wrote {a.memtracker}")
    print(f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


def _main() -> int:
    """main, with output into a closed pipe dropped without a traceback (``--help | head``)."""
    try:
        code = main()
    except SystemExit as e:
        code = e.code
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    return code


if __name__ == "__main__":
    sys.exit(_main())
