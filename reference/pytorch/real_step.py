#!/usr/bin/env python3
"""A recorder template's training steps run for real, with PyTorch's own memory snapshot.

    python reference/pytorch/real_step.py TEMPLATE.py --out-dir DIR [--batch N] [--device cuda|cpu]
                                          [--set NAME=VALUE ...] [--bisect CAP]

The same steps pytorch/record.py records under FakeTensorMode (its loader, its optimizer choice
and its default step, imported from pytorch/recorder/), run on a card: the model is built on
the CPU and moved to the device, then the optimizer, the GradScaler and the batch are made,
then the template's STEPS steps run, the last step's result alive at the end (as in the
recorder). On CUDA, ``torch.cuda.reset_peak_memory_stats()`` and
``torch.cuda.memory._record_memory_history(max_entries=1_000_000)`` come before the model is
built; at the end it writes

* ``DIR/NAME.pickle``: ``torch.cuda.memory._dump_snapshot`` (what ``memviz replay`` and
  PyTorch's viewer read), NAME being the template's file name without ``.py``;
* ``DIR/NAME.json``: torch, the card (name, compute capability, total memory), batch, steps,
  ``max_memory_allocated``, ``max_memory_reserved``, ``memory_allocated`` at the end, the CUDA
  context estimate (``mem_get_info`` total - free - ``memory_reserved`` at the end),
  PYTORCH_CUDA_ALLOC_CONF, what ``torch._C._cuda_clearCublasWorkspaces()`` frees after the
  snapshot (the cuBLAS workspaces, which the recorder's trace does not hold), and the command.

AUTOCAST runs the forward pass and the loss under ``torch.autocast("cuda", dtype=AUTOCAST)``,
GRAD_SCALER with a real ``torch.amp.GradScaler("cuda")`` (it skips a step whose gradients
overflowed, which the recorder's scaler never does: the JSON lists the scale after each step).

``--set NAME=VALUE`` overrides the template's constants as the recorder's ``--set`` does.
``--bisect CAP`` (bytes, or with a unit: ``16GiB``) holds the card to CAP (PyTorch's allowance
is CAP, ``set_per_process_memory_fraction``; the CUDA context lies outside it) and searches the
largest batch whose STEPS steps fit, in this process: doubling from BATCH_SIZES[0], then halving
the gap; between tries everything is freed, the cache emptied and the cuBLAS workspaces
cleared, so each try starts from an empty allocator. It writes ``DIR/NAME.bisect.json``: the
allowance, each try (batch, fits, peaks, seconds) and the largest batch that fits, which
``memviz replay REC --card CAP --largest-batch`` is compared with. ``--bisect-seconds`` bounds it.

``--device cpu`` (a check on a machine without CUDA) runs the same steps on the CPU and writes
only the JSON, with ``"device": "cpu"``, the CUDA figures null and no snapshot: PyTorch's
memory history records CUDA's allocator only.

Exit status: 0 done; 2 bad input (no template, one that does not import or lacks a function,
a step that raises, ``--device cuda`` without CUDA). Standard library and torch only.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import pickle
import re
import shlex
import sys
import time
import warnings

# C++ frames in the snapshot are named with dladdr (fast) unless asked otherwise.
os.environ.setdefault("TORCH_SYMBOLIZE_MODE", "dladdr")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "pytorch"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from recorder import run as runner  # noqa: E402
from recorder.run import StepError, TemplateError  # noqa: E402

import lesson  # noqa: E402
import record  # noqa: E402

MAX_ENTRIES = 1_000_000
WORKSPACE_RE = re.compile(r"cublas|workspace", re.IGNORECASE)  # as challenge1_cuda.py


class Refused(Exception):
    """A request this machine cannot run (e.g. --device cuda without CUDA)."""


def to_device(obj, device):
    """The batch on ``device``: tensors moved, tuples, lists and dicts walked."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def cuda_autocast_step(t, scaler):
    """recorder.run.default_step with CUDA's autocast (the recorder's runs the CPU's): the
    same body, ``out`` and ``loss`` held as loop variables."""
    autocast = t.AUTOCAST
    held = {}

    def step(model, optimizer, batch):
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=autocast):
            held["out"] = model(x)
            held["loss"] = t.loss_fn(held["out"], y)
        if scaler is not None:
            scaler.scale(held["loss"]).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            held["loss"].backward()
            optimizer.step()
        return held

    return step


