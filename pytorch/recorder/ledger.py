"""The recorder's ledger: every storage's birth and death as the dispatcher sees them.

A ``TorchDispatchMode`` sees each ATen op's outputs; a storage it has not seen before is born
there (its op, the innermost module running, the phase, the thread). A weakref finalizer on
the storage says when it dies. Tensors made outside the mode (none in a recorded step, but a
template may pass one in) are added with ``track``. Zero-byte storages are left out: CUDA's
allocator hands out no block for them.
"""

from __future__ import annotations

import os
import sys
import weakref

import torch
from torch.distributed._tools.common_utils import get_untyped_storages
from torch.distributed._tools.mod_tracker import ModTracker
from torch._prims_common import is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense
from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import bounds
from torch.utils.weak import WeakIdKeyDictionary


def storages(t: torch.Tensor):
    return get_untyped_storages(t)


class Ledger(TorchDispatchMode):
    """Records ``events``: ("alloc" | "free", info) in the order they happened. ``info`` is a
    dict: id, bytes, op, module, phase, step, thread, dtype, shape, names, source."""

    def __init__(self, source_file: str | None = None, scratch=None):
        super().__init__()
        # ``scratch`` (``cuda_kernels.Scratch``, or None: the CPU's kernels) adds what CUDA's
        # kernels allocate inside themselves; ``host`` marks what CUDA keeps on the host.
        self.scratch = scratch
        self.host_ids: set[int] = set()
        # Ops whose output depends on the data, run at their largest (``bounds``): their
        # ``approximate`` entries by (op, where).
        self.bounded: dict[tuple, dict] = {}
        # Between an autograd node's post-hook and the next node's pre-hook the engine adds
        # the node's outputs into its input buffers (``accumulating``): see ``accumulate``.
        self.accumulating = False
        self.seen = WeakIdKeyDictionary()
        self.live: dict[int, dict] = {}
        self.events: list[tuple[str, dict]] = []
        self.next_id = 0
        self.total = 0
        self.peak = 0
        self.step = 0
        self.in_optimizer = 0
        self.loading = False
        self.mods = ModTracker()
        self.source_file = source_file
        self.recording = True
        self._hooks = []
        # Each ``aten::_foreach_add_.Tensor``: (the ids of the tensors added to, the id of the
        # tensor added). Adam & co. add a fresh 0-d CPU tensor to their step counters this way
        # when the counters live on the CPU (``torch.tensor(1.0, device="cpu")``).
        self.tensor_adds: list[tuple[list, object]] = []

    # -- where we are
    def phase(self) -> str:
        if self.step == 0:
            return "setup"
        if self.loading:
            return "data"
        if self.in_optimizer:
            return "optimizer"
        if torch._C._current_graph_task_id() != -1:
            return "backward"
        return "forward"

    def thread(self) -> str:
        # On CUDA, autograd's engine runs a device's backward ops on its own thread (with its
        # own cuBLAS handle and workspace); on the CPU it runs them on the caller's. The
        # recorder names the thread CUDA would use.
        return "autograd" if torch._C._current_graph_task_id() != -1 else "main"

    def module(self) -> str:
        names = [p for p in self.mods.parents if p != "Global"]
        return max(names, key=lambda p: (p.count("."), p)) if names else ""

    def source(self):
        """The innermost frame of the learner's file on the Python stack, if any."""
        if not self.source_file:
            return None
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.source_file:
                return (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
            f = f.f_back
        return None

    # -- bookkeeping
    def _add(self, st, t: torch.Tensor | None, op: str, name: str | None = None):
        if st in self.seen:
            return None
        nbytes = st.nbytes()
        self.seen[st] = -1
        if nbytes == 0 or not self.recording:
            return None
        self.next_id += 1
        info = {
            "id": self.next_id, "bytes": nbytes, "op": op, "module": self.module(),
            "phase": self.phase(), "step": self.step, "thread": self.thread(),
            "dtype": str(t.dtype).replace("torch.", "") if t is not None else "?",
            "shape": list(t.shape) if t is not None else [],
            "names": [name] if name else [], "source": self.source(),
        }
        self.seen[st] = info["id"]
        self.live[info["id"]] = info
        self.total += nbytes
        self.peak = max(self.peak, self.total)
        fin = weakref.finalize(st, self._free, info["id"])
        fin.atexit = False
        self.events.append(("alloc", info))
        return info

    def _free(self, tid: int):
        info = self.live.pop(tid, None)
        if info is None or not self.recording:
            return
        self.total -= info["bytes"]
        info["died"] = {"phase": self.phase(), "step": self.step, "thread": self.thread()}
        self.events.append(("free", info))

    def track(self, t: torch.Tensor, name: str):
        for st in storages(t):
            if self._add(st, t, "external", name) is None:
                self.name(t, name)

    def name(self, t: torch.Tensor, name: str):
        for st in storages(t):
            tid = self.seen.get(st)
            if tid in self.live and name not in self.live[tid]["names"]:
                self.live[tid]["names"].append(name)

    def stop(self):
        """What dies after the run is not part of the trace: it is alive at the dump."""
        self.recording = False

    # -- the mode
    def __enter__(self):
        def pre(*_):
            self.in_optimizer += 1

        def post(*_):
            self.in_optimizer -= 1

        self._hooks = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
        self.mods.__enter__()
        return super().__enter__()

    def __exit__(self, *args):
        super().__exit__(*args)
        self.mods.__exit__(*args)
        for h in self._hooks:
            h.remove()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func.name() if hasattr(func, "name") else str(func)
        held = []
        if self.scratch is not None:
            for name, t in self.scratch.before(func, args):
                self._inside(op, name, t)
                held.append(t)
        kernel = self.scratch.kernel(func) if self.scratch is not None else None
        if kernel is not None:
            out = kernel(lambda name, t: self._inside(op, name, t), args)
        elif (self.scratch is not None and self.accumulating
                and func is torch.ops.aten.add.Tensor and not torch.is_grad_enabled()):
            out = accumulate(args[0], args[1])
        else:
            out = self._run(func, op, args, kwargs or {})
        flat, _ = tree_flatten(out)
        if self.scratch is not None:
            flat = self.scratch.order(func, flat)
        for t in flat:
            if isinstance(t, torch.Tensor):
                for st in storages(t):
                    self._add(st, t, op)
        if self.scratch is not None:
            alive = {}
            for step in self.scratch.after(func, args, out):
                if step[0] == "alloc":
                    alive[step[1]] = step[2]
                    self._inside(op, step[1], step[2])
                else:
                    del alive[step[1]]
            del alive
        del held
        if func is torch.ops.aten._foreach_add_.Tensor and self.recording:
            other = args[1] if len(args) > 1 else (kwargs or {}).get("other")
            self.tensor_adds.append(([self.id_of(t) for t in args[0]], self.id_of(other)))
        return out

    def _run(self, func, op: str, args, kwargs):
        """``func``, or, where its output's size depends on the data, ``bounds.bounded``. An
        error carries the op (``recorder_op``) for the recorder's message."""
        try:
            return func(*args, **kwargs)
        except (DynamicOutputShapeException, DataDependentOutputException) as e:
            def make(shape, dtype):
                t = torch.empty(shape, dtype=dtype)
                self._inside(op, "at its largest", t)
                return t
            out = bounds.bounded(func, args, kwargs, make)
            if out is None:
                _tag(e, op)
                raise
            src = self.source()
            where = f" (at {os.path.basename(src[0])}:{src[1]})" if src else ""
            self.bounded.setdefault((op, where), bounds.describe(func, out, where))
            return out
        except Exception as e:  # noqa: BLE001 -- say which op, then raise it as it was
            _tag(e, op)
            raise

    def _inside(self, op: str, name: str, t: torch.Tensor):
        """A tensor CUDA's kernel for ``op`` allocates inside itself (no meta function shows it)."""
        for st in storages(t):
            self._add(st, t, f"{op} (inside: {name})")

    def host(self, t: torch.Tensor):
        """``t`` is a tensor CUDA keeps on the host (its id goes to ``cuda_host``)."""
        i = self.id_of(t)
        if i is not None:
            self.host_ids.add(i)

    def id_of(self, t) -> int | None:
        """The recorder's id of ``t``'s storage (None: not a tensor, or not recorded)."""
        if not isinstance(t, torch.Tensor):
            return None
        ids = [self.seen.get(st) for st in storages(t)]
        return ids[0] if len(ids) == 1 and ids[0] in self.live else None


def _tag(e: Exception, op: str):
    """Marks ``e`` with the innermost op it was raised in (``recorder_op``)."""
    if not hasattr(e, "recorder_op"):
        try:
            e.recorder_op = op
        except AttributeError:
            pass


def _sole(t: torch.Tensor) -> bool:
    """``can_accumulate_inplace`` as far as Python can see: dense, and its storage held by
    this tensor alone (the tensor's own use count is not visible from Python)."""
    # 2: the tensor's own reference and the Python storage object asked here.
    return (is_non_overlapping_and_dense(t) and not t.is_sparse
            and torch._C._storage_Use_Count(t.untyped_storage()._cdata) == 2)


def accumulate(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """autograd's ``InputBuffer::accumulate`` on real tensors: into ``old`` in place where it
    can, else into ``new``, else out of place. Under fake tensors (a tensor subclass) the
    engine always adds out of place: one gradient too many at each shared input."""
    if old.shape == new.shape and old.dtype == new.dtype:
        if _sole(old):
            return old.add_(new)
        if _sole(new):
            return new.add_(old)
    return old + new


class BackwardHooks:
    """Tells the ledger when the autograd engine is between a node's apply and the next
    node (``Ledger.accumulating``): a pre- and a post-hook on every node of each graph
    ``torch.autograd.backward`` or ``grad`` is given, registered as the call starts."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.saved = None

    def _hook_graph(self, roots):
        # Nodes are told apart within this walk only: a later graph's node may reuse a freed
        # one's id. A node hooked twice (retain_graph) sets the same flag twice.
        seen = set()
        stack = [r for r in roots if r is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            node.register_prehook(self._pre)
            node.register_hook(self._post)
            stack.extend(n for n, _ in node.next_functions)

    def _pre(self, *_):
        self.ledger.accumulating = False

    def _post(self, *_):
        self.ledger.accumulating = True

    def _wrap(self, f):
        def wrapped(tensors, *args, **kwargs):
            ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
            self._hook_graph([t.grad_fn for t in ts if isinstance(t, torch.Tensor)])
            try:
                return f(tensors, *args, **kwargs)
            finally:
                self.ledger.accumulating = False
        return wrapped

    def __enter__(self):
        self.saved = (torch.autograd.backward, torch.autograd.grad)
        torch.autograd.backward = self._wrap(self.saved[0])
        torch.autograd.grad = self._wrap(self.saved[1])
        return self

    def __exit__(self, *exc):
        torch.autograd.backward, torch.autograd.grad = self.saved


def name_state(ledger: Ledger, model: torch.nn.Module, optimizer) -> None:
    """Names parameters, gradients and optimizer state by their module paths."""
    for pname, p in model.named_parameters():
        ledger.name(p, pname)
        if p.grad is not None:
            ledger.name(p.grad, pname + ".grad")
    for bname, b in model.named_buffers():
        ledger.name(b, bname)
    if optimizer is None:
        return
    pnames = {id(p): n for n, p in model.named_parameters()}
    for p, state in optimizer.state.items():
        for k, v in state.items():
            if isinstance(v, torch.Tensor):
                ledger.name(v, f"{pnames.get(id(p), '?')}.{k}")
