#!/usr/bin/env python3
"""Challenge 1 of the book in PyTorch, on a real card held to the engine's ideal card: the
lesson's 15.90 GiB for PyTorch's allocator alone, the CUDA context beside it (the learners'
pytorch/challenge1.py holds the GPU to the lesson's card instead, 15.90 GiB in all, the CUDA
context within it).

The engine's demo (`cargo run -p challenge1`, exercises/challenge1/src/instructor.rs) trains
the lesson's network (2 inputs -> one hidden layer of 2000, ReLU -> 2 classes, float32, SGD
lr 0.001, foreach) for a few steps at batch 32, then tries the whole training set (1,173,000
rows) as one batch on a card of 15.90 GiB (16,282 MiB: crates/gpumem/src/lesson.rs) and runs
out of memory. This script does the same on CUDA, with the card limited by
``torch.cuda.set_per_process_memory_fraction(lesson_bytes / total)`` (``cap_card`` of
pytorch/lesson.py with ``count_outside=False``), and writes what PyTorch
itself reports. Stages (``--stages``, in this order):

* ``probe``: what the cuBLAS/cuBLASLt workspaces take, in this process from its start: the
  memory allocated before and after every Linear's forward and backward of the first step at
  batch 32 (module hooks), what ``torch._C._cuda_clearCublasWorkspaces()`` frees after the
  forward pass alone and after forward + backward, and the blocks and events of a memory
  snapshot (C++ frames with ``--probe-stacks all``) whose frames name cublas or a workspace.
  Run it in a fresh process (its own invocation) for a fresh process's figures.
* ``warmup``: ``--warmup-steps`` steps at batch 32, with the engine's table (loss, allocated,
  peak allocated, reserved after each step).
* ``attempt``: on a fresh allocator (everything freed, the cuBLAS workspaces cleared, the
  caches emptied, as the engine's demo opens a fresh device), under
  ``torch.cuda.memory._record_memory_history(max_entries=...)``: builds the model and runs the
  engine's two steps of ``--rows`` rows (zero_grad; x and y made on the card; forward;
  cross_entropy; backward; step; x and y freed). It catches ``torch.OutOfMemoryError`` and
  writes its message, ``torch.cuda.memory_summary()``, ``mem_get_info()`` and the allocator's
  statistics; the snapshot is dumped by an out-of-memory observer at the moment of the failure
  (as the engine's is), or at the end when the step fits.
* ``bisect``: the largest batch whose two steps fit, each try on a fresh allocator; with
  ``--engine-claim N`` it tries N and N+1 first (the engine's `largest_batch_that_fits`).
  Bounded by ``--bisect-seconds``.

``--smoke`` runs every stage on the CPU at toy sizes (no CUDA calls; out-of-memory emulated by
a byte count) to check the script's flow on a machine without a GPU.

Writes into ``--out``: challenge1_cuda.json (rewritten after each stage, so a timeout keeps
what was done), oom_message.txt, memory_summary.txt, snapshot.pickle (the attempt),
probe_snapshot.pickle and probe_memory_summary.txt (the probe). Standard library and torch
only; installs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import inspect
import json
import os
import pickle
import re
import sys
import time
import traceback
import warnings

# C++ frames in the probe's snapshot are named with dladdr (fast) unless asked otherwise.
os.environ.setdefault("TORCH_SYMBOLIZE_MODE", "dladdr")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
# The first Linear's input needs no gradient: its full backward hook fires on its outputs' grads.
warnings.filterwarnings("ignore", message="Full backward hook is firing")

LESSON_CARD_MIB = 16_282  # crates/gpumem/src/lesson.rs: CARD_MIB ("15.90 GiB total capacity")
LESSON_CARD_BYTES = LESSON_CARD_MIB << 20
FULL_SET = 1_173_000  # the lesson's training set, the "full batch"
LESSON_BATCH = 32  # exercises/challenge1/src/instructor.rs: LESSON_BATCH
STEPS = 2  # crates/gpumem/src/measure.rs: STEPS
STAGES = ("probe", "warmup", "attempt", "bisect")
WORKSPACE_RE = re.compile(r"cublas|workspace", re.IGNORECASE)

torch = None  # imported in main(), after the arguments are checked


def parse_bytes(s: str) -> int:
    """12345, 16282MiB, 15.9GiB, 1e9."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError(f"`{s}` is not a size (e.g. 16282MiB, 17072914432)")
    unit = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
            "KB": 10**3, "MB": 10**6, "GB": 10**9}[m.group(2)]
    try:
        v = float(m.group(1)) * unit
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not a size") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"a size of at least 1 byte, got {s}")
    return int(v)


