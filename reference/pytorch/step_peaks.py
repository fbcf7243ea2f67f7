#!/usr/bin/env python3
"""PyTorch's own memory figures for the lesson's training step.

For every setup in SETUPS this builds the lesson's network with PyTorch
(``inputs -> layers x [Linear(width) + ReLU] -> Linear(classes)``, float32), runs TWO steps of
the lesson's loop with PyTorch 2.x's CUDA defaults and records the peak memory:

    optimizer.zero_grad()            # set_to_none=True since PyTorch 2.0
    y_pred = model(x)
    loss = F.cross_entropy(y_pred, y)
    loss.backward()
    optimizer.step()                 # foreach=True, as PyTorch picks on CUDA

Backends (``--backend``):

* ``fake`` (the default when CUDA is not available): tensors live in
  ``torch._subclasses.fake_tensor.FakeTensorMode`` (shapes, no storage: the lesson's full batch
  of 1,173,000 rows costs nothing) and ``torch.distributed._tools.mem_tracker.MemTracker`` counts
  the raw bytes of every tensor storage that is alive. This is what made the committed fixture.
* ``cuda`` (the default when CUDA is available): real tensors on the GPU, measured with
  ``torch.cuda.max_memory_allocated()`` (the caching allocator's figure: 512 B rounding and the
  cuBLAS/cuBLASLt workspaces included). MemTracker's breakdown is recorded beside it.
* ``real-cpu``: real tensors on the CPU, measured with MemTracker: a self-check that
  FakeTensorMode changes nothing (use ``--max-bytes`` to keep to small setups).

Beside MemTracker, a small dispatch-mode ledger (``Ledger`` below) records every storage that
is created and freed, with the op that made it; it gives the per-phase peaks, the tensors alive
at each peak (``--live``) and the op-by-op trace of a small setup (``--trace``). Its totals are
checked against MemTracker's on every setup.

Uses the standard library and torch only, and installs nothing. See README.md beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import os
import platform
import shlex
import sys
import time
import warnings
import weakref

# torch warns at import when numpy is missing; numpy is not needed here.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed._tools.common_utils import get_untyped_storages  # noqa: E402
from torch.distributed._tools.mem_tracker import MemTracker  # noqa: E402
from torch.distributed._tools.mod_tracker import ModTracker  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402
from torch.utils.weak import WeakIdKeyDictionary  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message=".*torch.cpu.amp.*")

FULL_SET = 1_173_000  # the lesson's training set: its "full batch"
LR = 0.001  # the lesson's learning rate
STEPS = 2

# --------------------------------------------------------------------------------------------
# Setups: every input spelled out.
# --------------------------------------------------------------------------------------------


def sgd(momentum: float = 0.0, foreach: bool = True) -> dict:
    return {
        "name": "sgd",
        "lr": LR,
        "momentum": momentum,
        "dampening": 0.0,
        "weight_decay": 0.0,
        "nesterov": False,
        "foreach": foreach,
        "fused": False,
    }


def adam(foreach: bool = True, fused: bool = False) -> dict:
    return {
        "name": "adam",
        "lr": LR,
        "betas": [0.9, 0.999],
        "eps": 1e-08,
        "weight_decay": 0.0,
        "amsgrad": False,
        "foreach": foreach and not fused,
        "fused": fused,
    }


def strategy(
    autocast: str | None = None,
    autocast_loss: str | None = None,
    grad_scaler: bool = False,
    accumulation: int = 1,
    checkpoint_segment: int = 0,
    checkpoint_last_segment: bool = False,
    relu_inplace: bool = False,
    zero_grad_set_to_none: bool = True,
) -> dict:
    if autocast is not None and autocast_loss is None:
        autocast_loss = "cpu"
    return {
        # None, or "float16": torch.autocast("cpu", dtype=torch.float16) around forward + loss
        # (torch.autocast("cuda", ...) on the cuda backend).
        "autocast": autocast,
        # With autocast, whose op policy the loss follows: "cpu" is F.cross_entropy under CPU
        # autocast; "cuda" spells out on the CPU the ops CUDA autocast runs for F.cross_entropy
        # (see README.md). On the cuda backend both are CUDA's own F.cross_entropy.
        "autocast_loss": autocast_loss,
        # torch.amp.GradScaler: loss scaled before backward, grads unscaled before the step.
        "grad_scaler": grad_scaler,
        # Micro-batches per optimizer step (gradient accumulation): zero_grad once, then k
        # times forward + loss/k + backward on consecutive row slices of the batch, one step.
        "accumulation": accumulation,
        # 0: off. s > 0: hidden layers in segments of s [Linear+ReLU] blocks, each run through
        # torch.utils.checkpoint.checkpoint(..., use_reentrant=False) -- except the last
        # segment unless checkpoint_last_segment (torch.utils.checkpoint_sequential's rule).
        # The output Linear is never checkpointed.
        "checkpoint_segment": checkpoint_segment,
        "checkpoint_last_segment": checkpoint_last_segment,
        # nn.ReLU(inplace=True)
        "relu_inplace": relu_inplace,
        # optimizer.zero_grad(set_to_none=...): False is the pre-2.0 behaviour (zeroed in place).
        "zero_grad_set_to_none": zero_grad_set_to_none,
    }


def setup(width, layers, batch, optimizer, inputs=2, classes=2, **strat) -> dict:
    return {
        "inputs": inputs,
        "width": width,
        "layers": layers,
        "classes": classes,
        "batch": batch,
        "optimizer": optimizer,
        "strategy": strategy(**strat),
    }


def setup_name(s: dict) -> str:
    o, st = s["optimizer"], s["strategy"]
    parts = [f"{s['inputs']}-{s['width']}x{s['layers']}-{s['classes']}", f"b{s['batch']}"]
    if o["name"] == "sgd":
        parts.append("sgd" if o["momentum"] == 0 else f"sgd-m{o['momentum']:g}")
    else:
        parts.append("adam")
    if o["fused"]:
        parts.append("fused")
    elif not o["foreach"]:
        parts.append("forloop")
    if st["autocast"]:
        parts.append(f"autocast-{st['autocast']}-{st['autocast_loss']}loss")
    if st["grad_scaler"]:
        parts.append("scaler")
    if st["accumulation"] > 1:
        parts.append(f"accum{st['accumulation']}")
    if st["checkpoint_segment"]:
        parts.append(f"ckpt{st['checkpoint_segment']}" + ("all" if st["checkpoint_last_segment"] else ""))
    if st["relu_inplace"]:
        parts.append("inplace")
    if not st["zero_grad_set_to_none"]:
        parts.append("zerograd-zero")
    return "/".join(parts)


def make_setups() -> list[dict]:
    S = []
    # The lesson's network 2 -> W -> 2, SGD: widths and batches.
    for w, b in [(5, 1), (5, 32), (100, 32), (2000, 1), (2000, 32), (2000, 4096), (2000, 65536),
                 (2000, FULL_SET), (5000, 4096), (5, FULL_SET)]:
        S.append(setup(w, 1, b, sgd()))
    # Depth.
    for w, l, b in [(512, 2, 4096), (512, 4, 4096), (512, 8, 4096), (1000, 3, 65536), (5000, 8, 32)]:
        S.append(setup(w, l, b, sgd()))
    # Optimizers: momentum and Adam (foreach), Adam fused and for-loop.
    S += [
        setup(2000, 1, 4096, sgd(0.9)),
        setup(2000, 1, 4096, adam()),
        setup(512, 4, 4096, sgd(0.9)),
        setup(512, 4, 4096, adam()),
        setup(5000, 8, 32, sgd(0.9)),
        setup(5000, 8, 32, adam()),
        setup(2000, 1, FULL_SET, adam()),
        setup(512, 4, 4096, adam(fused=True)),
        setup(512, 4, 4096, adam(foreach=False)),
        setup(5000, 8, 32, adam(fused=True)),
        setup(5000, 8, 32, adam(foreach=False)),
        setup(5000, 8, 32, sgd(0.9, foreach=False)),
    ]
    # A wider input and more classes (an MNIST-sized network), to exercise those fields.
    S.append(setup(512, 2, 4096, adam(), inputs=784, classes=10))
    # Autocast float16 (CPU policy, and the CUDA loss path spelled out), GradScaler.
    S += [
        setup(2000, 1, 4096, sgd(), autocast="float16", autocast_loss="cpu"),
        setup(2000, 1, 4096, sgd(), autocast="float16", autocast_loss="cuda"),
        setup(2000, 1, FULL_SET, sgd(), autocast="float16", autocast_loss="cpu"),
        setup(2000, 1, FULL_SET, sgd(), autocast="float16", autocast_loss="cuda"),
        setup(512, 4, 65536, adam(), autocast="float16", autocast_loss="cpu"),
        setup(512, 4, 65536, adam(), autocast="float16", autocast_loss="cuda"),
        setup(5, 1, 65536, sgd(), autocast="float16", autocast_loss="cpu"),
        setup(5, 1, 65536, sgd(), autocast="float16", autocast_loss="cuda"),
        setup(2000, 1, 4096, sgd(), autocast="float16", autocast_loss="cuda", grad_scaler=True),
        setup(512, 4, 65536, adam(), autocast="float16", autocast_loss="cuda", grad_scaler=True),
        setup(2000, 1, 4096, sgd(), grad_scaler=True),
    ]
    # Gradient accumulation.
    S += [
        setup(2000, 1, 4096, sgd(), accumulation=4),
        setup(2000, 1, FULL_SET, sgd(), accumulation=8),
        setup(512, 4, 65536, adam(), accumulation=4),
    ]
    # Activation checkpointing (non-reentrant).
    S += [
        setup(512, 8, 4096, sgd(), checkpoint_segment=2),
        setup(512, 8, 4096, sgd(), checkpoint_segment=4),
        setup(512, 8, 4096, sgd(), checkpoint_segment=1, checkpoint_last_segment=True),
        setup(2000, 1, FULL_SET, sgd(), checkpoint_segment=1, checkpoint_last_segment=True),
        setup(512, 8, 65536, adam(), checkpoint_segment=3),
    ]
    # nn.ReLU(inplace=True).
    S += [
        setup(2000, 1, 4096, sgd(), relu_inplace=True),
        setup(2000, 1, FULL_SET, sgd(), relu_inplace=True),
        setup(512, 4, 4096, adam(), relu_inplace=True),
    ]
    # zero_grad(set_to_none=False): the pre-2.0 behaviour.
    S += [
        setup(2000, 1, 4096, sgd(), zero_grad_set_to_none=False),
        setup(2000, 1, FULL_SET, sgd(), zero_grad_set_to_none=False),
        setup(512, 4, 4096, adam(), zero_grad_set_to_none=False),
    ]
    # Everything at once.
    S.append(setup(512, 8, 65536, adam(), autocast="float16", autocast_loss="cuda", grad_scaler=True,
                   accumulation=2, checkpoint_segment=2, relu_inplace=True))
    for s in S:
        s["name"] = setup_name(s)
    names = [s["name"] for s in S]
    assert len(names) == len(set(names)), "setup names must be unique"
    return S


# The small setups whose op-by-op trace --trace writes (SGD and Adam) ...
TRACE_SETUPS = [
    setup(8, 1, 4, sgd()),
    setup(8, 1, 4, adam()),
]
# ... and those --trace-strategies writes: one small setup per strategy.
TRACE_STRATEGY_SETUPS = [
    setup(8, 1, 4, sgd(0.9)),
    setup(8, 1, 4, adam(fused=True)),
    setup(8, 2, 4, sgd(), autocast="float16", autocast_loss="cpu"),
    setup(8, 2, 4, sgd(), autocast="float16", autocast_loss="cuda", grad_scaler=True),
    setup(8, 1, 4, sgd(), accumulation=2),
    setup(8, 4, 4, sgd(), checkpoint_segment=2),
    setup(8, 1, 4, sgd(), relu_inplace=True),
    setup(8, 1, 4, sgd(), zero_grad_set_to_none=False),
]
# ... and those --trace-lesson-card writes: the lesson's card's boundaries under PyTorch
# 1.12's defaults (zero_grad zeroes, optimizers loop), one row or layer either side of what
# the engine finds on that card (Challenge 1's full batch; Challenge 2's depths with SGD and
# Adam). The engine's test replays these traces through its allocator on the lesson's card
# (`crates/gpumem/tests/lesson_card_trace.rs`), which fails if the boundaries move.
TRACE_LESSON_CARD_SETUPS = [
    setup(2000, 1, 655360, sgd(foreach=False), zero_grad_set_to_none=False),
    setup(2000, 1, 655361, sgd(foreach=False), zero_grad_set_to_none=False),
    setup(5000, 81, 32, sgd(foreach=False), zero_grad_set_to_none=False),
    setup(5000, 82, 32, sgd(foreach=False), zero_grad_set_to_none=False),
    setup(5000, 40, 32, adam(foreach=False), zero_grad_set_to_none=False),
    setup(5000, 41, 32, adam(foreach=False), zero_grad_set_to_none=False),
]
for _s in TRACE_SETUPS + TRACE_STRATEGY_SETUPS + TRACE_LESSON_CARD_SETUPS:
    _s["name"] = setup_name(_s)

# --------------------------------------------------------------------------------------------
# The network and the loop.
# --------------------------------------------------------------------------------------------


class LessonNet(nn.Sequential):
    """``Linear, ReLU, ..., Linear, ReLU, Linear``: the lesson's nn.Sequential, with optional
    activation checkpointing of segments of [Linear, ReLU] blocks."""

    def __init__(self, s: dict, device):
        st = s["strategy"]
        mods, d = [], s["inputs"]
        for _ in range(s["layers"]):
            mods += [nn.Linear(d, s["width"], device=device), nn.ReLU(inplace=st["relu_inplace"])]
            d = s["width"]
        mods.append(nn.Linear(d, s["classes"], device=device))
        super().__init__(*mods)
        self.layers = s["layers"]
        self.segment = st["checkpoint_segment"]
        self.checkpoint_last = st["checkpoint_last_segment"]

    def _blocks(self, start: int, end: int):
        mods = list(self)

        def run(h):
            for i in range(start, end):
                h = mods[2 * i + 1](mods[2 * i](h))
            return h

        return run

    def forward(self, x):
        if not self.segment:
            return super().forward(x)
        h = x
        starts = list(range(0, self.layers, self.segment))
        for n, start in enumerate(starts):
            end = min(start + self.segment, self.layers)
            run = self._blocks(start, end)
            if n < len(starts) - 1 or self.checkpoint_last:
                h = checkpoint(run, h, use_reentrant=False)
            else:
                h = run(h)
        return self[-1](h)


def make_optimizer(model: nn.Module, o: dict) -> torch.optim.Optimizer:
    if o["name"] == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=o["lr"], momentum=o["momentum"], dampening=o["dampening"],
            weight_decay=o["weight_decay"], nesterov=o["nesterov"], foreach=o["foreach"],
            fused=o["fused"] or None)
    if o["name"] == "adam":
        return torch.optim.Adam(
            model.parameters(), lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"],
            weight_decay=o["weight_decay"], amsgrad=o["amsgrad"], foreach=o["foreach"],
            fused=o["fused"] or None)
    raise ValueError(f"unknown optimizer {o['name']!r}")


class NoItemGradScaler(torch.amp.GradScaler):
    """torch.amp.GradScaler whose step does not read found_inf with .item() (a FakeTensor has
    no value to read). It steps as a real scaler does when no gradient overflowed; every tensor
    it creates (scale, growth tracker, inv_scale, found_inf) is created as in GradScaler."""

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        return optimizer.step(*args, **kwargs)


def cuda_autocast_cross_entropy(y_pred, y):
    """What CUDA autocast runs for F.cross_entropy(y_pred, y), spelled out so that CPU autocast
    runs the same ops: cross_entropy_loss has no AutocastCUDA kernel, so it decomposes into
    log_softmax(y_pred, 1, dtype=y_pred.dtype) -- an explicit dtype, which AutocastCUDA's
    fp32_set_opt_dtype policy leaves alone, so float16 -- and nll_loss, which AutocastCUDA
    (like AutocastCPU) casts to float32."""
    return F.nll_loss(torch.log_softmax(y_pred, 1, dtype=y_pred.dtype), y)


def train(model, optimizer, x, y, s, device_type, mark, scaler=None):
    """The lesson's loop, STEPS times. ``mark(step, phase)`` is called at each phase boundary.
    y_pred and loss are loop variables, as in the lesson: the previous step's are alive until
    the next step rebinds them."""
    st = s["strategy"]
    k = st["accumulation"]
    rows = s["batch"]
    # k consecutive row slices as equal as possible, the first ones one row longer.
    base, extra = divmod(rows, k)
    bounds, lo = [], 0
    for j in range(k):
        hi = lo + base + (j < extra)
        bounds.append((lo, hi))
        lo = hi
    if st["autocast"]:
        amp = lambda: torch.autocast(device_type, dtype=getattr(torch, st["autocast"]))  # noqa: E731
    else:
        amp = contextlib.nullcontext
    if st["autocast"] and st["autocast_loss"] == "cuda" and device_type == "cpu":
        loss_fn = cuda_autocast_cross_entropy
    else:
        loss_fn = F.cross_entropy
    y_pred = loss = None
    for step in range(1, STEPS + 1):
        mark(step, "zero_grad")
        optimizer.zero_grad(set_to_none=st["zero_grad_set_to_none"])
        for lo, hi in bounds:
            xb, yb = (x, y) if k == 1 else (x[lo:hi], y[lo:hi])
            mark(step, "forward")
            with amp():
                y_pred = model(xb)
                loss = loss_fn(y_pred, yb)
                if k > 1:
                    loss = loss / k
            mark(step, "backward")
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
        mark(step, "optimizer")
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        mark(step, "end")
    return y_pred, loss


# --------------------------------------------------------------------------------------------
# The ledger: every storage created and freed, by op.
# --------------------------------------------------------------------------------------------


def _storages(t: torch.Tensor):
    return get_untyped_storages(t)


def _short_dtype(dt: torch.dtype) -> str:
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int64: "i64",
            torch.float64: "f64", torch.bool: "bool", torch.int32: "i32"}.get(dt, str(dt))


class Ledger(TorchDispatchMode):
    """Records each storage an op creates (size, op, phase, module) and when it dies (a weakref
    finalizer on the storage), with the running total of live bytes."""

    def __init__(self, record_events: bool = False):
        super().__init__()
        self.live: dict[int, dict] = {}
        self.seen = WeakIdKeyDictionary()
        self.total = 0
        self.next_id = 0
        self.phase = (0, "setup")
        self.record = record_events
        self.events: list[tuple] = []
        self.phase_peaks: dict[tuple, int] = {}
        self.step_peak: dict[int, dict] = {}
        self.mods = ModTracker()
        self.seq = 0
        self.finalizers = []

    # -- bookkeeping
    def _add(self, st, t: torch.Tensor | None, origin: str, name: str | None = None):
        if st in self.seen:
            return None
        nbytes = st.nbytes()
        self.next_id += 1
        tid = self.next_id
        info = {
            "id": tid,
            "bytes": nbytes,
            "origin": origin,
            "phase": self.phase,
            "module": self._module(),
            "dtype": _short_dtype(t.dtype) if t is not None else "?",
            "shape": list(t.shape) if t is not None else [],
            "names": [name] if name else [],
        }
        self.seen[st] = tid
        self.live[tid] = info
        self.total += nbytes
        fin = weakref.finalize(st, self._free, tid)
        fin.atexit = False
        self.finalizers.append(fin)
        if self.record:
            self.events.append(("alloc", self.seq, self.phase, info, self.total))
        return info

    def _free(self, tid: int):
        info = self.live.pop(tid, None)
        if info is None:
            return
        self.total -= info["bytes"]
        if self.record:
            self.events.append(("free", self.seq, self.phase, info, self.total))

    def _module(self) -> str:
        names = [p for p in self.mods.parents if p != "Global"]
        name = max(names, key=lambda p: (p.count("."), p)) if names else ""
        return name + (" (bw)" if self.mods.is_bw and name else "")

    def _update_peaks(self, where: str):
        step, phase = self.phase
        key = (step, phase)
        if self.total > self.phase_peaks.get(key, -1):
            self.phase_peaks[key] = self.total
        sp = self.step_peak.get(step)
        if sp is None or self.total > sp["bytes"]:
            self.step_peak[step] = {
                "bytes": self.total,
                "phase": phase,
                "op": where,
                "live": [dict(i) for i in self.live.values()],
            }

    # -- public
    def track(self, t: torch.Tensor, name: str):
        for st in _storages(t):
            info = self._add(st, t, "external", name)
            if info is None:
                tid = self.seen[st]
                if tid in self.live and name not in self.live[tid]["names"]:
                    self.live[tid]["names"].append(name)
        self._update_peaks("external")

    def name(self, t: torch.Tensor, name: str):
        """Attach a name (e.g. '0.weight.grad') to the storage of a tracked tensor."""
        for st in _storages(t):
            tid = self.seen.get(st)
            if tid is not None and tid in self.live and name not in self.live[tid]["names"]:
                self.live[tid]["names"].append(name)

    def set_phase(self, step: int, phase: str):
        self.phase = (step, phase)
        self.phase_peaks[(step, phase)] = max(self.phase_peaks.get((step, phase), -1), self.total)
        if self.record:
            self.events.append(("phase", self.seq, self.phase, None, self.total))

    def __enter__(self):
        self.mods.__enter__()
        return super().__enter__()

    def __exit__(self, *args):
        super().__exit__(*args)
        self.mods.__exit__(*args)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.seq += 1
        op = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
        flat, _ = tree_flatten(out)
        made = []
        for t in flat:
            if isinstance(t, torch.Tensor):
                for st in _storages(t):
                    info = self._add(st, t, op)
                    if info is not None:
                        made.append(info)
        if self.record:
            self.events.append(("op", self.seq, self.phase, {"op": op, "made": [m["id"] for m in made]}, self.total))
        self._update_peaks(op)
        return out


def describe(info: dict) -> str:
    names = ("=" + ",".join(info["names"])) if info["names"] else ""
    mod = f" in {info['module']}" if info["module"] else ""
    shape = "x".join(str(d) for d in info["shape"]) if info["shape"] else "scalar"
    return f"t{info['id']} {info['dtype']}[{shape}] {info['bytes']} B from {info['origin']}{mod}{names}"


# --------------------------------------------------------------------------------------------
# Running one setup.
# --------------------------------------------------------------------------------------------


def _cat_name(k) -> str:
    return k.name if hasattr(k, "name") else str(k)


def _snapshot(mt: MemTracker) -> tuple[int, dict]:
    snap = mt.get_tracker_snapshot("peak")
    if not snap:
        return 0, {}
    if len(snap) != 1 and sum(getattr(d, "type", str(d)) != "cpu" for d in snap) != 1:
        raise RuntimeError(f"expected one device in MemTracker's snapshot, got {list(snap)}")
    if len(snap) > 1:
        # On CUDA, non-fused optimizers keep small tensors on the CPU (Adam's `step`): they are
        # not GPU memory, so the GPU's entry is the figure.
        gpu = {d: v for d, v in snap.items() if getattr(d, "type", str(d)) != "cpu"}
        if len(gpu) == 1:
            snap = gpu
    (dev_snap,) = snap.values()
    cats = {_cat_name(k): int(v) for k, v in dev_snap.items() if k != "Total"}
    return int(dev_snap["Total"]), cats


def name_state(ledger: Ledger, model: nn.Module, optimizer: torch.optim.Optimizer):
    for pname, p in model.named_parameters():
        if p.grad is not None:
            ledger.name(p.grad, f"{pname}.grad")
        for sname, v in optimizer.state.get(p, {}).items():
            if isinstance(v, torch.Tensor):
                ledger.name(v, f"{pname}.{sname}")


def run_setup(s: dict, backend: str, record: bool = False) -> dict:
    """Two steps of the loop for setup ``s``; returns its figures."""
    device = {"fake": "cpu", "real-cpu": "cpu", "cuda": "cuda"}[backend]
    device_type = "cuda" if backend == "cuda" else "cpu"
    gc.collect()
    if backend == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        # Each setup takes its own cuBLAS workspace on its first matrix product, as a fresh
        # process does.
        if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
            torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        cuda_base = torch.cuda.memory_allocated()

    if backend == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake = FakeTensorMode()
    else:
        fake = contextlib.nullcontext()

    ledger = Ledger(record_events=record)
    cuda_phase = {}
    cuda_step = {}
    cuda_state = {"key": None}

    def mark(step, phase):
        ledger.set_phase(step, phase)
        if backend == "cuda":
            prev = cuda_state["key"]
            if prev is not None:
                cuda_phase[prev] = max(cuda_phase.get(prev, 0), torch.cuda.max_memory_allocated() - cuda_base)
                pstep = prev[0]
                cuda_step[pstep] = max(cuda_step.get(pstep, 0), cuda_phase[prev])
            torch.cuda.reset_peak_memory_stats()
            cuda_state["key"] = (step, phase)

    with fake:
        # The model and optimizer are built before the trackers start counting ops; the
        # parameters are registered with both explicitly (MemTracker.track_external).
        model = LessonNet(s, device)
        optimizer = make_optimizer(model, s["optimizer"])
        scaler = None
        if s["strategy"]["grad_scaler"]:
            scaler_cls = NoItemGradScaler if backend == "fake" else torch.amp.GradScaler
            scaler = scaler_cls(device_type)
        mt = MemTracker()
        mt.track_external(model, optimizer)
        for pname, p in model.named_parameters():
            ledger.track(p, pname)
        step_figures = []

        ledger.set_phase(0, "data")
        with ledger:
            with mt:
                # The batch, on the device: x float32, y int64 (cross_entropy's targets).
                if backend == "fake":
                    x = torch.randn(s["batch"], s["inputs"], device=device)
                    y = torch.randint(0, s["classes"], (s["batch"],), device=device)
                else:
                    gen = torch.Generator(device=device).manual_seed(0)
                    x = torch.randn(s["batch"], s["inputs"], device=device, generator=gen)
                    y = torch.randint(0, s["classes"], (s["batch"],), device=device, generator=gen)
        ledger.name(x, "x")
        ledger.name(y, "y")
        data_total = sum(st.nbytes() for t in (x, y) for st in _storages(t))

        # One MemTracker context per step: entering it starts a new peak from the current
        # memory, so each step's peak is its own; reset_mod_stats() lets the model run again.
        def step_mark(step, phase):
            if phase == "zero_grad":
                mt.reset_mod_stats()
                mt.__enter__()
            if phase == "forward":
                # Each forward (one per micro-batch with accumulation) is a new "iteration" to
                # MemTracker's module statistics (which this script does not use).
                mt.reset_mod_stats()
            mark(step, phase)
            if phase == "end":
                mt.__exit__(None, None, None)
                total, cats = _snapshot(mt)
                step_figures.append({"step": step, "peak_bytes": total, "categories": cats,
                                     "end_bytes": ledger.total})
            if phase in ("backward", "optimizer", "end"):
                name_state(ledger, model, optimizer)

        t0 = time.perf_counter()
        with ledger:
            last = train(model, optimizer, x, y, s, device_type, step_mark, scaler)
        elapsed = time.perf_counter() - t0
        name_state(ledger, model, optimizer)
        end_bytes = ledger.total
        ledger.record = False  # what dies after the run is not part of the trace
        del last

    # Overall peak: the larger step (the first one on a tie).
    best = max(step_figures, key=lambda f: (f["peak_bytes"], -f["step"]))
    result = {
        "peak_bytes": best["peak_bytes"],
        "categories": best["categories"],
        "peak_step": best["step"],
        "step_peaks": [],
        "data_bytes": data_total,
        "end_bytes": end_bytes,
    }
    for f in step_figures:
        lp = ledger.step_peak[f["step"]]
        phases = {ph: ledger.phase_peaks[(f["step"], ph)]
                  for ph in ("zero_grad", "forward", "backward", "optimizer")
                  if (f["step"], ph) in ledger.phase_peaks}
        entry = dict(f)
        entry["phase"] = lp["phase"]
        entry["op"] = lp["op"]
        entry["phase_peaks"] = phases
        if lp["bytes"] != f["peak_bytes"]:
            entry["ledger_peak_bytes"] = lp["bytes"]
        result["step_peaks"].append(entry)
    if backend == "cuda":
        result["max_memory_allocated"] = max(cuda_step.values())
        result["memtracker_peak_bytes"] = result["peak_bytes"]
        for entry in result["step_peaks"]:
            entry["max_memory_allocated"] = cuda_step[entry["step"]]
            entry["phase_max_memory_allocated"] = {
                ph: cuda_phase[(entry["step"], ph)]
                for ph in ("zero_grad", "forward", "backward", "optimizer")
                if (entry["step"], ph) in cuda_phase}
        result["peak_bytes"] = result["max_memory_allocated"]
    result["_ledger"] = ledger
    result["_seconds"] = elapsed
    del model, optimizer, x, y, mt
    return result


# --------------------------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------------------------

METHOD = {
    "fake": (
        "Each setup builds the network inputs -> layers x [nn.Linear(width), nn.ReLU()] -> "
        "nn.Linear(classes) (float32, one nn.Sequential), its optimizer and its batch (x float32 "
        "batch x inputs, y int64 batch) inside torch._subclasses.fake_tensor.FakeTensorMode on "
        "the CPU device (shapes, no storage), and runs two steps of the lesson's loop "
        "[optimizer.zero_grad(); y_pred = model(x); loss = F.cross_entropy(y_pred, y); "
        "loss.backward(); optimizer.step()] with PyTorch 2.x's CUDA defaults (zero_grad sets "
        "grads to None; optimizers with foreach=True). x and y are created once before step 1 "
        "and stay alive; y_pred and loss are loop variables, so the previous step's are alive "
        "until the next step rebinds them. torch.distributed._tools.mem_tracker.MemTracker "
        "counts the raw bytes (no 512 B rounding: the tensors are on the CPU device) of every "
        "tensor storage alive after each op, with the parameters and optimizer registered by "
        "track_external. peak_bytes is the largest Total over both steps; categories is "
        "MemTracker's breakdown at that moment (PARAM parameters, BUFFER module buffers, GRAD "
        ".grad tensors, ACT tensors made in the forward pass (the batch too, and activation "
        "checkpointing's recomputation), TEMP tensors made in the backward pass that are not "
        "grads, OPT tensors made in optimizer.step() (state and foreach temporaries), OTH "
        "others). step_peaks[i] is step i+1 alone (MemTracker re-entered per step: its peak "
        "restarts from the memory alive when the step begins): step 1 creates the grads and "
        "the optimizer state lazily, step 2 is the steady state. phase/op say where a step's "
        "peak is (the phase of the loop and the aten op just run); phase_peaks are the peaks "
        "of each phase of that step, from a dispatch-mode ledger whose totals equal "
        "MemTracker's. data_bytes: x and y; end_bytes: memory alive after step 2 (parameters, "
        "grads, optimizer state, x, y, the last y_pred and loss). With accumulation, batch is "
        "the rows of one optimizer step, split into k consecutive row slices (views of x and "
        "y, no copies) and the loss of each is divided by k. Not counted: anything outside "
        "tensor storages (cuBLAS/cuBLASLt workspaces, kernels' internal scratch, the caching "
        "allocator's 512 B rounding and cached-but-free blocks)."
    ),
    "cuda": (
        "Same setups and loop as the fake backend, on real CUDA tensors (autocast with "
        "device_type 'cuda'; GradScaler('cuda'); F.cross_entropy for both autocast_loss values). "
        "peak_bytes is torch.cuda.max_memory_allocated() over the two steps, less what was "
        "allocated before the setup began (the cuBLAS workspaces are cleared before each setup, "
        "so each setup's peak holds the workspace its first matrix product takes, as in a fresh "
        "process). memtracker_peak_bytes is MemTracker's Total on the same run (each storage "
        "rounded up to 512 B on CUDA, no workspaces)."
    ),
    "real-cpu": (
        "Same setups and loop as the fake backend, on real CPU tensors, measured with MemTracker "
        "(raw bytes): a self-check that FakeTensorMode does not change the figures."
    ),
}


def public(s: dict, r: dict) -> dict:
    out = {k: s[k] for k in ("name", "inputs", "width", "layers", "classes", "batch", "optimizer", "strategy")}
    for k in ("peak_bytes", "memtracker_peak_bytes", "max_memory_allocated", "categories", "peak_step",
              "step_peaks", "data_bytes", "end_bytes"):
        if k in r:
            out[k] = r[k]
    return out


STATE_KINDS = ("grad", "exp_avg", "exp_avg_sq", "momentum_buffer", "step")


def _kind(info: dict) -> str | None:
    """'parameter', 'grad', 'exp_avg', ... for a named parameter-sized tensor, else None."""
    for name in info["names"]:
        last = name.rsplit(".", 1)[-1]
        if last in STATE_KINDS:
            return last
        if last in ("weight", "bias"):
            return "parameter"
    return None


def write_live(path: str, rows: list[tuple[dict, dict]]):
    with open(path, "w") as f:
        f.write("# Tensors alive at each step's peak, per setup (raw bytes; step_peaks.py --live).\n")
        f.write("# Parameters, grads and optimizer state are summed per kind, with the parameters they\n")
        f.write("# belong to (module index in the nn.Sequential); every other tensor is listed:\n")
        f.write("# tN dtype[shape] bytes, the op that made it, the module running then (bw: in its\n")
        f.write("# backward), =x / =y for the batch. Tensor numbers count from the start of the setup.\n")
        for s, r in rows:
            led = r["_ledger"]
            f.write(f"\n== {s['name']}\n")
            for entry in r["step_peaks"]:
                lp = led.step_peak[entry["step"]]
                f.write(f"step {entry['step']}: peak {lp['bytes']} B in {lp['phase']} after {lp['op']}\n")
                groups: dict[str, list] = {}
                others = []
                for info in sorted(lp["live"], key=lambda i: i["id"]):
                    k = _kind(info)
                    if k is None:
                        others.append(info)
                    else:
                        groups.setdefault(k, []).append(info)
                for k in ("parameter",) + STATE_KINDS:
                    if k in groups:
                        g = groups[k]
                        owners = ", ".join(i["names"][0].rsplit(".", 1)[0] if k != "parameter"
                                           else i["names"][0] for i in g)
                        f.write(f"    {k}: {len(g)} tensors, {sum(i['bytes'] for i in g)} B ({owners})\n")
                for info in others:
                    f.write(f"    {describe(info)}\n")


def write_trace(path: str, backend: str, setups: list[dict]):
    with open(path, "w") as f:
        f.write("# Op-by-op memory trace of two steps of the lesson's loop, as PyTorch "
                f"{torch.__version__} runs it\n")
        f.write("# (step_peaks.py --trace, backend %s).\n" % backend)
        f.write("# An op line (aten, as the dispatcher sees it) is followed by '+' for each storage it\n")
        f.write("# created: tN dtype[shape] bytes, the op, the module running (bw: its backward), and\n")
        f.write("# =names for parameters, grads, optimizer state, x and y. '-' is a storage freed (a\n")
        f.write("# weakref finalizer on the storage: the moment PyTorch dropped its last reference),\n")
        f.write("# listed where it happened, e.g. right after the autograd node that released it\n")
        f.write("# (frees between the same two lines, with no allocation between them, are listed\n")
        f.write("# by tensor number).\n")
        f.write("# 'live' is the total raw bytes of live storages (no 512 B rounding). Ops that create\n")
        f.write("# no storage are left out (views, t, detach, ...) except in-place ones (name ending\n")
        f.write("# in _), which update tensors without allocating.\n")
        for s in setups:
            r = run_setup(s, backend, record=True)
            led = r["_ledger"]
            f.write(f"\n==== {s['name']}\n  optimizer {json.dumps(s['optimizer'])}\n"
                    f"  strategy {json.dumps(s['strategy'])}\n")
            f.write("-- parameters (made before the loop)\n")
            last_phase = None
            pending = []  # the storages an op made are listed under the op's line
            frees = []  # frees with no op between them, listed by tensor number

            def flush_frees():
                if frees:
                    live = frees[0][1] + frees[0][0]["bytes"]
                    for info, _ in sorted(frees, key=lambda fr: fr[0]["id"]):
                        live -= info["bytes"]
                        f.write(f"      - t{info['id']} {info['bytes']} B ({info['origin']}"
                                f"{'=' + ','.join(info['names']) if info['names'] else ''})   live {live}\n")
                    frees.clear()

            for kind, seq, phase, info, total in led.events:
                shown = kind == "phase" or kind == "alloc" or kind == "op" and (
                    pending or info["op"].endswith("_") and not info["op"].startswith("_record"))
                if shown:
                    # Between two shown lines nothing is allocated, so the order of the frees
                    # there changes no total that matters.
                    flush_frees()
                if kind == "phase":
                    if phase != last_phase:
                        f.write(f"-- step {phase[0]} {phase[1]}   (live {total})\n"
                                if phase[0] else f"-- the batch   (live {total})\n")
                        last_phase = phase
                elif kind == "op":
                    op = info["op"]
                    if pending or op.endswith("_") and not op.startswith("_record"):
                        f.write(f"  {op}\n")
                        for line in pending:
                            f.write(line)
                    pending = []
                elif kind == "alloc":
                    line = f"      + {describe(info)}   live {total}\n"
                    if info["origin"] == "external":
                        f.write(line)
                    else:
                        pending.append(line)
                elif kind == "free":
                    frees.append((info, total))
            flush_frees()
            for entry in r["step_peaks"]:
                lp = led.step_peak[entry["step"]]
                f.write(f"step {entry['step']} peak: {lp['bytes']} B in {lp['phase']} after {lp['op']} "
                        f"(MemTracker {entry['peak_bytes']} B, {entry['categories']}); alive then:\n")
                for info in sorted(lp["live"], key=lambda i: i["id"]):
                    f.write(f"    {describe(info)}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["auto", "fake", "cuda", "real-cpu"], default="auto",
                    help="auto: cuda when torch.cuda.is_available(), else fake")
    ap.add_argument("--out", help="JSON to write (default: the committed fixture for fake; "
                    "reference/pytorch/cuda_step_peaks.json for cuda; nothing for real-cpu)")
    ap.add_argument("--only", action="append", default=[], help="run only setups whose name contains this")
    ap.add_argument("--max-bytes", type=float, default=None,
                    help="skip setups whose fake peak (from the fixture run) would exceed this many bytes")
    ap.add_argument("--live", help="also write the tensors alive at each step's peak to this file")
    ap.add_argument("--trace", help="write the op-by-op trace of two small setups (SGD, Adam) to this "
                    "file and exit")
    ap.add_argument("--trace-strategies", help="write the op-by-op trace of one small setup per "
                    "strategy to this file and exit")
    ap.add_argument("--trace-lesson-card", help="write the op-by-op trace of the lesson's card's "
                    "boundary setups (PyTorch 1.12's defaults) to this file and exit")
    ap.add_argument("--compare", help="compare peaks with this JSON (e.g. the fake fixture) and report")
    ap.add_argument("--history", metavar="DIR",
                    help="cuda: record each setup under _record_memory_history(stacks='all', C++ "
                         "frames included) and dump its snapshot to DIR/NAME.pickle (NAME with / "
                         "as _): the frames name what the allocator served that no tensor is")
    args = ap.parse_args(argv)

    backend = args.backend
    if backend == "auto":
        backend = "cuda" if torch.cuda.is_available() else "fake"
    if backend == "cuda" and not torch.cuda.is_available():
        ap.error("--backend cuda needs torch.cuda.is_available()")

    if args.trace or args.trace_strategies or args.trace_lesson_card:
        for path, group in ((args.trace, TRACE_SETUPS), (args.trace_strategies, TRACE_STRATEGY_SETUPS),
                            (args.trace_lesson_card, TRACE_LESSON_CARD_SETUPS)):
            if path:
                write_trace(path, backend, group)
                print(f"wrote {path}")
        return 0

    setups = make_setups()
    if args.only:
        setups = [s for s in setups if any(o in s["name"] for o in args.only)]
    if args.max_bytes is not None:
        setups = [s for s in setups if rough_bytes(s) <= args.max_bytes]

    here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
    out_path = args.out
    if out_path is None and not args.only and args.max_bytes is None:
        out_path = {
            "fake": f"{here}/../../crates/gpumem/tests/fixtures/pytorch_step_peaks.json",
            "cuda": f"{here}/cuda_step_peaks.json",
        }.get(backend)

    t_all = time.perf_counter()
    rows = []
    mismatches = []
    errors = []
    for s in setups:
        t0 = time.perf_counter()
        history = args.history if backend == "cuda" else None
        if history:
            os.makedirs(history, exist_ok=True)
            torch.cuda.memory._record_memory_history("all", context="all", stacks="all",
                                                     max_entries=200_000)
        try:
            r = run_setup(s, backend)
            if history:
                torch.cuda.memory._dump_snapshot(
                    os.path.join(history, s["name"].replace("/", "_") + ".pickle"))
        except Exception as e:  # noqa: BLE001 - on a GPU machine, one setup must not lose the rest
            if backend != "cuda":
                raise
            import traceback

            errors.append({"name": s["name"], "error": traceback.format_exc()})
            print(f"{s['name']:<58} FAILED: {e!r}", flush=True)
            gc.collect()
            torch.cuda.empty_cache()
            continue
        finally:
            if history:
                torch.cuda.memory._record_memory_history(None)
        rows.append((s, r))
        for e in r["step_peaks"]:
            if "ledger_peak_bytes" in e and backend != "cuda":
                mismatches.append((s["name"], e["step"], e["peak_bytes"], e["ledger_peak_bytes"]))
        extra = f"  max_memory_allocated-MemTracker {r['max_memory_allocated'] - r['memtracker_peak_bytes']:+,}" \
            if backend == "cuda" else ""
        print(f"{s['name']:<58} {r['peak_bytes']:>16,} B  step peaks "
              f"{[e['peak_bytes'] for e in r['step_peaks']]} in "
              f"{[e['phase'] for e in r['step_peaks']]}  {time.perf_counter() - t0:.2f}s{extra}", flush=True)
    seconds = time.perf_counter() - t_all

    if mismatches:
        print("ledger and MemTracker disagree:", mismatches, file=sys.stderr)

    if args.live:
        write_live(args.live, rows)
        print(f"wrote {args.live}")

    if args.compare:
        with open(args.compare) as f:
            ref = {r["name"]: r for r in json.load(f)["setups"]}
        worst = (0.0, None)
        for s, r in rows:
            if s["name"] in ref:
                a, b = r["peak_bytes"], ref[s["name"]]["peak_bytes"]
                d = (a - b) / b
                steps = [(e["peak_bytes"], f["peak_bytes"]) for e, f in
                         zip(r["step_peaks"], ref[s["name"]]["step_peaks"])]
                same_steps = all(p == q for p, q in steps)
                if abs(d) >= worst[0]:
                    worst = (abs(d), s["name"])
                print(f"compare {s['name']:<58} {a:>16,} vs {b:>16,}  {d:+.4%}"
                      f"  step peaks {'equal' if same_steps else steps}")
        print(f"worst relative difference {worst[0]:.4%} ({worst[1]})")

    if out_path:
        doc = {
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "command": "python " + " ".join(shlex.quote(a) for a in (["reference/pytorch/step_peaks.py"]
                                                                    + list(argv if argv is not None else sys.argv[1:]))),
            "created": datetime.date.today().isoformat(),
            "backend": backend,
            "method": METHOD[backend],
            "steps": STEPS,
            "setups": [public(s, r) for s, r in rows],
        }
        if backend == "cuda":
            doc["device"] = torch.cuda.get_device_name()
            doc["errors"] = errors
            # The card, driver, CUDA and CUBLAS_WORKSPACE_CONFIG & co. (cuda_env.py beside this).
            from cuda_env import environment

            doc["environment"] = environment()
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {out_path} ({len(rows)} setups, {seconds:.1f} s)")
    else:
        print(f"{len(rows)} setups, {seconds:.1f} s")
    return 1 if mismatches or errors else 0


def rough_bytes(s: dict) -> int:
    """An upper-bound-ish guess of a setup's peak, to keep --backend real-cpu to small setups."""
    w, l, b = s["width"], s["layers"], s["batch"]
    params = (s["inputs"] * w + w + (l - 1) * (w * w + w) + w * s["classes"] + s["classes"]) * 4
    return 8 * params + 4 * b * w * (l + 3) + 16 * b * (s["inputs"] + s["classes"])


if __name__ == "__main__":
    sys.exit(main())
