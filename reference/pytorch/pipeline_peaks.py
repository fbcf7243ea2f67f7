#!/usr/bin/env python3
"""PyTorch's per-stage memory figures for pipeline-parallel training.

Stage r of N (N = 2, 4) runs TWO steps of the lesson's loop with ``torch.distributed.pipelining``:
the network ``inputs -> layers x [Linear(width) + ReLU] -> Linear(classes)`` (float32) is split
by its Linear layers into N contiguous stages (as even as possible, the first stages one Linear
more), each stage an ``nn.Sequential`` in a ``PipelineStage``; the schedule is ``ScheduleGPipe``
or ``Schedule1F1B`` over m micro-batches, with ``loss_fn=F.cross_entropy`` on the last stage.
The loop: ``optimizer.zero_grad()`` (set_to_none); ``out = schedule.step(...)`` (rank 0 gives
the batch, the last rank the targets and a ``losses`` list); ``optimizer.step()``. Optimizers
with foreach=True, as on CUDA.

One process plays one rank on PyTorch's fake process group
(``torch.testing._internal.distributed.fake_pg``): its sends and receives move no data, so the
receive buffers keep whatever ``torch.empty`` gave them (the values, not the memory, are
meaningless). The fake group cannot infer the stages' shapes by exchanging them
("requires dynamic shape inference, which is not supported with a fake process group"), so each
stage is given its static metadata: ``input_args``/``output_args`` and ``input_grads``/
``output_grads`` as meta tensors of one micro-batch. Memory: ``MemTracker`` and the ``Ledger``
of step_peaks.py, whose peaks are checked against each other on every setup.

Uses the standard library and torch only, and installs nothing. See README.md beside it.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import gc
import os
import platform
import shlex
import sys
import time
import warnings

warnings.filterwarnings("ignore")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.distributed._tools.mod_tracker as mod_tracker  # noqa: E402
from torch.distributed._tools.mem_tracker import MemTracker  # noqa: E402
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe  # noqa: E402
from torch.distributed.pipelining._recv_buffers import _RecvInfo  # noqa: E402

from parallel_peaks import _live_entry, dumps, use_world  # noqa: E402
from step_peaks import Ledger, LessonNet, _snapshot, adam, describe, make_optimizer, setup, sgd  # noqa: E402

STEPS = 2
FIXTURE = "crates/gpumem/tests/fixtures/pytorch_pipeline_peaks.json"
SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
TOP_PHASES = ("zero_grad", "schedule", "optimizer")


def split_even(total: int, parts: int) -> list[int]:
    """Sizes of ``parts`` contiguous pieces of ``total``: the first total % parts one larger."""
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


def pipe_setup(schedule: str, stages: int, width: int, layers: int, batch: int, m: int,
               optimizer: dict, rank: int) -> dict:
    s = setup(width, layers, batch, optimizer)
    s.update(scheme=f"pipeline_{schedule}", schedule=schedule, world_size=stages, rank=rank,
             micro_batches=m)
    sizes = split_even(layers + 1, stages)
    s["stage_linears"] = [sum(sizes[:rank]), sum(sizes[:rank + 1])]
    s["micro_batch_rows"] = split_even(batch, m)
    s["name"] = (f"{schedule}/n{stages}/m{m}/{s['inputs']}-{width}x{layers}-{s['classes']}"
                 f"/b{batch}/{optimizer['name']}/rank{rank}")
    return s


def make_setups() -> list[dict]:
    """Every rank of N = 2 and 4 stages, m = N and 2N, both schedules, SGD and Adam, a few
    networks (at least N Linears)."""
    nets = [(64, 3, 16, adam()), (64, 3, 16, sgd()), (256, 3, 4096, sgd()), (1024, 7, 64, adam())]
    out = []
    for sched in SCHEDULES:
        for n in (2, 4):
            for m in (n, 2 * n):
                for (w, layers, b, o) in nets:
                    out += [pipe_setup(sched, n, w, layers, b, m, o, r) for r in range(n)]
    names = [s["name"] for s in out]
    assert len(names) == len(set(names)), "setup names must be unique"
    return out


TRACE_SETUPS = [pipe_setup(sched, 2, 64, 3, 16, 4, adam(), r) for sched in SCHEDULES for r in (0, 1)]


# ModTracker (inside MemTracker and the Ledger) hangs a multi-grad hook on each module's inputs
# and outputs and never removes it; on a received activation (a leaf that requires grad) the
# hook's closure keeps the buffer alive for ever (measured: 4 more 4x64 buffers per step with
# ModTracker, none without). Each hook is therefore removed once its micro-batch's backward
# action is over, which leaves what PyTorch itself keeps.
HOOKS: dict = {}  # micro-batch (None: outside a forward action) -> ModTracker's hook handles
HOOK_CHUNK: list = [None]
_register_multi_grad_hook = mod_tracker.register_multi_grad_hook


def _register_and_keep(*args, **kwargs):
    handle = _register_multi_grad_hook(*args, **kwargs)
    HOOKS.setdefault(HOOK_CHUNK[0], []).append(handle)
    return handle


mod_tracker.register_multi_grad_hook = _register_and_keep


def remove_hooks(chunk) -> None:
    for handle in HOOKS.pop(chunk, []):
        handle.remove()


RUNNING: list = [None]  # the Run whose stage is receiving
_allocate_buffer = _RecvInfo.allocate_buffer


def _allocate_and_name(info, device):
    """_RecvInfo.allocate_buffer, then name the buffer in the running stage's ledger: the stage
    takes it out of its records before the actions end, so it cannot be named later."""
    buf = _allocate_buffer(info, device)
    run = RUNNING[0]
    if run is not None:
        st = run.stage
        for kind, infos in (("activation", st.args_recv_info), ("gradient", st.grad_recv_info)):
            for mb, recvs in infos.items():
                if any(r is info for r in (recvs if isinstance(recvs, tuple) else ())):
                    run.ledger.name(buf, f"recv {kind} mb{mb}")
    return buf


_RecvInfo.allocate_buffer = _allocate_and_name


class PipeLedger(Ledger):
    """step_peaks.Ledger that also notes, at each step's peak, the micro-batches in flight on
    this stage: run forward and not yet through their backward action."""

    def __init__(self, record_events: bool = False):
        super().__init__(record_events)
        self.in_flight: set[int] = set()

    def _update_peaks(self, where: str):
        before = self.step_peak.get(self.phase[0])
        super()._update_peaks(where)
        peak = self.step_peak[self.phase[0]]
        if peak is not before:
            peak["in_flight"] = sorted(self.in_flight)


class Run:
    """One stage's objects: its layers, PipelineStage, schedule, optimizer, tracker, ledger."""

    def __init__(self, s: dict, record: bool):
        self.s = s
        self.rank, self.n = s["rank"], s["world_size"]
        self.first, self.last = self.rank == 0, self.rank == self.n - 1
        self.ledger = PipeLedger(record_events=record)
        self.step = 0

    def build(self):
        s, led = self.s, self.ledger
        torch.manual_seed(0)
        whole = LessonNet(s, "cpu")  # the whole network, initialised as on one card; not counted
        a, b = s["stage_linears"]
        mods = list(whole)[2 * a: 2 * b]  # Linear, ReLU pairs; the last stage ends on its Linear
        self.tracker = MemTracker()
        led.set_phase(0, "construct")
        with led, self.tracker:
            self.sub = copy.deepcopy(nn.Sequential(*mods))
            del whole, mods
            rows = s["micro_batch_rows"][0]
            d_in = s["inputs"] if self.first else s["width"]
            d_out = s["classes"] if self.last else s["width"]
            # A received activation needs its gradient (sent back to the previous stage); the
            # batch on rank 0 does not.
            meta = {"input_args": torch.empty(rows, d_in, device="meta").requires_grad_(not self.first),
                    "output_args": torch.empty(rows, d_out, device="meta")}
            if not self.last:
                meta["output_grads"] = torch.empty(rows, d_out, device="meta")
            if not self.first:
                meta["input_grads"] = torch.empty(rows, d_in, device="meta")
            self.stage = PipelineStage(self.sub, self.rank, self.n, torch.device("cpu"), **meta)
            self.schedule = SCHEDULES[s["schedule"]](self.stage, n_microbatches=s["micro_batches"],
                                                     loss_fn=F.cross_entropy)
            self.optimizer = make_optimizer(self.sub, s["optimizer"])
            gen = torch.Generator().manual_seed(0)
            self.x = torch.randn(s["batch"], s["inputs"], generator=gen) if self.first else None
            self.y = torch.randint(0, s["classes"], (s["batch"],), generator=gen) if self.last else None
        self._wrap_actions()
        self.label()
        self.construct_peak = led.step_peak[0]["bytes"]

    def _wrap_actions(self):
        """Mark each forward / backward action of the schedule as a phase of the ledger."""
        stage, led = self.stage, self.ledger
        fwd, bwd = stage.forward_one_chunk, stage.backward_one_chunk

        def forward_one_chunk(chunk, *a, **k):
            led.set_phase(self.step, f"F{chunk}")
            # MemTracker's per-module stats refuse a module run twice in one step; the totals
            # it reports are kept across this reset.
            self.tracker.reset_mod_stats()
            led.in_flight.add(chunk)
            HOOK_CHUNK[0] = chunk
            try:
                return fwd(chunk, *a, **k)
            finally:
                HOOK_CHUNK[0] = None

        def backward_one_chunk(chunk, *a, **k):
            led.set_phase(self.step, f"B{chunk}")
            out = bwd(chunk, *a, **k)
            led.in_flight.discard(chunk)
            remove_hooks(chunk)
            return out

        stage.forward_one_chunk, stage.backward_one_chunk = forward_one_chunk, backward_one_chunk

    def label(self):
        """Name parameters, .grad, optimizer state, batch, receive buffers, kept outputs."""
        led, st = self.ledger, self.stage
        for pname, p in self.sub.named_parameters():
            led.name(p, pname)
            if p.grad is not None:
                led.name(p.grad, f"{pname}.grad")
            for k, v in self.optimizer.state.get(p, {}).items():
                if isinstance(v, torch.Tensor):
                    led.name(v, f"{pname}.{k}")
        for t, nm in ((self.x, "x"), (self.y, "y")):
            if t is not None:
                led.name(t, nm)
        for kind, infos in (("activation", st.args_recv_info), ("gradient", st.grad_recv_info)):
            for mb, recvs in infos.items():
                for r in recvs if isinstance(recvs, tuple) else ():
                    if getattr(r, "buffer", None) is not None:
                        led.name(r.buffer, f"recv {kind} mb{mb}")
        for i, t in enumerate(st.output_chunks):
            if isinstance(t, torch.Tensor):
                led.name(t, f"output chunk mb{i}")

    def train(self) -> list[dict]:
        figures, led, tr = [], self.ledger, self.tracker
        out = losses = None  # the loop's variables, alive into the next step
        for step in range(1, STEPS + 1):
            self.step = step
            tr.reset_mod_stats()
            tr.__enter__()
            for phase in TOP_PHASES:
                led.set_phase(step, phase)
                with led:
                    if phase == "zero_grad":
                        self.optimizer.zero_grad()
                    elif phase == "schedule":
                        out, losses = self._schedule_step()
                    else:
                        self.optimizer.step()
                self._label_step(out, losses)
            led.set_phase(step, "end")
            tr.__exit__(None, None, None)
            for chunk in list(HOOKS):
                remove_hooks(chunk)
            total, cats = _snapshot(tr)
            lp = led.step_peak[step]
            figures.append({"step": step, "peak_bytes": total, "categories": cats, "end_bytes": led.total,
                            "phase": lp["phase"], "op": lp["op"], "ledger_peak_bytes": lp["bytes"],
                            "phase_peaks": {ph: v for (st, ph), v in led.phase_peaks.items() if st == step}})
        self.kept = (out, losses)
        return figures

    def _schedule_step(self):
        RUNNING[0] = self
        try:
            return self._schedule_call()
        finally:
            RUNNING[0] = None

    def _schedule_call(self):
        if self.first:
            return self.schedule.step(self.x), None
        if self.last:
            losses: list = []
            return self.schedule.step(target=self.y, losses=losses), losses
        return self.schedule.step(), None

    def _label_step(self, out, losses):
        self.label()
        if isinstance(out, torch.Tensor):
            self.ledger.name(out, "schedule.step output (merged)")
        for i, t in enumerate(losses or []):
            self.ledger.name(t, f"loss mb{i}")