def record_history(**kw):
    """torch.cuda.memory._record_memory_history("all", ...) with the keywords this torch knows."""
    rec = torch.cuda.memory._record_memory_history
    try:
        params = inspect.signature(rec).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            kw = {k: v for k, v in kw.items() if k in params}
    except (TypeError, ValueError):
        pass
    rec("all", **kw)


def workspace_blocks(snap: dict) -> list[dict]:
    """Allocated blocks of the snapshot whose stack frames name cublas or a workspace (found
    with C++ frames only)."""
    out = []
    for seg in snap.get("segments", []):
        for b in seg.get("blocks", []):
            if b.get("state") != "active_allocated":
                continue
            names = [f"{fr.get('name', '')}" for fr in b.get("frames") or []
                     if WORKSPACE_RE.search(f"{fr.get('name', '')} {fr.get('filename', '')}")]
            if names:
                out.append({"size": b.get("size"), "requested_size": b.get("requested_size"),
                            "stream": seg.get("stream"), "frames": names[:4]})
    return out


def run(args) -> dict:
    t0 = time.perf_counter()
    t = runner.load(args.template, args.overrides, emulate_gpu=False)
    sizes = tuple(t.BATCH_SIZES) if hasattr(t, "BATCH_SIZES") else (2, 4, 8)
    batch = sizes[0] if args.batch is None else args.batch
    steps = getattr(t, "STEPS", 2)
    name = os.path.splitext(os.path.basename(args.template))[0]
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise Refused(f"--device cuda: this torch ({torch.__version__}, CUDA {torch.version.cuda}) "
                      "sees no CUDA device; --device cpu checks the steps on the CPU")
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    autocast = getattr(t, "AUTOCAST", None)
    doc = {
        "template": os.path.relpath(os.path.abspath(args.template), ROOT),
        "name": name,
        "torch": str(torch.__version__),
        "torch_cuda": torch.version.cuda,
        "device": "cuda" if cuda else "cpu",
        "device_name": None,
        "compute_capability": None,
        "total_memory": None,
        "batch": batch,
        "batch_sizes": list(sizes),
        "steps": steps,
        "autocast": str(autocast) if autocast else None,
        "grad_scaler": bool(getattr(t, "GRAD_SCALER", False)),
        "step": "the template's step" if callable(getattr(t, "step", None)) else "the recorder's default step",
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "pytorch_alloc_conf": os.environ.get("PYTORCH_ALLOC_CONF"),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
    }
    torch.manual_seed(0)
    if cuda:
        torch.cuda.init()
        props = torch.cuda.get_device_properties(dev)
        doc["device_name"] = torch.cuda.get_device_name(dev)
        doc["compute_capability"] = "{}.{}".format(*torch.cuda.get_device_capability(dev))
        doc["total_memory"] = props.total_memory
        doc["memory_allocated_before"] = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        record_history(context="all", stacks=args.stacks, max_entries=args.max_entries)
        doc["stacks"], doc["max_entries"] = args.stacks, args.max_entries

    model = runner._call("make_model()", t.make_model)
    model = model.to(dev)
    optimizer = runner._call("make_optimizer(model)", t.make_optimizer, model)
    doc["cuda_choices"] = runner.cuda_choices(optimizer)
    scaler = torch.amp.GradScaler(dev.type) if doc["grad_scaler"] else None
    if callable(getattr(t, "step", None)):
        step = t.step
    elif cuda and autocast:
        step = cuda_autocast_step(t, scaler)
    else:
        step = runner.default_step(t, scaler)  # on the CPU its autocast is the CPU's, as wanted
    data = to_device(runner._call(f"make_batch({batch})", t.make_batch, batch), dev)
    per_step, scales = [], []
    last = None
    for s in range(1, steps + 1):
        # `last` holds the previous step's result until this one returns (the recorder's loop).
        last = runner._call("step", step, model, optimizer, data)
        if scaler is not None:
            scales.append(float(scaler.get_scale()))
        if cuda:
            per_step.append({"step": s, "memory_allocated": torch.cuda.memory_allocated(dev),
                             "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
                             "memory_reserved": torch.cuda.memory_reserved(dev)})
    doc["per_step"] = per_step
    if scaler is not None:
        doc["grad_scaler_scales"] = scales  # a scale halved: that step's update was skipped

    if cuda:
        torch.cuda.synchronize(dev)
        free, total = torch.cuda.mem_get_info(dev)
        doc["max_memory_allocated"] = torch.cuda.max_memory_allocated(dev)
        doc["max_memory_reserved"] = torch.cuda.max_memory_reserved(dev)
        doc["memory_allocated_end"] = torch.cuda.memory_allocated(dev)
        doc["memory_reserved_end"] = torch.cuda.memory_reserved(dev)
        doc["mem_get_info_end"] = [free, total]
        doc["cuda_context_estimate"] = total - free - doc["memory_reserved_end"]
        doc["cuda_context_estimate_note"] = ("mem_get_info total - free - memory_reserved at the end: the CUDA "
                                            "context, cuBLAS/cuDNN handles and any other process on the card")
        os.makedirs(args.out_dir, exist_ok=True)
        snap_path = os.path.join(args.out_dir, name + ".pickle")
        torch.cuda.memory._dump_snapshot(snap_path)  # `last` still alive: the recorder's end
        record_history_off()
        doc["snapshot"] = os.path.basename(snap_path)
        try:
            with open(snap_path, "rb") as f:
                snap = pickle.load(f)
            doc["trace_entries"] = sum(len(tr) for tr in snap.get("device_traces", []))
            doc["workspace_blocks_by_frames"] = workspace_blocks(snap)
        except Exception as e:  # noqa: BLE001 -- a summary of the dump: say why it is missing
            doc["trace_entries"] = None
            doc["snapshot_read_error"] = f"{type(e).__name__}: {e}"
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            before = torch.cuda.memory_allocated(dev)
            clear()
            doc["cublas_workspaces_freed_by_clearing"] = before - torch.cuda.memory_allocated(dev)
        else:
            doc["cublas_workspaces_freed_by_clearing"] = None
        try:
            import cuda_env
            doc["environment"] = cuda_env.environment()
        except Exception as e:  # noqa: BLE001 -- context only
            doc["environment"] = {"error": f"{type(e).__name__}: {e}"}
    else:
        for k in ("max_memory_allocated", "max_memory_reserved", "memory_allocated_end",
                  "memory_reserved_end", "cuda_context_estimate", "cublas_workspaces_freed_by_clearing"):
            doc[k] = None
        doc["snapshot"] = None
        doc["snapshot_note"] = ("--device cpu: the steps ran on the CPU; no snapshot and no memory "
                                "figures (PyTorch's memory history records CUDA's allocator only)")
    del last
    doc["seconds"] = round(time.perf_counter() - t0, 3)
    return doc


