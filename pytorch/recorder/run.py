"""Running a learner's template: its steps under FakeTensorMode, with the ledger or MemTracker.

Tensors are fake CPU tensors (shapes, no storage) with CUDA's choices made explicit where
they differ: optimizers left to choose get ``foreach=True`` (CUDA's pick), gradients are set
to None, autocast uses the template's dtype. Fake CUDA tensors cannot run a backward pass on a
machine without CUDA (autograd's engine asks for a CUDA context: "hasPrimaryContext expects a
valid device index"), so CUDA's kernels are substituted into the CPU run where they allocate
differently (``cuda_kernels``, given a card); what CUDA does differently and is not recorded
is stated: see record.py's ``cuda_differences``. The allocations CUDA keeps on the host (``cuda_host``: an optimizer's
`step` counters) are recorded and marked.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from . import cudnn_rnn
from .cuda_autocast import CudaAutocast
from .cuda_kernels import CudaKernels, Scratch, approximate
from .gpu_code import GpuCode
from .ledger import BackwardHooks, Ledger, name_state

REQUIRED = ("make_model", "make_optimizer", "make_batch")

# FakeTensorMode logs a traceback for an op that fails in the learner's step; the recorder's
# own one-line message says where and which op.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


class TemplateError(Exception):
    """The template is missing, does not import, or lacks what the recorder needs."""


class StepError(Exception):
    """The template's own code raised while recording."""


def load(path: str, overrides: dict | None = None, emulate_gpu: bool = True):
    """Imports the template, sets ``overrides`` (NAME -> value) on it, then checks it: its
    functions read the module's globals when called, so an override reaches them, and the
    checks of BATCH_SIZES and STEPS see the overridden values. ``emulate_gpu``: import it
    under ``GpuCode`` (no card here)."""
    if os.path.isdir(path):
        raise TemplateError(f"{path} is a folder: the template is a .py file (a copy of "
                            "pytorch/record_template.py)")
    if not path.endswith(".py"):
        raise TemplateError(f"{path} is not a .py file: the template is Python (a copy of "
                            "pytorch/record_template.py)")
    if not os.path.isfile(path):
        raise TemplateError(f"no such template file: {path}")
    name = "record_template_" + str(abs(hash(os.path.abspath(path))))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        # Code written for a GPU (``torch.cuda.is_available()`` at import) sees one, here as
        # on a card; a real card's run (real_step.py) needs no stand-in.
        with GpuCode() if emulate_gpu else contextlib.nullcontext():
            spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 -- the learner's file: any error is theirs
        raise TemplateError(f"{path} does not import: {type(e).__name__}: {e}") from e
    for name, value in (overrides or {}).items():
        if name not in vars(mod):
            raise TemplateError(f"{path} defines no {name} (--set overrides a module-level "
                                "constant the template defines)")
        if isinstance(vars(mod)[name], type(os)) or callable(vars(mod)[name]):
            raise TemplateError(f"{path}: {name} is a {type(vars(mod)[name]).__name__}, not a "
                                "constant (--set overrides a module-level constant)")
        setattr(mod, name, value)
    missing = [f for f in REQUIRED if not callable(getattr(mod, f, None))]
    if not callable(getattr(mod, "step", None)) and not callable(getattr(mod, "loss_fn", None)):
        missing.append("loss_fn (or step)")
    if missing:
        raise TemplateError(f"{path} lacks {', '.join(missing)}: copy pytorch/record_template.py")
    sizes = getattr(mod, "BATCH_SIZES", (2, 4, 8))
    if len(sizes) != 3 or len(set(sizes)) != 3 or any(not isinstance(b, int) or b < 1 for b in sizes):
        raise TemplateError(f"{path}: BATCH_SIZES must be three different positive ints, not {sizes!r}")
    steps = getattr(mod, "STEPS", 2)
    if not isinstance(steps, int) or steps < 1:
        raise TemplateError(f"{path}: STEPS must be a positive int, not {steps!r}")
    return mod


class NoItemGradScaler(torch.amp.GradScaler):
    """GradScaler whose step does not read found_inf with .item() (a fake tensor has no
    value): it steps as a real scaler does when no gradient overflowed; every tensor it makes
    is made as GradScaler makes it."""

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        return optimizer.step(*args, **kwargs)