def forwards_alive(live: list[dict], step: int) -> list[int]:
    """Micro-batches whose forward pass (in ``step``) made a storage still alive."""
    return sorted({int(i["phase"][1][1:]) for i in live if i["phase"][0] == step and i["phase"][1].startswith("F")})


def run_setup(s: dict, record: bool = False) -> tuple[dict, Run]:
    gc.collect()
    use_world(s["world_size"], s["rank"])
    run = Run(s, record)
    run.build()
    figures = run.train()
    led = run.ledger
    for f in figures:
        live = led.step_peak[f["step"]]["live"]
        f["forward_micro_batches_alive_at_peak"] = forwards_alive(live, f["step"])
        f["in_flight_at_peak"] = led.step_peak[f["step"]].get("in_flight", [])
    step2 = figures[-1]
    best = max(figures, key=lambda f: (f["peak_bytes"], -f["step"]))
    for f in {id(step2): step2, id(best): best}.values():
        f["live"] = [_live_entry(i) for i in sorted(led.step_peak[f["step"]]["live"], key=lambda i: i["id"])]
    out = {k: s[k] for k in ("name", "scheme", "schedule", "world_size", "rank", "micro_batches",
                             "micro_batch_rows", "stage_linears", "inputs", "width", "layers", "classes",
                             "batch", "optimizer")}
    out.update({
        "peak_step2_bytes": step2["peak_bytes"], "categories": step2["categories"],
        "peak_run_bytes": best["peak_bytes"], "peak_run_step": best["step"],
        "construct_peak_bytes": run.construct_peak, "end_bytes": led.total,
        "parameter_bytes": sum(p.numel() * p.element_size() for p in run.sub.parameters()),
        "step_peaks": figures,
    })
    return out, run