def parse_cap(text: str) -> int:
    """``--bisect``'s size, as the lesson's scripts read a card (``lesson.parse_size``)."""
    try:
        n = lesson.parse_size(text)
    except argparse.ArgumentTypeError as e:
        raise ValueError(f"--bisect: {e}") from e
    if not n or n < 1:
        raise ValueError(f"--bisect {text!r}: a positive size, e.g. 16GiB")
    return n


def try_batch(t, batch: int, dev) -> dict:
    """One try of ``bisect``: the template's STEPS steps at ``batch`` from an empty allocator;
    whether they fit, and the peaks."""
    import gc
    t0 = time.perf_counter()
    torch.cuda.reset_peak_memory_stats(dev)
    fits, why = True, None
    held = {}
    try:
        held["model"] = runner._call("make_model()", t.make_model).to(dev)
        held["opt"] = runner._call("make_optimizer(model)", t.make_optimizer, held["model"])
        runner.cuda_choices(held["opt"])
        scaler = torch.amp.GradScaler("cuda") if getattr(t, "GRAD_SCALER", False) else None
        if callable(getattr(t, "step", None)):
            step = t.step
        elif getattr(t, "AUTOCAST", None):
            step = cuda_autocast_step(t, scaler)
        else:
            step = runner.default_step(t, scaler)
        held["data"] = to_device(runner._call(f"make_batch({batch})", t.make_batch, batch), dev)
        for _ in range(getattr(t, "STEPS", 2)):
            held["last"] = step(held["model"], held["opt"], held["data"])
        torch.cuda.synchronize(dev)
    except torch.cuda.OutOfMemoryError as e:
        fits, why = False, str(e).splitlines()[0][:300]
    except StepError:
        raise
    except Exception as e:  # noqa: BLE001 -- the template's step: name it, as the recorder does
        raise StepError(f"the template's step at batch {batch} raised {type(e).__name__}: "
                        f"{(str(e).splitlines() or [''])[0][:300]}") from e
    peaks = (torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev))
    held.clear()
    gc.collect()
    torch.cuda.empty_cache()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.empty_cache()
    return {"batch": batch, "fits": fits, "max_memory_allocated": peaks[0],
            "max_memory_reserved": peaks[1], "error": why,
            "seconds": round(time.perf_counter() - t0, 3)}


