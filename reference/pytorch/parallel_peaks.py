#!/usr/bin/env python3
"""PyTorch's per-card memory figures for data-parallel and sharded training.

Rank 0 of N (N = 1, 2, 4, 8) runs TWO steps of the lesson's loop on its share of the batch
(``inputs -> layers x [Linear(width) + ReLU] -> Linear(classes)``, float32; zero_grad with
set_to_none, forward, cross_entropy, backward, step; optimizers with foreach=True, PyTorch's
choice on CUDA) under one of these schemes:

* ``ddp``: ``DistributedDataParallel`` with its defaults (bucket_cap_mb=25,
  gradient_as_bucket_view=False);
* ``ddp_view``: the same with ``gradient_as_bucket_view=True``;
* ``fsdp``: FSDP2, ``fully_shard`` on every ``nn.Linear`` and then on the whole model, with the
  default ``reshard_after_forward=True``;
* ``fsdp_no_reshard``: the same with ``reshard_after_forward=False`` everywhere (PyTorch's
  SHARD_GRAD_OP, DeepSpeed's ZeRO-2: each layer's gathered parameters stay from its forward
  pass to its backward pass);
* ``zero1``: ``DistributedDataParallel(gradient_as_bucket_view=True)`` with
  ``torch.distributed.optim.ZeroRedundancyOptimizer`` (each rank keeps the optimizer state of
  its share of the parameters).

There is no GPU and only one process: the process group is PyTorch's own fake one
(``torch.testing._internal.distributed.fake_pg``), which simulates rank 0 of N and whose
collectives move no data. The tensors are REAL CPU tensors, small enough to fit: FakeTensorMode
cannot run DDP (``_verify_params_across_processes`` reads data) nor FSDP2
(``_local_scalar_dense``). The memory is counted by
``torch.distributed._tools.mem_tracker.MemTracker`` (DDP, ZeRO) or ``FSDPMemTracker`` (FSDP),
raw bytes of every live tensor storage, and by the ``Ledger`` of step_peaks.py (every storage
made and freed, by op), whose totals are checked against the tracker's on every setup.

DDP's all-reduce: the fake process group's ``allreduce`` returns a future without a value, and
DDP's reducer then fails in backward ("expected the hook result is either a Tensor or a
TensorList found None"). So every DDP here registers ``in_memory_allreduce_hook``: it does what
the default ``allreduce_hook`` does to memory (divides the bucket in place by the world size and
hands back that same bucket through a completed future) without the communication, whose result
on one rank would be the same buffer.

The batch: each rank gets ceil(batch / N) rows, as both ``DistributedSampler`` (which pads by
repeating samples) and ``torch.tensor_split`` give rank 0 when N does not divide the batch.

Uses the standard library and torch only, and installs nothing. See README.md beside it.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shlex
import sys
import time
import warnings

warnings.filterwarnings("ignore")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._guards import active_fake_mode  # noqa: E402
from torch.distributed._tensor import DTensor  # noqa: E402
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker  # noqa: E402
from torch.distributed._tools.mem_tracker import MemTracker  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: E402

from step_peaks import (  # noqa: E402
    Ledger,
    LessonNet,
    _snapshot,
    _storages,
    adam,
    describe,
    make_optimizer,
    setup,
    sgd,
)

STEPS = 2
FIXTURE = "crates/gpumem/tests/fixtures/pytorch_parallel_peaks.json"
RANK = 0
SCHEMES = ("ddp", "ddp_view", "fsdp", "zero1")
# Schemes added later, whose setups come after the others' so that older fixtures diff as
# additions only.
LATER_SCHEMES = ("fsdp_no_reshard",)
FSDP_SCHEMES = ("fsdp", "fsdp_no_reshard")
WORLD_SIZES = (1, 2, 4, 8)
PHASES = ("zero_grad", "forward", "backward", "optimizer")

# --------------------------------------------------------------------------------------------
# Setups.
# --------------------------------------------------------------------------------------------


def rows_on_rank(batch: int, world_size: int, rank: int = RANK) -> int:
    """Rows of the global batch that ``rank`` gets: the first batch % N ranks get one more."""
    base, extra = divmod(batch, world_size)
    return base + (rank < extra)


def par_setup(scheme: str, world_size: int, width: int, layers: int, batch: int, optimizer: dict,
              rank: int = RANK) -> dict:
    s = setup(width, layers, batch, optimizer)
    s["scheme"] = scheme
    s["world_size"] = world_size
    s["rank"] = rank
    s["rows_on_rank"] = rows_on_rank(batch, world_size, rank)
    s["name"] = (f"{scheme}/n{world_size}/{s['inputs']}-{width}x{layers}-{s['classes']}"
                 f"/b{batch}/{optimizer['name']}" + (f"/rank{rank}" if rank != RANK else ""))
    return s


def make_setups() -> list[dict]:
    """About sixty setups, each picked for what it shows; every scheme on each network."""
    plan = [
        # The trace's network: every gradient in one DDP bucket; FSDP pads out_features 2 < N.
        ((64, 2, 16, adam()), WORLD_SIZES),
        # A weight over 25 MiB (2900 x 2900 x 4 B = 33.6 MB): where DDP's bucket caps fall.
        ((2900, 2, 32, adam()), WORLD_SIZES),
        # A batch large enough that activations dominate: what data parallelism divides.
        ((256, 2, 32768, sgd()), WORLD_SIZES),
        # A width that neither 2 nor 8 divides: FSDP's padded shards.
        ((1001, 2, 64, sgd()), (2, 8)),
        # Weights of 1.44 MB (600 x 600 x 4 B), over DDP's 1 MiB first bucket.
        ((600, 3, 64, sgd()), (2,)),
    ]
    out = [par_setup(scheme, n, *net) for net, sizes in plan for scheme in SCHEMES for n in sizes]
    # A batch that 4 does not divide: rank 0 gets ceil(10 / 4) = 3 rows, rank 3 gets 2.
    out += [par_setup("ddp", 4, 64, 2, 10, adam()), par_setup("ddp", 4, 64, 2, 10, adam(), rank=3)]
    # Other ranks where they differ from rank 0: ZeRO's partition gives rank 0 the largest
    # parameter; FSDP's last rank holds the padding.
    out += [par_setup("zero1", 2, 64, 2, 16, adam(), rank=1), par_setup("zero1", 2, 2900, 2, 32, adam(), rank=1),
            par_setup("fsdp", 8, 1001, 2, 64, sgd(), rank=7)]
    out += [par_setup(scheme, n, *net) for scheme in LATER_SCHEMES for net, sizes in plan for n in sizes]
    out += [par_setup("fsdp_no_reshard", 8, 1001, 2, 64, sgd(), rank=7)]
    names = [s["name"] for s in out]
    assert len(names) == len(set(names)), "setup names must be unique"
    return out


TRACE_SETUPS = [par_setup(scheme, 2, 64, 2, 16, adam()) for scheme in SCHEMES + LATER_SCHEMES]

# --------------------------------------------------------------------------------------------
# The fake process group, DDP's hook, ZeRO.
# --------------------------------------------------------------------------------------------


def use_world(world_size: int, rank: int = RANK):
    """A fake process group in which this process is ``rank`` of ``world_size``."""
    if dist.is_initialized():
        if (dist.get_world_size(), dist.get_rank()) == (world_size, rank):
            return
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=rank, world_size=world_size, store=FakeStore())


def in_memory_allreduce_hook(state: dict, bucket):  # -> Future[Tensor] (unannotated: DDP checks it)
    """The default allreduce_hook's memory without its communication: divide the bucket in
    place by the world size and return that same buffer in a completed future (the fake
    process group's all-reduce future has no value). Records each bucket's size."""
    buf = bucket.buffer()
    buf.div_(state["world_size"])
    ledger = state["ledger"]
    if ledger is not None:
        ledger.name(buf, f"bucket{bucket.index()}")
    names = [state["param_names"].get(id(p), "?") for p in bucket.parameters()]
    state["buckets"].setdefault(state["step"], {})[bucket.index()] = {
        "index": bucket.index(),
        "bytes": buf.numel() * buf.element_size(),
        "numel": buf.numel(),
        "parameters": names,
    }
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def make_zero_optimizer(params, o: dict) -> ZeroRedundancyOptimizer:
    """ZeroRedundancyOptimizer over the local optimizer that make_optimizer would build."""
    if o["name"] == "sgd":
        cls, kw = torch.optim.SGD, {"momentum": o["momentum"], "dampening": o["dampening"],
                                    "nesterov": o["nesterov"]}
    else:
        cls, kw = torch.optim.Adam, {"betas": tuple(o["betas"]), "eps": o["eps"], "amsgrad": o["amsgrad"]}
    return ZeroRedundancyOptimizer(params, optimizer_class=cls, lr=o["lr"],
                                   weight_decay=o["weight_decay"], foreach=o["foreach"], **kw)


# --------------------------------------------------------------------------------------------
# The ledger, for wrapped tensors and resized storages.
# --------------------------------------------------------------------------------------------


class DistLedger(Ledger):
    """step_peaks.Ledger that lets DTensor unwrap itself first (it then sees the local ops, as
    FSDPMemTracker does), counts storages resized in place (FSDP2 frees and re-allocates its
    unsharded parameters with ``UntypedStorage.resize_``) and names the collectives' buffers."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented
        if active_fake_mode() is not None:
            # DTensor's sharding propagation on fake tensors: no memory (FSDPMemTracker too
            # skips it).
            return func(*args, **(kwargs or {}))
        out = super().__torch_dispatch__(func, types, args, kwargs)
        name = {
            torch.ops.c10d._allgather_base_.default: ((0, "all-gather output"), (1, "all-gather input")),
            torch.ops.c10d._reduce_scatter_base_.default: ((1, "reduce-scatter input"),
                                                           (0, "reduce-scatter output")),
        }.get(func)
        for i, label in name or ():
            self.name(args[i], label)
        return out

    def _add(self, st, t, origin, name=None):
        info = super()._add(st, t, origin, name)
        if info is not None:
            info["made_bytes"] = info["bytes"]  # 'bytes' follows resize_; this stays
        return info

    def forget(self, t: torch.Tensor):
        """Stop counting ``t`` (its storage's finalizer then finds nothing to free)."""
        for st in _storages(t):
            info = self.live.pop(self.seen.get(st, -1), None)
            if info is not None:
                self.total -= info["bytes"]

    def __enter__(self):
        ACTIVE_LEDGERS.append(self)
        return super().__enter__()

    def __exit__(self, *args):
        super().__exit__(*args)
        ACTIVE_LEDGERS.remove(self)

    def resized(self, st: torch.UntypedStorage, old: int):
        tid = self.seen.get(st)
        if tid is None or tid not in self.live:
            return
        info = self.live[tid]
        new = st.nbytes()
        self.total += new - old
        info["bytes"] = new
        if self.record:
            self.events.append(("resize", self.seq, self.phase, dict(info, old=old), self.total))
        self._update_peaks("resize_")


ACTIVE_LEDGERS: list[DistLedger] = []
_ORIG_RESIZE = torch.UntypedStorage.resize_


def _resize(st: torch.UntypedStorage, size: int):
    old = st.nbytes()
    _ORIG_RESIZE(st, size)
    for ledger in ACTIVE_LEDGERS:
        ledger.resized(st, old)


# Installed before any tracker is made: MemTracker keeps the resize_ it finds at construction
# and calls it from its own, so both see every resize.
torch.UntypedStorage.resize_ = _resize


# --------------------------------------------------------------------------------------------
# Building and running one setup.
# --------------------------------------------------------------------------------------------


class Run:
    """One setup's objects: the network, its wrapper, optimizer, tracker and ledger."""

    def __init__(self, s: dict, record: bool):
        self.s = s
        self.scheme = s["scheme"]
        self.ledger = DistLedger(record_events=record)
        self.hook = {"world_size": s["world_size"], "ledger": self.ledger, "step": 0, "buckets": {},
                     "param_names": {}}
        self.names: dict[int, str] = {}  # id(parameter) -> its name in the lesson's network
        self.fsdp_groups: list = []

    # -- construction (step 0)
    def build(self):
        """Network, wrapper, optimizer and batch, each made where the ledger (and, for DDP and
        ZeRO, MemTracker) sees it. FSDPMemTracker can only be made after fully_shard, so FSDP's
        construction is seen by the ledger alone."""
        s, led = self.s, self.ledger
        led.set_phase(0, "construct")
        with led:
            self.net = LessonNet(s, "cpu")
        self.names = {id(p): n for n, p in self.net.named_parameters()}
        if self.scheme in FSDP_SCHEMES:
            reshard = self.scheme == "fsdp"
            with led:
                mesh = init_device_mesh("cpu", (s["world_size"],))
                # The mesh's rank table is a CPU tensor on every machine, never on the card.
                led.forget(mesh.mesh)
                for m in self.net:
                    if isinstance(m, nn.Linear):
                        fully_shard(m, mesh=mesh, reshard_after_forward=reshard)
                fully_shard(self.net, mesh=mesh, reshard_after_forward=reshard)
            self.names = {id(p): n for n, p in self.net.named_parameters()}
            self.model = self.net
            self.optimizer = make_optimizer(self.net, s["optimizer"])
            self.tracker = FSDPMemTracker(self.net, self.optimizer)
            self.fsdp_groups = fsdp_groups(self.net)
            with led, self.tracker:
                self._batch()
        else:
            self.tracker = MemTracker()
            self.tracker.track_external(self.net)
            self.hook["param_names"] = self.names
            with led, self.tracker:
                self.model = DDP(self.net, gradient_as_bucket_view=self.scheme != "ddp")
                self.model.register_comm_hook(self.hook, in_memory_allreduce_hook)
                if self.scheme == "zero1":
                    self.optimizer = make_zero_optimizer(self.model.parameters(), s["optimizer"])
                else:
                    self.optimizer = make_optimizer(self.model, s["optimizer"])
                self._batch()
        self.label()
        self.construct_peak = led.step_peak[0]["bytes"]

    def _batch(self):
        s = self.s
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(s["rows_on_rank"], s["inputs"], generator=gen)
        self.y = torch.randint(0, s["classes"], (s["rows_on_rank"],), generator=gen)
        self.ledger.name(self.x, "x")
        self.ledger.name(self.y, "y")

    # -- labels
    def local_optimizer(self) -> torch.optim.Optimizer:
        return self.optimizer.optim if self.scheme == "zero1" else self.optimizer

    def label(self):
        """Name every storage the ledger can attribute: parameters, .grad, optimizer state,
        FSDP's unsharded parameters."""
        led = self.ledger
        params = self.model.module.named_parameters() if isinstance(self.model, DDP) \
            else self.net.named_parameters()
        opt_state = self.local_optimizer().state
        for pname, p in params:
            led.name(p, pname)
            if p.grad is not None:
                led.name(p.grad, f"{pname}.grad")
            for k, v in opt_state.get(p, {}).items():
                if isinstance(v, torch.Tensor):
                    led.name(v, f"{pname}.{k}")
        for g in self.fsdp_groups:
            for fp, pname in zip(g.fsdp_params, g.names):
                for t in list(getattr(fp, "all_gather_outputs", []) or []):
                    led.name(t, f"{pname} (unsharded)")

    # -- the loop
    def train(self) -> list[dict]:
        figures = []
        led, tr = self.ledger, self.tracker
        y_pred = loss = None  # loop variables, alive into the next step as in the lesson
        for step in range(1, STEPS + 1):
            self.hook["step"] = step
            tr.reset_mod_stats()
            tr.__enter__()
            for phase in PHASES:
                led.set_phase(step, phase)
                with led:
                    if phase == "zero_grad":
                        self.optimizer.zero_grad()
                    elif phase == "forward":
                        tr.reset_mod_stats()
                        y_pred = self.model(self.x)
                        loss = F.cross_entropy(y_pred, self.y)
                    elif phase == "backward":
                        loss.backward()
                    else:
                        self.optimizer.step()
                self.label()
            led.set_phase(step, "end")
            tr.__exit__(None, None, None)
            total, cats = _snapshot(tr)
            lp = led.step_peak[step]
            figures.append({
                "step": step, "peak_bytes": total, "categories": cats, "end_bytes": led.total,
                "phase": lp["phase"], "op": lp["op"],
                "phase_peaks": {ph: led.phase_peaks[(step, ph)] for ph in PHASES},
                "ledger_peak_bytes": lp["bytes"],
            })
        self.last = (y_pred, loss)
        return figures


def fsdp_groups(model: nn.Module) -> list:
    """FSDP2's parameter groups in module order, each with its parameters' names."""
    names = {id(p): n for n, p in model.named_parameters()}
    groups = []
    for m in model.modules():
        state = m._get_fsdp_state() if hasattr(m, "_get_fsdp_state") else None
        g = state._fsdp_param_group if state is not None else None
        if g is not None:
            g.names = [names[id(fp.sharded_param)] for fp in g.fsdp_params]
            groups.append(g)
    return groups


# --------------------------------------------------------------------------------------------
# The op-by-op trace.
# --------------------------------------------------------------------------------------------

TRACE_HEADER = """\
# Op-by-op memory trace of rank 0 under each scheme, as PyTorch {version} runs it
# (parallel_peaks.py --trace; real CPU tensors on the fake process group).
# '-- step 0 construct' is the network, the wrapper (DDP's buckets, FSDP's shards), the
# optimizer and the batch; then two steps of the lesson's loop, phase by phase.
# An op line (aten, as the dispatcher sees it; c10d:: ops are the collectives, which move no
# data here) is followed by '+' for each storage it created: tN dtype[shape] bytes, the op, the
# module running (bw: its backward), and =names: parameters, .grad, optimizer state, x, y,
# bucketK (DDP's gradient bucket K), 'all-gather input/output', 'reduce-scatter input/output',
# '(unsharded)' (FSDP's full parameter). '-' is a storage freed (its last reference dropped);
# '~' is a storage resized in place (FSDP2 frees an unsharded parameter by resizing its storage
# to 0 B and re-allocates it the same way). 'live' is the total raw bytes of live storages.
# Ops that create no storage are left out, except in-place ones (name ending in _).
"""


def _names(info: dict) -> str:
    return "=" + ",".join(info["names"]) if info["names"] else ""


def write_trace(path: str, setups: list[dict]):
    with open(path, "w") as f:
        f.write(TRACE_HEADER.format(version=torch.__version__))
        for s in setups:
            use_world(s["world_size"], s["rank"])
            run = Run(s, record=True)
            run.build()
            figures = run.train()
            write_events(f, s, run, figures)
            del run
            gc.collect()


def write_events(f, s: dict, run: Run, figures: list[dict]):
    led = run.ledger
    f.write(f"\n==== {s['name']}  (rank {s['rank']} of {s['world_size']}, {s['rows_on_rank']} rows)\n"
            f"  optimizer {json.dumps(s['optimizer'])}\n")
    last_phase, pending, frees = None, [], []

    def flush():
        for info, total in frees:
            f.write(f"      - t{info['id']} {info['bytes']} B ({info['origin']}{_names(info)})   live {total}\n")
        frees.clear()

    for kind, _seq, phase, info, total in led.events:
        if kind in ("phase", "alloc", "resize") or kind == "op" and (pending or info["op"].endswith("_")):
            flush()
        if kind == "phase":
            if phase != last_phase:
                f.write(f"-- step {phase[0]} {phase[1]}   (live {total})\n")
                last_phase = phase
        elif kind == "op":
            op = info["op"]
            if pending or op.endswith("_"):
                f.write(f"  {op}\n")
                f.writelines(pending)
            pending = []
        elif kind == "alloc":
            pending.append(f"      + {describe(dict(info, bytes=info['made_bytes']))}   live {total}\n")
        elif kind == "resize":
            f.write(f"      ~ t{info['id']} resized {info['old']} -> {info['bytes']} B"
                    f" ({info['origin']}{_names(info)})   live {total}\n")
        elif kind == "free":
            frees.append((info, total))
    flush()
    for fig in figures:
        lp = led.step_peak[fig["step"]]
        f.write(f"step {fig['step']} peak: {lp['bytes']} B in {lp['phase']} after {lp['op']} "
                f"(tracker {fig['peak_bytes']} B, {fig['categories']}); alive then:\n")
        for info in sorted(lp["live"], key=lambda i: i["id"]):
            f.write(f"    {describe(info)}\n")


# --------------------------------------------------------------------------------------------
# What each scheme did, and the results.
# --------------------------------------------------------------------------------------------


def ddp_info(run: Run) -> dict:
    """DDP's buckets per step as the comm hook saw them (step 1: as built at construction;
    step 2: as rebuilt at step 2's forward pass in the order the gradients became ready)."""
    cfg = run.model._bucket_config if hasattr(run.model, "_bucket_config") else None
    return {
        "gradient_as_bucket_view": run.model.gradient_as_bucket_view,
        "bucket_cap_bytes": cfg.bucket_bytes_cap if cfg else None,
        "first_bucket_cap_bytes": cfg.first_bucket_bytes_cap if cfg else None,
        "buckets": {f"step{k}": [v[i] for i in sorted(v)] for k, v in sorted(run.hook["buckets"].items())},
    }


def fsdp_info(run: Run) -> dict:
    """FSDP2's parameter groups: each parameter's full and rank-0 shapes and padded shard."""
    groups = []
    for g in run.fsdp_groups:
        params = []
        for fp, name in zip(g.fsdp_params, g.names):
            params.append({
                "name": name,
                "shape": list(fp._orig_size),
                "sharded_shape": list(fp.sharded_size),
                "padded_sharded_shape": list(fp.padded_sharded_param_size),
            })
        shard = sum(torch.Size(p["padded_sharded_shape"]).numel() for p in params)
        groups.append({"parameters": params, "all_gather_input_numel": shard,
                       "all_gather_output_numel": shard * run.s["world_size"]})
    return {"reshard_after_forward": run.scheme == "fsdp", "groups": groups}


def zero_info(run: Run) -> dict:
    """ZeroRedundancyOptimizer's partition: which parameters' state each rank keeps."""
    parts = run.optimizer._partition_parameters()
    ranks = []
    for groups in parts:
        names = [run.names[id(p)] for g in groups for p in g["params"]]
        nbytes = sum(p.numel() * p.element_size() for g in groups for p in g["params"])
        ranks.append({"parameters": names, "parameter_bytes": nbytes})
    return {"partition": ranks}


def _live_entry(info: dict) -> dict:
    return {"id": info["id"], "bytes": info["bytes"], "dtype": info["dtype"], "shape": info["shape"],
            "op": info["origin"], "made_in": f"step {info['phase'][0]} {info['phase'][1]}",
            "module": info["module"], "labels": info["names"]}


def run_setup(s: dict, record: bool = False) -> tuple[dict, Run]:
    gc.collect()
    use_world(s["world_size"], s["rank"])
    torch.manual_seed(0)
    run = Run(s, record)
    run.build()
    figures = run.train()
    led = run.ledger
    step2 = figures[-1]
    best = max(figures, key=lambda f: (f["peak_bytes"], -f["step"]))
    for f in {id(step2): step2, id(best): best}.values():
        f["live"] = [_live_entry(i) for i in sorted(led.step_peak[f["step"]]["live"], key=lambda i: i["id"])]
    out = {k: s[k] for k in ("name", "scheme", "world_size", "rank", "rows_on_rank", "inputs", "width",
                             "layers", "classes", "batch", "optimizer", "strategy")}
    out.update({
        "peak_step2_bytes": step2["peak_bytes"],
        "categories": step2["categories"],
        "peak_run_bytes": best["peak_bytes"],
        "peak_run_step": best["step"],
        "categories_run": best["categories"],
        "construct_peak_bytes": run.construct_peak,
        "data_bytes": sum(st.nbytes() for t in (run.x, run.y) for st in _storages(t)),
        "end_bytes": led.total,
        "step_peaks": figures,
    })
    if run.scheme in FSDP_SCHEMES:
        out["fsdp"] = fsdp_info(run)
    else:
        out["ddp"] = ddp_info(run)
    if run.scheme == "zero1":
        out["zero"] = zero_info(run)
    return out, run


METHOD = (
    "Rank 0 of world_size on PyTorch's fake process group (torch.testing._internal.distributed."
    "fake_pg: collectives move no data), real float32 CPU tensors. Each setup builds the network "
    "inputs -> layers x [nn.Linear(width), nn.ReLU()] -> nn.Linear(classes), wraps it "
    "(ddp: DistributedDataParallel defaults, bucket_cap_mb 25, gradient_as_bucket_view False; "
    "ddp_view: gradient_as_bucket_view True; fsdp: FSDP2 fully_shard on every nn.Linear then on "
    "the model, reshard_after_forward True; fsdp_no_reshard: the same with reshard_after_forward "
    "False on every nn.Linear and the model; zero1: DDP with gradient_as_bucket_view True and "
    "torch.distributed.optim.ZeroRedundancyOptimizer over the same optimizer class), makes the "
    "optimizer (foreach=True) and rank 0's batch (rows_on_rank = ceil(batch / world_size) rows: "
    "x float32, y int64), and runs two steps of the lesson's loop [optimizer.zero_grad() "
    "(set_to_none); y_pred = model(x); loss = F.cross_entropy(y_pred, y); loss.backward(); "
    "optimizer.step()]. DDP's all-reduce is a comm hook that divides the bucket in place by "
    "world_size and returns it (the fake group's future has no value). Memory: raw bytes of live "
    "tensor storages after each op, by torch.distributed._tools MemTracker (ddp, ddp_view, zero1; "
    "DDP's wrapper, optimizer and batch made inside it, the parameters by track_external) or "
    "FSDPMemTracker (fsdp, fsdp_no_reshard; made after fully_shard, batch inside it), entered anew for each step; "
    "a dispatch-mode ledger that also follows UntypedStorage.resize_ agrees with the tracker to the "
    "byte on every step of every setup. peak_step2_bytes and categories: step 2 (the steady "
    "state); peak_run_bytes: the larger of the two steps' peaks. construct_peak_bytes: the "
    "ledger's peak while building (not seen by the trackers for fsdp). step_peaks[i].live: the "
    "storages alive at that step's peak, with labels (parameter names, .grad, optimizer state, "
    "bucketK, all-gather input/output, reduce-scatter input/output, '(unsharded)'). Not counted: "
    "the device mesh's CPU rank table, anything outside tensor storages, 512 B rounding."
)


def dumps(doc: dict) -> str:
    """Indented JSON with each tensor of a 'live' list on one line."""
    lines = {}

    def shrink(o):
        if isinstance(o, dict):
            return {k: ([_mark(lines, e) for e in v] if k == "live" else shrink(v)) for k, v in o.items()}
        if isinstance(o, list):
            return [shrink(e) for e in o]
        return o

    text = json.dumps(shrink(doc), indent=1)
    for key, line in lines.items():
        text = text.replace(json.dumps(key), line)
    return text + "\n"


def _mark(lines: dict, entry: dict) -> str:
    key = f"@live{len(lines)}@"
    lines[key] = json.dumps(entry)
    return key


def check(rows: list[dict]) -> list[str]:
    """What disagrees: the ledger's and the tracker's peak of any step, or (DDP) the bytes of
    the bucket storages alive at step 2's peak and the sizes of step 2's buckets."""
    bad = [f"{r['name']} step {f['step']}: tracker {f['peak_bytes']} ledger {f['ledger_peak_bytes']}"
           for r in rows for f in r["step_peaks"] if f["peak_bytes"] != f["ledger_peak_bytes"]]
    for r in rows:
        if "ddp" in r:
            live = sum(e["bytes"] for e in r["step_peaks"][-1]["live"]
                       if any(lab.startswith("bucket") for lab in e["labels"]))
            made = sum(b["bytes"] for b in r["ddp"]["buckets"]["step2"])
            if live != made:
                bad.append(f"{r['name']}: buckets alive at the peak {live} B, step 2's buckets {made} B")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help=f"the JSON to write ('-': none) (default: the repository's {FIXTURE})")
    ap.add_argument("--only", action="append", default=[],
                    help="run only the setups whose name contains this (repeatable); writes nothing "
                    "unless --out is given too (default: every setup)")
    ap.add_argument("--trace", help="write the op-by-op trace of 2-64x2-2, batch 16, Adam, N=2 under "
                    "each scheme to this file and exit (default: no trace)")
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
    rows, t_all = [], time.perf_counter()
    for s in setups:
        t0 = time.perf_counter()
        row, run = run_setup(s)
        rows.append(row)
        del run
        print(f"{s['name']:<32} step 2 {row['peak_step2_bytes']:>12,} B  run {row['peak_run_bytes']:>12,} B"
              f"  ({row['step_peaks'][-1]['phase']})  {time.perf_counter() - t0:.1f}s", flush=True)
    seconds = time.perf_counter() - t_all
    bad = check(rows)
    for line in bad:
        print("ledger and tracker disagree:", line, file=sys.stderr)
    if out_path != "-":
        doc = {
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "command": "python " + " ".join(shlex.quote(a) for a in ["reference/pytorch/parallel_peaks.py"]
                                             + list(argv if argv is not None else sys.argv[1:])),
            "created": datetime.date.today().isoformat(),
            "backend": "real-cpu, fake process group",
            "method": METHOD,
            "steps": STEPS,
            "setups": rows,
        }
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        with open(out_path, "w") as f:
            f.write(dumps(doc))
        print(f"wrote {out_path} ({len(rows)} setups, {seconds:.1f} s)")
    else:
        print(f"{len(rows)} setups, {seconds:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