# --------------------------------------------------------------------------------------------
# The trace.
# --------------------------------------------------------------------------------------------

TRACE_HEADER = """\
# Op-by-op memory trace of pipeline stages, as PyTorch {version} runs them
# (pipeline_peaks.py --trace; real CPU tensors on the fake process group, whose send/recv move
# no data). '-- step 0 construct' is the stage's layers, PipelineStage, schedule, optimizer and
# the batch (rank 0: x; last rank: y); then two steps: zero_grad, schedule (its actions marked
# '-- step S Fk' / 'Bk': forward / backward of micro-batch k), optimizer.
# '+' a storage created: tN dtype[shape] bytes, the op, the module, =names (parameters, .grad,
# optimizer state, x, y, 'recv activation mbK', 'recv gradient mbK', 'output chunk mbK',
# 'loss mbK', 'schedule.step output (merged)'); '-' a storage freed. 'live': raw bytes alive.
# Ops that create no storage are left out, except in-place ones (name ending in _).
"""


def write_trace(path: str, setups: list[dict]):
    with open(path, "w") as f:
        f.write(TRACE_HEADER.format(version=torch.__version__))
        for s in setups:
            row, run = run_setup(s, record=True)
            f.write(f"\n==== {s['name']}  (stage {s['rank']} of {s['world_size']}: Linears "
                    f"{s['stage_linears'][0]}..{s['stage_linears'][1] - 1}; {s['micro_batches']} micro-batches "
                    f"of {s['micro_batch_rows']} rows)\n  optimizer {s['optimizer']}\n")
            write_events(f, run.ledger)
            for fig in row["step_peaks"]:
                lp = run.ledger.step_peak[fig["step"]]
                f.write(f"step {fig['step']} peak: {lp['bytes']} B in {lp['phase']} after {lp['op']} "
                        f"(tracker {fig['peak_bytes']} B, {fig['categories']}); forward micro-batches alive: "
                        f"{fig['forward_micro_batches_alive_at_peak']}; in flight: {fig['in_flight_at_peak']}; alive then:\n")
                for info in sorted(lp["live"], key=lambda i: i["id"]):
                    f.write(f"    {describe(info)}\n")
            del run
            gc.collect()