def bisect(args) -> dict:
    """The largest batch whose steps fit the card held to ``args.cap`` (see the module)."""
    t0 = time.perf_counter()
    t = runner.load(args.template, args.overrides, emulate_gpu=False)
    if not torch.cuda.is_available():
        raise Refused("--bisect needs CUDA: this torch sees no CUDA device")
    dev = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info(dev)
    if args.cap >= total:
        raise Refused(f"--bisect {args.cap} B: not below the card's {total} B")
    lesson.cap_card(args.cap, count_outside=False)  # the allowance is the cap; the context beside
    torch.manual_seed(0)
    sizes = tuple(t.BATCH_SIZES) if hasattr(t, "BATCH_SIZES") else (2, 4, 8)
    tries, lo, hi = [], 0, None
    b = sizes[0]
    stopped = None
    while hi is None or hi - lo > 1:
        if time.perf_counter() - t0 > args.bisect_seconds:
            stopped = f"stopped after {args.bisect_seconds} s"
            break
        r = try_batch(t, b, dev)
        tries.append(r)
        if r["fits"]:
            lo = b
        else:
            hi = b
        b = lo * 2 if hi is None else (lo + hi) // 2
        if lo == 0 and hi is not None and hi <= 1:
            break
    name = os.path.splitext(os.path.basename(args.template))[0]
    return {"template": os.path.relpath(os.path.abspath(args.template), ROOT), "name": name,
            "overrides": {k: record.plain(v) for k, v in args.overrides.items()},
            "torch": str(torch.__version__), "device_name": torch.cuda.get_device_name(dev),
            "compute_capability": "{}.{}".format(*torch.cuda.get_device_capability(dev)),
            "total_memory": total, "outside_at_start": total - free, "allowance": args.cap,
            "steps": getattr(t, "STEPS", 2), "tries": tries, "largest_fits": lo,
            "smallest_fails": hi, "stopped": stopped,
            "note": "in one process: between tries everything is freed, the cache emptied and "
                    "cuBLAS's workspaces cleared",
            "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
            "seconds": round(time.perf_counter() - t0, 3)}