def cuda_choices(optimizer) -> list[str]:
    """Makes CUDA's optimizer choice explicit; says what it changed."""
    notes = []
    for i, g in enumerate(getattr(optimizer, "param_groups", [])):
        if g.get("foreach") is None and not g.get("fused"):
            g["foreach"] = True
            notes.append(f"param_groups[{i}]: foreach=None -> True (CUDA's default; the CPU's is the for-loop)")
    return notes


# torch.optim optimizers whose `step` counters live on the parameter's device whatever the
# flags (ASGD makes them with ``torch.zeros((), device=p.device)``).
STEP_ON_DEVICE = ("ASGD",)


def host_step_names(model, optimizer) -> set[str]:
    """The names the ledger gives (``<param>.step``) to the `step` counters that CUDA keeps on
    the host: a torch.optim optimizer's, in a param group neither ``fused`` nor
    ``capturable`` (Adam, AdamW, Adamax, NAdam, RAdam, RMSprop, Rprop, Adadelta, Adagrad,
    Adafactor make them with ``torch.tensor(0.0)`` or ``torch.zeros(())`` on the CPU then;
    with either flag, on the parameter's device). A custom optimizer's are left alone: where
    its author puts them is not known here."""
    cls = type(optimizer)
    if not cls.__module__.startswith("torch.optim") or cls.__name__ in STEP_ON_DEVICE:
        return set()
    pnames = {id(p): n for n, p in model.named_parameters()}
    out = set()
    for g in getattr(optimizer, "param_groups", []):
        if g.get("fused") or g.get("capturable"):
            continue
        for p in g["params"]:
            if isinstance(optimizer.state.get(p, {}).get("step"), torch.Tensor):
                out.add(f"{pnames.get(id(p), '?')}.step")
    return out


def cuda_host(led: Ledger, model, optimizer) -> set[int]:
    """The ids of the allocations CUDA keeps on the host: the `step` counters of
    ``host_step_names``, and the 0-d tensor foreach adds to them each step
    (``torch._foreach_add_(steps, torch.tensor(1.0, device="cpu"))`` when they are on the CPU)."""
    names = host_step_names(model, optimizer)
    ids = {info["id"] for action, info in led.events
           if action == "alloc" and names.intersection(info["names"])}
    ids |= {other for targets, other in led.tensor_adds
            if other is not None and targets and all(t in ids for t in targets)}
    return ids


def default_step(t, scaler):
    """The training loop's body as a script writes it: ``out`` and ``loss`` are loop
    variables, so the previous step's output dies when the new one is assigned (in the
    forward pass), and the last step's stay alive after the loop (the lesson's loop)."""
    autocast = getattr(t, "AUTOCAST", None)
    held = {}

    def step(model, optimizer, batch):
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        amp = torch.autocast("cpu", dtype=autocast) if autocast else contextlib.nullcontext()
        with amp:
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


def _to_card(led: Ledger, t, rnn_buffers: dict):
    """The model as a script puts it on a card: made on the host (nothing on the card), then
    copied by ``model.to("cuda")``, whose ``_apply`` copies each module's children before its
    own parameters and buffers: the order the card's allocator sees."""
    led.recording = False
    try:
        model = _call("make_model()", t.make_model, source=led.source_file)
    finally:
        led.recording = True
    _copy_children_first(model, rnn_buffers)
    return model


def _copy_children_first(module, rnn_buffers: dict):
    """``Module._apply``'s order, copying in place of its conversion (a fake tensor cannot
    be swapped into a parameter the recorder holds a weak reference to); an RNN flattens its
    weights for cuDNN as its ``_apply`` does on a card."""
    for child in module.children():
        _copy_children_first(child, rnn_buffers)
    with torch.no_grad():
        for p in module._parameters.values():
            if p is not None:
                p.data = p.data.to(p.device, copy=True)
        for k, b in module._buffers.items():
            if b is not None:
                module._buffers[k] = b.to(b.device, copy=True)
    cudnn_rnn.flatten(module, rnn_buffers)