def positive(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def non_negative(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not a number") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {s}")
    return v


def stages(s: str) -> list[str]:
    out = [p.strip() for p in s.split(",") if p.strip()]
    bad = [p for p in out if p not in STAGES]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"stages are a comma list of {', '.join(STAGES)}; got `{s}`")
    return [st for st in STAGES if st in out]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description="Challenge 1 in PyTorch on the engine's ideal card: PyTorch's allocator "
                    "limited to the lesson's 15.90 GiB, the CUDA context beside it "
                    "(see the module docstring and reference/pytorch/README.md).")
    ap.add_argument("--out", default="reference/pytorch/challenge1_cuda",
                    help="folder to write into (default: %(default)s)")
    ap.add_argument("--stages", type=stages, default=list(STAGES),
                    help="comma list of probe,warmup,attempt,bisect (default: all, in that order)")
    ap.add_argument("--card", type=parse_bytes, default=LESSON_CARD_BYTES,
                    help="the allocator's capacity, the CUDA context not counted, e.g. 16282MiB "
                         "(default: the lesson's "
                         f"{LESSON_CARD_BYTES} B)")
    ap.add_argument("--hidden", type=positive, default=2000, help="hidden width (default: %(default)s)")
    ap.add_argument("--layers", type=positive, default=1, help="hidden layers (default: %(default)s)")
    ap.add_argument("--rows", type=positive, default=FULL_SET,
                    help="rows of the big batch (default: the whole set, %(default)s)")
    ap.add_argument("--warmup-steps", type=positive, default=5, help="steps at batch 32 (default: %(default)s)")
    ap.add_argument("--max-entries", type=positive, default=100_000,
                    help="allocator events the attempt's history keeps (default: %(default)s)")
    ap.add_argument("--probe-stacks", choices=["all", "python"], default="all",
                    help="stacks recorded in the probe's history: all (C++ too, to find cublas "
                         "frames) or python (default: %(default)s)")
    ap.add_argument("--probe-max-entries", type=positive, default=5_000,
                    help="allocator events the probe's history keeps (default: %(default)s)")
    ap.add_argument("--engine-claim", type=positive, default=None,
                    help="the engine's largest batch that fits: bisect tries it and one more first")
    ap.add_argument("--bisect-seconds", type=non_negative, default=90.0,
                    help="time bound of the bisection, 0 to skip it (default: %(default)s)")
    ap.add_argument("--bisect-tries", type=positive, default=40,
                    help="most tries of the bisection (default: %(default)s)")
    ap.add_argument("--smoke", action="store_true",
                    help="run on the CPU at toy sizes, out-of-memory emulated: a flow check without CUDA")
    return ap


# --------------------------------------------------------------------------------------------
# The lesson's network, loop and a fresh allocator.
# --------------------------------------------------------------------------------------------