def write_events(f, led: Ledger):
    last_phase, pending = None, []
    for kind, _seq, phase, info, total in led.events:
        if kind == "phase":
            if phase != last_phase:
                f.write(f"-- step {phase[0]} {phase[1]}   (live {total})\n")
                last_phase = phase
        elif kind == "op":
            if pending or info["op"].endswith("_"):
                f.write(f"  {info['op']}\n")
                f.writelines(pending)
            pending = []
        elif kind == "alloc":
            pending.append(f"      + {describe(info)}   live {total}\n")
        elif kind == "free":
            f.write(f"      - t{info['id']} {info['bytes']} B ({info['origin']}"
                    f"{'=' + ','.join(info['names']) if info['names'] else ''})   live {total}\n")


METHOD = (
    "Stage `rank` of world_size on PyTorch's fake process group (send/recv move no data), real "
    "float32 CPU tensors. The network inputs -> layers x [nn.Linear(width), nn.ReLU()] -> "
    "nn.Linear(classes) is split by Linear layers into world_size contiguous stages "
    "(stage_linears: [first, end) of this stage; the first stages one Linear more); the stage is "
    "an nn.Sequential of its Linear+ReLU pairs (the last ends on the output Linear) in a "
    "torch.distributed.pipelining.PipelineStage with static metadata (input_args, output_args, "
    "input_grads, output_grads: meta tensors of one micro-batch; the fake group cannot infer "
    "shapes) and schedule ScheduleGPipe or Schedule1F1B(n_microbatches=micro_batches, "
    "loss_fn=F.cross_entropy, default scale_grads=True). Two steps of: optimizer.zero_grad() "
    "(set_to_none); out = schedule.step(x) on rank 0, schedule.step(target=y, losses=losses) on "
    "the last rank, schedule.step() between; optimizer.step() (foreach=True). x (batch x inputs, "
    "float32) lives on rank 0 only, y (batch, int64) on the last rank only; out and losses stay "
    "alive into the next step. Memory: raw bytes of live tensor storages after each op, by "
    "MemTracker (everything made inside it, construction included) and a dispatch-mode ledger "
    "that agrees with it to the byte on every step of every setup. step_peaks[i].phase: where the "
    "peak falls (Fk / Bk: the forward / backward action of micro-batch k); "
    "forward_micro_batches_alive_at_peak: the micro-batches whose forward pass in that step made "
    "a storage alive at the peak (on the last stage these include its kept output chunks and "
    "losses); in_flight_at_peak: the micro-batches run forward whose backward action had not "
    "finished at the peak. live (step 2, and the run's peak step if it is step 1): every storage alive "
    "at that peak with labels ('recv activation mbK' / 'recv gradient mbK': receive buffers)."
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help=f"the JSON to write ('-': none) (default: the repository's {FIXTURE})")
    ap.add_argument("--only", action="append", default=[],
                    help="run only the setups whose name contains this (repeatable); writes nothing "
                    "unless --out is given too (default: every setup)")
    ap.add_argument("--trace", help="write the op-by-op trace of 2-64x3-2, batch 16, m=4, N=2, Adam, "
                    "both schedules, both ranks, to this file and exit (default: no trace)")
    args = ap.parse_args(argv)
    if args.trace:
        write_trace(args.trace, TRACE_SETUPS)
        print(f"wrote {args.trace}")
        return 0
    setups = make_setups()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    out_path = args.out or os.path.join(root, FIXTURE)
    if args.only:
        setups = [s for s in setups if any(o in s["name"] for o in args.only)]
        out_path = args.out or "-"
    if not setups:
        ap.error("no setup matches --only")
    rows, bad, t_all = [], [], time.perf_counter()
    for s in setups:
        row, run = run_setup(s)
        del run
        rows.append(row)
        bad += [f"{s['name']} step {f['step']}: tracker {f['peak_bytes']} ledger {f['ledger_peak_bytes']}"
                for f in row["step_peaks"] if f["peak_bytes"] != f["ledger_peak_bytes"]]
        f2 = row["step_peaks"][-1]
        print(f"{s['name']:<40} step 2 {row['peak_step2_bytes']:>12,} B  at {f2['phase']:<4}"
              f" fwd alive {f2['forward_micro_batches_alive_at_peak']} in flight {f2['in_flight_at_peak']}", flush=True)
    for line in bad:
        print("ledger and tracker disagree:", line, file=sys.stderr)
    seconds = time.perf_counter() - t_all
    if out_path != "-":
        doc = {
            "torch_version": torch.__version__, "python_version": platform.python_version(),
            "command": "python " + " ".join(shlex.quote(a) for a in ["reference/pytorch/pipeline_peaks.py"]
                                             + list(argv if argv is not None else sys.argv[1:])),
            "created": datetime.date.today().isoformat(),
            "backend": "real-cpu, fake process group", "method": METHOD, "steps": STEPS, "setups": rows,
        }
        with open(out_path, "w") as f:
            f.write(dumps(doc))
        print(f"wrote {out_path} ({len(rows)} setups, {seconds:.1f} s)")
    else:
        print(f"{len(rows)} setups, {seconds:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