def write_json(out_dir: str, name: str, doc: dict) -> str:
    """``doc`` into ``out_dir/name``, through a temporary file; returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    os.replace(path + ".tmp", path)
    return path


def record_history_off():
    try:
        torch.cuda.memory._record_memory_history(None)
    except Exception:  # noqa: BLE001 -- older signatures: the process ends anyway
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="real_step.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See reference/pytorch/README.md, 'Evidence from a GPU machine' (part 5).")
    ap.add_argument("template", help="a recorder template (pytorch/models/NAME.py, a copy of pytorch/record_template.py)")
    ap.add_argument("--out-dir", required=True, help="writes NAME.json (and NAME.pickle on CUDA) here")
    ap.add_argument("--batch", type=int, help="rows per batch (default: BATCH_SIZES[0], the recorder's)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cuda (default), or cpu: the steps on the CPU, the JSON only, no snapshot")
    ap.add_argument("--stacks", choices=["all", "python"], default="all",
                    help="stacks the memory history records: all (C++ too, which names the cuBLAS "
                         "workspaces) or python [all]")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override the template's constant NAME, as record.py's --set")
    ap.add_argument("--bisect", metavar="CAP",
                    help="hold the card to CAP bytes (e.g. 16GiB) and search the largest batch "
                         "that fits; writes NAME.bisect.json")
    ap.add_argument("--bisect-seconds", type=float, default=120.0,
                    help="stop the search after this long; the JSON says so [120]")
    ap.add_argument("--max-entries", type=int, default=MAX_ENTRIES,
                    help=f"trace entries the memory history keeps [{MAX_ENTRIES}]")
    a = ap.parse_args(argv)
    if a.batch is not None and a.batch < 1:
        ap.error("--batch must be at least 1")
    if a.max_entries < 1:
        ap.error("--max-entries must be at least 1")
    try:
        a.overrides = record.parse_set(a.set)
        a.cap = parse_cap(a.bisect) if a.bisect is not None else None
    except ValueError as e:
        ap.error(str(e))
    try:
        doc = bisect(a) if a.cap is not None else run(a)
    except (TemplateError, StepError, Refused) as e:
        print(f"real_step.py: {e}\nnothing written.", file=sys.stderr)
        return 2
    if a.cap is not None:
        path = write_json(a.out_dir, doc["name"] + ".bisect.json", doc)
        print(f"{doc['name']}: the largest batch that fits {a.cap:,} B: {doc['largest_fits']} "
              f"({len(doc['tries'])} tries, {doc['seconds']} s); wrote {path}")
        return 0
    path = write_json(a.out_dir, doc["name"] + ".json", doc)
    if doc["device"] == "cuda":
        print(f"{doc['name']}: {doc['steps']} step(s) at batch {doc['batch']} on {doc['device_name']}: "
              f"max_memory_allocated {doc['max_memory_allocated']:,} B, max_memory_reserved "
              f"{doc['max_memory_reserved']:,} B, {doc['memory_allocated_end']:,} B allocated at the end, "
              f"cuBLAS workspaces {doc['cublas_workspaces_freed_by_clearing']} B, CUDA context about "
              f"{doc['cuda_context_estimate']:,} B; {doc.get('trace_entries')} trace entries")
        print(f"wrote {os.path.join(a.out_dir, doc['snapshot'])} and {path}")
    else:
        print(f"{doc['name']}: {doc['steps']} step(s) at batch {doc['batch']} ran on the CPU "
              f"({doc['step']}{', autocast ' + doc['autocast'] if doc['autocast'] else ''}"
              f"{', GradScaler scales ' + str(doc.get('grad_scaler_scales')) if doc['grad_scaler'] else ''})")
        print(f"wrote {path} (no snapshot: --device cpu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
