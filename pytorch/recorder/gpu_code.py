"""A template written for the GPU, recorded unchanged.

Code written for a card says so: ``model.cuda()``, ``x.to("cuda")``, ``device="cuda"``,
``torch.cuda.is_available()``, ``torch.autocast("cuda")``, ``torch.compile(model)``. Without a
driver each of those fails or takes the CPU's path. While ``GpuCode`` is entered:

- ``torch.cuda`` answers as one card would (available, one device, the recorded compute
  capability; ``synchronize``, ``empty_cache`` and the statistics' resets do nothing;
  ``memory_allocated`` and ``max_memory_allocated`` are the recording's raw bytes);
- a ``device="cuda"`` argument makes the tensor on the fake CPU device, which stands for the
  card; ``Tensor.cuda()`` / ``.to("cuda")`` of a tensor made on the host (by ``make_batch`` or
  the model's construction) copies it, and the host tensor leaves the card's trace
  (``cuda_host``), as on a card; of a tensor already on the card, does nothing;
- ``Module.cuda()`` / ``.to("cuda")`` do nothing: the recorder puts the model on the card
  itself, as ``.to("cuda")`` copies it;
- ``torch.autocast("cuda", ...)`` is the recorder's CUDA autocast (float16 unless told);
- ``torch.compile`` returns the model or function as it was: the recording is eager PyTorch's,
  and says so (``approximate``).
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode
from torch.utils.weak import WeakIdKeyDictionary


def _is_cuda(device) -> bool:
    if device is None:
        return False
    if isinstance(device, int):
        return True  # an index: torch's own meaning is a CUDA device
    return torch.device(device).type == "cuda"


class GpuCode(TorchFunctionMode):
    """See the module. ``ledger``: the recorder's (for what is on the host, and the figures
    ``torch.cuda`` reports); ``card``: an ``sdpa.CudaCard``."""

    def __init__(self, ledger=None, card=None):
        super().__init__()
        self.ledger = ledger
        self.card = card
        self.on_card = WeakIdKeyDictionary()
        self.compiled = 0
        self._undo = contextlib.ExitStack()

    # -- tensors
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cuda:
            return self._to_card(args[0], None)
        if func is torch.Tensor.to:
            parse = {k: v for k, v in kwargs.items() if k != "copy"}
            device, dtype, _, _ = torch._C._nn._parse_to(*args[1:], **parse)
            if _is_cuda(device):
                return self._to_card(args[0], dtype)
        if _is_cuda(kwargs.get("device")):
            out = func(*args, **dict(kwargs, device="cpu"))
            if isinstance(out, torch.Tensor):
                self.on_card[out] = True
            return out
        return func(*args, **kwargs)

    def _to_card(self, t: torch.Tensor, dtype):
        """``t.to("cuda", dtype)``: a copy of a host tensor; ``t`` itself if on the card."""
        host = self._on_host(t)
        if not host:
            return t if dtype in (None, t.dtype) else t.to(dtype)
        out = t.to(dtype=dtype or t.dtype, copy=True)
        self.on_card[out] = True
        if self.ledger is not None:
            self.ledger.host(t)
        return out

    def _on_host(self, t: torch.Tensor) -> bool:
        if t in self.on_card or self.ledger is None:
            return False
        i = self.ledger.id_of(t)
        info = self.ledger.live.get(i) if i is not None else None
        return info is not None and info["phase"] in ("data", "setup")

    # -- torch.cuda, modules, autocast, compile
    def _patch(self, owner, name, value):
        old = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.callback(setattr, owner, name, old)

    def _patches(self):
        led, card = self.ledger, self.card
        cap = (card.major, card.minor) if card is not None else (9, 0)
        for name, value in {
            "is_available": lambda: True, "device_count": lambda: 1,
            "current_device": lambda: 0, "set_device": lambda *_: None,
            "synchronize": lambda *_, **__: None, "empty_cache": lambda: None,
            "reset_peak_memory_stats": lambda *_: None,
            "reset_accumulated_memory_stats": lambda *_: None,
            "get_device_capability": lambda *_: cap,
            "get_device_name": lambda *_: "the card recorded for",
            "is_bf16_supported": lambda *_, **__: cap[0] >= 8,
            "memory_allocated": lambda *_: led.total if led is not None else 0,
            "max_memory_allocated": lambda *_: led.peak if led is not None else 0,
        }.items():
            self._patch(torch.cuda, name, value)
        module_to = torch.nn.Module.to

        def to(module, *args, **kwargs):
            device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
            if _is_cuda(device):
                return module_to(module, dtype) if dtype is not None else module
            return module_to(module, *args, **kwargs)

        self._patch(torch.nn.Module, "to", to)
        self._patch(torch.nn.Module, "cuda", lambda module, device=None: module)
        ac_init = torch.amp.autocast_mode.autocast.__init__

        def autocast_init(ac, device_type, dtype=None, *args, **kwargs):
            if device_type == "cuda":
                device_type, dtype = "cpu", dtype or torch.float16
            return ac_init(ac, device_type, dtype, *args, **kwargs)

        self._patch(torch.amp.autocast_mode.autocast, "__init__", autocast_init)

        def compile(model=None, **kwargs):
            self.compiled += 1
            return model if model is not None else (lambda m: m)

        self._patch(torch, "compile", compile)

    def __enter__(self):
        self._undo = contextlib.ExitStack()
        self._patches()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._undo.close()

    def approximate(self) -> list[dict]:
        if not self.compiled:
            return []
        return [{"kernel": "torch.compile", "what": "recorded as eager PyTorch runs the model: "
                 "compile's fused kernels keep fewer intermediates, and mode='reduce-overhead' "
                 "adds CUDA graphs' private memory pool; neither is recorded", "bytes": None, "measured": None}]