def _call(what, f, *args, source: str | None = None):
    """``f(*args)``; an error in it as a ``StepError`` naming the template's own line (the
    innermost frame in ``source``, else the innermost outside PyTorch and the recorder) and
    the op it was raised in."""
    try:
        return f(*args)
    except Exception as e:  # noqa: BLE001 -- the learner's code
        raise StepError(f"the template's {what} raised {type(e).__name__}: "
                        f"{_first_line(e)}{_where(e, source)}") from e


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def _where(e: Exception, source: str | None) -> str:
    ours = os.path.dirname(os.path.abspath(__file__))
    mine, other = None, None
    tb = e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if source and os.path.abspath(name) == source:
            mine = (name, tb.tb_lineno)
        elif name.endswith(".py") and "site-packages" not in name and \
                not os.path.abspath(name).startswith(ours) and "/torch/" not in name:
            other = (name, tb.tb_lineno)
        tb = tb.tb_next
    at = mine or other
    op = getattr(e, "recorder_op", None)
    parts = []
    if at:
        parts.append(f"at {os.path.relpath(at[0])}:{at[1]}")
    if op:
        parts.append(f"in {op}")
    return f" ({', '.join(parts)})" if parts else ""


def run(t, batch: int, tracker: str = "ledger", card=None) -> dict:
    """Runs t's STEPS steps at ``batch`` rows. tracker: "ledger" (the recorder) or
    "memtracker" (PyTorch's MemTracker on the same step code). ``card`` (an
    ``sdpa.CudaCard``): the ledger records CUDA's kernels for that card where they allocate
    differently from the CPU's (``cuda_kernels``); None: the CPU's kernels, as MemTracker
    sees them."""
    steps = getattr(t, "STEPS", 2)
    notes = []
    kernels = None
    src = os.path.abspath(t.__file__)
    with FakeTensorMode(), contextlib.ExitStack() as outer:
        if tracker == "ledger":
            scratch = Scratch() if card is not None else None
            led = Ledger(source_file=os.path.abspath(t.__file__), scratch=scratch)
            track = led
            if card is not None:
                kernels = CudaKernels(card, on_host=led.host)
        else:
            from torch.distributed._tools.mem_tracker import MemTracker
            led = None
            track = contextlib.nullcontext()
        gpu = outer.enter_context(GpuCode(led, card))
        with track:
            if kernels is not None:
                model = _to_card(led, t, kernels.rnn_buffers)
            else:
                model = _call("make_model()", t.make_model, source=src)
            optimizer = _call("make_optimizer(model)", t.make_optimizer, model, source=src)
            notes += cuda_choices(optimizer)
            scaler = NoItemGradScaler("cpu") if getattr(t, "GRAD_SCALER", False) else None
            step = t.step if callable(getattr(t, "step", None)) else default_step(t, scaler)
        if led is not None:
            name_state(led, model, optimizer)
            mt = contextlib.nullcontext()
        else:
            mt = MemTracker()
            mt.track_external(model, optimizer)
        last = None
        cuda = kernels if kernels is not None else contextlib.nullcontext()
        amp = CudaAutocast() if kernels is not None else contextlib.nullcontext()
        hooks = BackwardHooks(led) if kernels is not None else contextlib.nullcontext()
        with track, mt, cuda, hooks, amp:
            if led is not None:
                led.step, led.loading = 1, True
            data = _call(f"make_batch({batch})", t.make_batch, batch, source=src)
            if led is not None:
                for i, d in enumerate(data if isinstance(data, (tuple, list)) else [data]):
                    if isinstance(d, torch.Tensor):
                        led.name(d, f"batch[{i}]")
                led.loading = False
            for s in range(1, steps + 1):
                if led is not None:
                    led.step = s
                    name_state(led, model, optimizer)
                else:
                    mt.reset_mod_stats()
                # `last` holds the previous step's result until this one returns, as a loop
                # variable does: the same in both trackers.
                last = _call("step", step, model, optimizer, data, source=src)
                if led is not None:
                    name_state(led, model, optimizer)
        if led is not None:
            led.stop()
            del last
            kinds = sorted({type(m).__name__ for m in model.modules()})
            calls = kernels.summary() if kernels is not None else []
            return {"events": led.events, "peak": led.peak, "end": led.total, "notes": notes,
                    "module_types": kinds,
                    "autocast_used": bool(getattr(amp, "used", 0)),
                    "cuda_host": cuda_host(led, model, optimizer) | led.host_ids,
                    "cuda_kernels": calls,
                    "approximate": approximate(calls, scratch.seen if scratch else set())
                    + list(led.bounded.values()) + gpu.approximate()}
        snap = mt.get_tracker_snapshot("peak")
        (dev,) = snap.values()
        cats = {getattr(k, "name", str(k)): v for k, v in dev.items() if str(k) != "Total"}
        return {"peak": dev["Total"], "categories": cats, "notes": notes}