class Run:
    """Device, sizes and the emulated card of --smoke."""

    def __init__(self, args):
        self.args = args
        self.smoke = args.smoke
        self.device = "cpu" if self.smoke else "cuda"
        self.oom_error = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
        self.phase = "start"
        self.doc: dict = {}

    # -- memory figures (zeros in --smoke)
    def allocated(self) -> int:
        return 0 if self.smoke else torch.cuda.memory_allocated()

    def reserved(self) -> int:
        return 0 if self.smoke else torch.cuda.memory_reserved()

    def max_allocated(self) -> int:
        return 0 if self.smoke else torch.cuda.max_memory_allocated()

    def stats(self) -> dict:
        if self.smoke:
            return {}
        s = torch.cuda.memory_stats()
        keep = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "reserved_bytes.all.peak",
                "requested_bytes.all.current", "requested_bytes.all.peak",
                "active_bytes.all.peak", "inactive_split_bytes.all.current",
                "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
                "segment.all.current", "segment.all.peak", "allocation.all.current",
                "max_split_size")
        return {k: s.get(k) for k in keep}

    def fresh(self):
        """Everything freed, the cuBLAS workspaces cleared, the cache emptied, the peaks reset:
        as near a fresh device as one process gets (the CUDA context stays)."""
        gc.collect()
        if self.smoke:
            return
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        clear_workspaces()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        with contextlib.suppress(Exception):
            torch.cuda.reset_accumulated_memory_stats()

    # -- the network
    def model(self):
        nn = torch.nn
        a = self.args
        mods, d = [], 2
        for _ in range(a.layers):
            mods += [nn.Linear(d, a.hidden, device=self.device), nn.ReLU()]
            d = a.hidden
        mods.append(nn.Linear(d, 2, device=self.device))
        model = nn.Sequential(*mods)
        opt = torch.optim.SGD(model.parameters(), lr=0.001, foreach=True)
        return model, opt

    def batch(self, rows: int, gen):
        x = torch.randn(rows, 2, device=self.device, generator=gen)
        y = torch.randint(0, 2, (rows,), device=self.device, generator=gen)
        return x, y

    def steps(self, model, opt, rows: int, n: int, after_step=None, mark=None):
        """The engine's step (gpumem::mlp::step), n times: zero_grad; x and y made on the card;
        forward; cross_entropy; backward; optimizer.step(); x and y freed. y_pred and loss stay
        alive until the next step rebinds them, as the lesson's loop variables do."""
        F = torch.nn.functional
        mark = mark or (lambda step, phase: None)
        gen = torch.Generator(device=self.device).manual_seed(0)
        y_pred = loss = None
        for step in range(1, n + 1):
            self.phase = f"step {step} zero_grad"
            mark(step, "zero_grad")
            opt.zero_grad()
            self.phase = f"step {step} batch"
            mark(step, "batch")
            x, y = self.batch(rows, gen)
            self.check_smoke(rows)
            self.phase = f"step {step} forward"
            mark(step, "forward")
            y_pred = model(x)
            self.phase = f"step {step} loss"
            mark(step, "loss")
            loss = F.cross_entropy(y_pred, y)
            self.phase = f"step {step} backward"
            mark(step, "backward")
            loss.backward()
            self.phase = f"step {step} optimizer"
            mark(step, "optimizer")
            opt.step()
            del x, y
            mark(step, "end")
            if after_step:
                after_step(step, loss)
        self.phase = "done"
        return y_pred, loss

    def check_smoke(self, rows: int):
        """--smoke's card: a step of `rows` needs about 4 * rows * (3 hidden + 8) bytes."""
        if self.smoke and 4 * rows * (3 * self.args.hidden + 8) > self.args.card:
            raise self.oom_error(f"(smoke) emulated out of memory at {rows} rows on a card of "
                                 f"{self.args.card} B")

    def write(self):
        path = os.path.join(self.args.out, "challenge1_cuda.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.doc, f, indent=2, default=str)
            f.write("\n")
        os.replace(path + ".tmp", path)


def clear_workspaces() -> bool:
    f = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if f is None:
        return False
    f()
    return True


def record_history(enabled, **kw):
    """torch.cuda.memory._record_memory_history with the keywords this torch knows."""
    rec = torch.cuda.memory._record_memory_history
    try:
        params = inspect.signature(rec).parameters
        kw = {k: v for k, v in kw.items() if k in params}
    except (TypeError, ValueError):
        pass
    rec(enabled, **kw)


def dump_snapshot(path: str):
    snap = torch.cuda.memory._snapshot()
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    return snap


def workspace_frames(snap: dict, limit: int = 200) -> dict:
    """Blocks and trace events of a snapshot whose frames name cublas or a workspace."""

    def hits(frames):
        return [f"{fr.get('name', '')} ({os.path.basename(str(fr.get('filename', '')))})"
                for fr in frames or [] if WORKSPACE_RE.search(f"{fr.get('name', '')} {fr.get('filename', '')}")]

    blocks, events = [], []
    for seg in snap.get("segments", []):
        addr = seg.get("address", 0)
        for b in seg.get("blocks", []):
            h = hits(b.get("frames"))
            if h:
                blocks.append({"address": addr, "size": b.get("size"), "requested_size": b.get("requested_size"),
                               "state": b.get("state"), "segment_size": seg.get("total_size"),
                               "stream": seg.get("stream"), "frames": h[:8]})
            addr += b.get("size", 0)
    for dev, trace in enumerate(snap.get("device_traces", [])):
        for e in trace:
            h = hits(e.get("frames"))
            if h:
                events.append({"device": dev, "action": e.get("action"), "addr": e.get("addr"),
                               "size": e.get("size"), "stream": e.get("stream"), "frames": h[:8]})
    n_frames = sum(len(e.get("frames") or []) for t in snap.get("device_traces", []) for e in t)
    return {"blocks": blocks[:limit], "events": events[:limit], "blocks_found": len(blocks),
            "events_found": len(events), "frames_in_trace": n_frames}


def round512(n: int) -> int:
    return (n + 511) // 512 * 512


# --------------------------------------------------------------------------------------------
# Stages.
# --------------------------------------------------------------------------------------------


def stage_probe(run: Run) -> dict:
    """The cuBLAS workspaces: per-hook memory of the first step at batch 32, and what clearing
    the workspaces frees after forward alone and after forward + backward."""
    a = run.args
    out: dict = {"rows": LESSON_BATCH, "stacks": a.probe_stacks}
    run.fresh()
    if not run.smoke:
        try:
            record_history("all", context="all", stacks=a.probe_stacks, max_entries=a.probe_max_entries,
                           clear_history=True)
        except Exception as e:  # noqa: BLE001 - C++ stacks unsupported here: Python ones
            out["stacks"] = "python"
            out["stacks_fallback"] = repr(e)
            record_history("all", context="all", stacks="python", max_entries=a.probe_max_entries,
                           clear_history=True)
    marks = []

    def note(label):
        torch.cuda.synchronize() if not run.smoke else None
        marks.append({"at": label, "allocated": run.allocated(), "reserved": run.reserved()})

    model, opt = run.model()
    note("model built")
    handles = []
    for i, m in enumerate(model):
        if isinstance(m, torch.nn.Linear):
            handles += [
                m.register_forward_pre_hook(lambda mod, inp, i=i: note(f"forward {i} Linear: before")),
                m.register_forward_hook(lambda mod, inp, o, i=i: note(f"forward {i} Linear: after (output {round512(o.nbytes)} B)")),
                m.register_full_backward_pre_hook(lambda mod, go, i=i: note(f"backward {i} Linear: before")),
                m.register_full_backward_hook(lambda mod, gi, go, i=i: note(f"backward {i} Linear: after")),
            ]
    run.steps(model, opt, LESSON_BATCH, 1, mark=lambda s, p: note(f"step {s} {p}"))
    for h in handles:
        h.remove()
    note("after step 1")
    out["marks"] = marks
    # The first matrix products of the forward and backward passes, with what their outputs
    # explain: the rest is what the product took beside its output (a workspace, if any).
    fwd = next((i for i, m in enumerate(marks) if m["at"].startswith("forward") and "before" in m["at"]), None)
    if fwd is not None:
        before, after = marks[fwd], marks[fwd + 1]
        outb = int(re.search(r"output (\d+) B", after["at"]).group(1)) if "output" in after["at"] else 0
        out["first_forward_matmul"] = {"allocated_before": before["allocated"], "allocated_after": after["allocated"],
                                       "delta": after["allocated"] - before["allocated"], "output_bytes": outb,
                                       "beyond_output": after["allocated"] - before["allocated"] - outb}
    bwd = next((i for i, m in enumerate(marks) if m["at"].startswith("backward") and "before" in m["at"]), None)
    if bwd is not None:
        before, after = marks[bwd], marks[bwd + 1]
        out["first_backward_matmul"] = {"allocated_before": before["allocated"], "allocated_after": after["allocated"],
                                        "delta": after["allocated"] - before["allocated"], "module": before["at"]}

    # What clearing the workspaces frees: after a forward pass alone, then after forward +
    # backward (autograd's device thread has its own cuBLAS handle).
    if not run.smoke:
        snap = dump_snapshot(os.path.join(a.out, "probe_snapshot.pickle"))
        out["snapshot_workspace_frames"] = workspace_frames(snap)
        del snap
        with open(os.path.join(a.out, "probe_memory_summary.txt"), "w") as f:
            f.write(torch.cuda.memory_summary())
        record_history(None)
        gen = torch.Generator(device=run.device).manual_seed(1)
        x, y = run.batch(LESSON_BATCH, gen)
        clears = {}
        torch.cuda.synchronize()
        a0 = run.allocated()
        clear_workspaces()
        clears["held_after_step_1"] = a0 - run.allocated()
        with torch.no_grad():
            a0 = run.allocated()
            p = model(x)
            torch.cuda.synchronize()
            a1 = run.allocated()
            del p
            a2 = run.allocated()
            clear_workspaces()
            clears["forward_no_grad"] = {"allocated_during": a1 - a0, "left_after_output_freed": a2 - a0,
                                         "freed_by_clearing": a2 - run.allocated()}
        p = model(x)
        loss = torch.nn.functional.cross_entropy(p, y)
        torch.cuda.synchronize()
        a3 = run.allocated()
        loss.backward()
        torch.cuda.synchronize()
        del p, loss
        opt.zero_grad()
        a4 = run.allocated()
        clear_workspaces()
        clears["forward_backward"] = {"allocated_before_backward": a3, "after_backward_grads_freed": a4,
                                      "freed_by_clearing": a4 - run.allocated()}
        out["workspaces_freed_by_clearing"] = clears
        out["stats"] = run.stats()
    del model, opt
    run.fresh()
    return out


def stage_warmup(run: Run) -> dict:
    """--warmup-steps steps at batch 32, the engine's table after each."""
    run.fresh()
    model, opt = run.model()
    table = []

    def after(step, loss):
        table.append({"step": step, "loss": float(loss.detach()), "allocated": run.allocated(),
                      "peak_allocated": run.max_allocated(), "reserved": run.reserved()})

    run.steps(model, opt, LESSON_BATCH, run.args.warmup_steps, after_step=after)
    del model, opt
    run.fresh()
    return {"batch": LESSON_BATCH, "steps": table}


def stage_attempt(run: Run) -> dict:
    """Two steps of --rows on a fresh allocator, recorded; the out-of-memory, if any, in full."""
    a = run.args
    out: dict = {"rows": a.rows, "max_entries": a.max_entries}
    run.fresh()
    snap_path = os.path.join(a.out, "snapshot.pickle")
    armed = {"on": True, "seconds": None}

    def observer(device, alloc, device_alloc, device_free):
        if not armed["on"]:
            return
        armed["on"] = False
        t0 = time.perf_counter()
        dump_snapshot(snap_path)
        armed["seconds"] = time.perf_counter() - t0
        out["observer"] = {"device": device, "alloc": alloc, "device_alloc": device_alloc,
                           "device_free": device_free, "phase": run.phase}

    if not run.smoke:
        torch._C._cuda_attach_out_of_memory_observer(observer)
        record_history("all", context="all", stacks="python", max_entries=a.max_entries, clear_history=True)
    t0 = time.perf_counter()
    model = opt = None
    try:
        run.phase = "model"
        model, opt = run.model()
        out["model_allocated"] = run.allocated()
        run.steps(model, opt, a.rows, STEPS)
        out["fits"] = True
    except run.oom_error as e:
        out["fits"] = False
        out["failed_in"] = run.phase
        out["oom_message"] = str(e)
        out["exception_type"] = f"{type(e).__module__}.{type(e).__qualname__}"
        with open(os.path.join(a.out, "oom_message.txt"), "w") as f:
            f.write(str(e) + "\n")
        if not run.smoke:
            out["mem_get_info"] = list(torch.cuda.mem_get_info())
            out["at_catch"] = {"allocated": run.allocated(), "reserved": run.reserved(),
                               "max_allocated": run.max_allocated(),
                               "max_reserved": torch.cuda.max_memory_reserved(), "stats": run.stats()}
            with open(os.path.join(a.out, "memory_summary.txt"), "w") as f:
                f.write(torch.cuda.memory_summary())
        del e
    out["seconds"] = time.perf_counter() - t0
    armed["on"] = False
    if not run.smoke:
        if out.get("fits", False) or not os.path.exists(snap_path):
            dump_snapshot(snap_path)
            out["snapshot_taken"] = "at the end (no out-of-memory observed)"
        else:
            out["snapshot_taken"] = f"by the out-of-memory observer ({armed['seconds']:.2f} s)"
        record_history(None)
        out["snapshot"] = snap_path
        out["snapshot_bytes"] = os.path.getsize(snap_path)
        out["after"] = {"allocated": run.allocated(), "reserved": run.reserved(),
                        "max_allocated": run.max_allocated(),
                        "max_reserved": torch.cuda.max_memory_reserved(), "stats": run.stats()}
    del model, opt
    run.fresh()
    return out


def stage_bisect(run: Run) -> dict:
    """The largest batch whose two steps fit, each try on a fresh allocator."""
    a = run.args
    out: dict = {"tries": [], "seconds_bound": a.bisect_seconds, "tries_bound": a.bisect_tries}
    t_start = time.perf_counter()

    def fits(rows: int) -> bool:
        run.fresh()
        t0 = time.perf_counter()
        model = opt = None
        entry = {"rows": rows}
        try:
            model, opt = run.model()
            run.steps(model, opt, rows, STEPS)
            entry["fits"] = True
        except run.oom_error as e:
            entry["fits"] = False
            entry["failed_in"] = run.phase
            entry["oom_first_line"] = str(e).splitlines()[0][:300] if str(e) else ""
        entry["peak_allocated"] = run.max_allocated()
        entry["peak_reserved"] = 0 if run.smoke else torch.cuda.max_memory_reserved()
        entry["seconds"] = round(time.perf_counter() - t0, 3)
        del model, opt
        run.fresh()
        out["tries"].append(entry)
        print(f"  bisect: {rows} rows {'fits' if entry['fits'] else 'does not fit'} "
              f"(peak allocated {entry['peak_allocated']}, reserved {entry['peak_reserved']}, "
              f"{entry['seconds']} s)", flush=True)
        return entry["fits"]

    def budget_left() -> bool:
        return (time.perf_counter() - t_start < a.bisect_seconds) and len(out["tries"]) < a.bisect_tries

    lo, hi = None, None  # the largest known to fit, the smallest known not to
    if a.engine_claim is not None:
        c = min(a.engine_claim, a.rows)
        if fits(c):
            lo = c
            if c < a.rows and budget_left():
                if fits(c + 1):
                    lo = c + 1
                else:
                    hi = c + 1
        else:
            hi = c
        out["engine_claim"] = a.engine_claim
        out["engine_claim_confirmed"] = lo == a.engine_claim and hi == a.engine_claim + 1
    if lo is None and budget_left():
        lo = LESSON_BATCH if fits(LESSON_BATCH) else None
    if hi is None and budget_left() and (lo is None or lo < a.rows):
        if fits(a.rows):
            lo = a.rows
        else:
            hi = a.rows
    while lo is not None and hi is not None and hi - lo > 1 and budget_left():
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    out["largest_known_to_fit"] = lo
    out["smallest_known_not_to_fit"] = hi
    out["exact"] = lo is not None and hi is not None and hi - lo == 1
    out["seconds"] = round(time.perf_counter() - t_start, 3)
    return out


def main(argv=None) -> int:
    global torch
    args = build_parser().parse_args(argv)
    if args.smoke and args.card == LESSON_CARD_BYTES:
        args.card = 16 << 20  # a toy card for the toy sizes below: the attempt fails
    if args.smoke:
        args.rows = min(args.rows, 20_000)
        args.hidden = min(args.hidden, 200)
        args.warmup_steps = min(args.warmup_steps, 2)
    os.makedirs(args.out, exist_ok=True)

    import torch as _torch

    torch = _torch
    if not args.smoke and not torch.cuda.is_available():
        print("challenge1_cuda.py: CUDA is not available (use --smoke for a CPU flow check)", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cuda_env import environment

    run = Run(args)
    doc = run.doc
    doc.update({
        "script": "reference/pytorch/challenge1_cuda.py",
        "argv": sys.argv[1:] if argv is None else list(argv),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "smoke": args.smoke,
        "network": {"inputs": 2, "hidden": args.hidden, "layers": args.layers, "classes": 2,
                    "dtype": "float32", "optimizer": "SGD(lr=0.001, foreach=True)"},
        "steps_per_attempt": STEPS,
        "environment": environment(),
        "stages": {},
        "errors": {},
    })
    if not args.smoke:
        total = torch.cuda.get_device_properties(0).total_memory
        if args.card >= total:
            print(f"challenge1_cuda.py: the card ({args.card} B) is not smaller than the GPU ({total} B)",
                  file=sys.stderr)
            return 2
        # The learners' scripts' cap (pytorch/lesson.py), with the whole card for the allocator:
        # the engine's ideal card, which holds nothing outside it.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pytorch"))
        from lesson import cap_card

        _, _, allowed = cap_card(args.card, count_outside=False)
        doc["card"] = {"bytes": args.card, "gpu_total_memory": total, "fraction": (allowed + 0.5) / total,
                       "allowed_bytes": allowed}
    else:
        doc["card"] = {"bytes": args.card, "emulated": True}
    run.write()

    failed = False
    for name in args.stages:
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            doc["stages"][name] = globals()[f"stage_{name}"](run)
            doc["stages"][name]["stage_seconds"] = round(time.perf_counter() - t0, 3)
        except Exception as e:  # noqa: BLE001 - one stage failing must not lose the others
            failed = True
            doc["errors"][name] = traceback.format_exc()
            print(f"stage {name} failed: {e!r}", file=sys.stderr, flush=True)
            traceback.print_exc()
            with contextlib.suppress(Exception):
                run.fresh()
        run.write()
        summary(name, doc["stages"].get(name))
    print(f"wrote {os.path.join(args.out, 'challenge1_cuda.json')}")
    return 1 if failed else 0


def summary(name: str, r: dict | None):
    if not r:
        return
    if name == "probe":
        for k in ("first_forward_matmul", "first_backward_matmul", "workspaces_freed_by_clearing"):
            if k in r:
                print(f"  {k}: {json.dumps(r[k])}")
        fr = r.get("snapshot_workspace_frames")
        if fr:
            print(f"  snapshot: {fr['blocks_found']} blocks and {fr['events_found']} events with cublas/workspace "
                  f"frames ({fr['frames_in_trace']} frames in the trace)")
    elif name == "warmup":
        for s in r["steps"]:
            print(f"  step {s['step']}: loss {s['loss']:.4f} allocated {s['allocated']} "
                  f"peak {s['peak_allocated']} reserved {s['reserved']}")
    elif name == "attempt":
        print(f"  {r['rows']} rows: {'fits' if r.get('fits') else 'out of memory in ' + str(r.get('failed_in'))}")
        if r.get("oom_message"):
            print("  " + r["oom_message"].replace("\n", "\n  "))
    elif name == "bisect":
        print(f"  largest known to fit {r['largest_known_to_fit']}, smallest known not to "
              f"{r['smallest_known_not_to_fit']} (exact: {r['exact']}, {len(r['tries'])} tries, {r['seconds']} s)")


if __name__ == "__main__":
    sys.exit(main())
