"""Autocast as CUDA runs it, in a fake CPU step.

``torch.autocast("cpu")`` and ``torch.autocast("cuda")`` cast different ops: on the CPU a
cross-entropy runs in float32 from the start, on CUDA its log-softmax stays in the autocast
dtype and only the loss goes to float32, to name one the H200 showed. ``CudaAutocast``
registers, for the AutocastCPU key, CUDA's policy for every op CUDA's autocast lists and a
pass-through for every op only the CPU's lists, so that ``torch.autocast("cpu", dtype=...)``
casts as CUDA's would. CUDA's lists are read from the installed PyTorch's own header
(``torch/include/ATen/autocast_mode.h``: ``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE``), so they are that version's; the casts
follow ``cached_cast`` (autocast_mode.cpp), weights' casts cached until autocast exits.
``norm``'s ``fp32_append_dtype`` overloads are not taken (``skipped``).
"""

from __future__ import annotations

import os
import re

import torch

LISTS = {
    "AT_FORALL_LOWER_PRECISION_FP": "lower_precision_fp",
    "AT_FORALL_FP32": "fp32",
    "AT_FORALL_FP32_SET_OPT_DTYPE": "fp32_set_opt_dtype",
    "AT_FORALL_PROMOTE": "promote",
}


def header() -> str:
    return os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")


def cuda_policies(text: str | None = None) -> dict[str, str]:
    """``"mm"`` / ``"pow.Tensor_Scalar"`` -> CUDA's cast policy, from the header's macros."""
    if text is None:
        with open(header(), encoding="utf-8") as f:
            text = f.read()
    out = {}
    lines = text.splitlines()
    for macro, policy in LISTS.items():
        start = next((i for i, line in enumerate(lines)
                      if line.startswith(f"#define {macro}(_)")), None)
        if start is None:
            raise RuntimeError(f"{header()}: no {macro}: this PyTorch's autocast lists moved")
        block = []
        for line in lines[start:]:
            block.append(line)
            if not line.rstrip().endswith("\\"):
                break
        for name, overload in re.findall(r"_\((\w+)(?:,\s*(\w+))?\)", "\n".join(block)):
            out[f"{name}.{overload}" if overload else name] = policy
    return out


def _op(name: str):
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


class CudaAutocast:
    """While entered, ``torch.autocast("cpu")`` casts by CUDA's lists (see the module)."""

    def __init__(self):
        self.policies = cuda_policies()
        self.cache: dict[int, tuple] = {}
        self._lib = None
        self._exit = None
        self.skipped: list[str] = []
        # Calls of ops CUDA's lists cast: whether the step ran under autocast at all.
        self.used = 0

    # -- cached_cast
    @staticmethod
    def _eligible(t) -> bool:
        return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64

    def _cast(self, to, t):
        if isinstance(t, (list, tuple)):
            return type(t)(self._cast(to, x) for x in t)
        if not self._eligible(t) or t.dtype == to:
            return t
        lower = torch.get_autocast_dtype("cpu")
        if (to == lower and t.dtype == torch.float32 and t.requires_grad and t.is_leaf
                and not t._is_view()):
            hit = self.cache.get(id(t))
            if hit is not None and hit[0] is t:
                return hit[1]
            cast = t.to(to)
            self.cache[id(t)] = (t, cast)
            return cast
        return t.to(to)

    def _cast_args(self, to, args, kwargs):
        """Each argument cast, the last first: the wrapper casts them in a function call's
        argument list, which GCC (PyTorch's Linux wheels) evaluates right to left; the card's
        trace shows a linear's bias cast before its weight."""
        cast = [self._cast(to, a) for a in reversed(args)][::-1]
        return tuple(cast), {k: self._cast(to, v) for k, v in kwargs.items()}

    def _kernel(self, name: str, policy: str):
        op = _op(name)
        dtype_at = next((i for i, a in enumerate(op._schema.arguments) if a.name == "dtype"), None)
        guard = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

        def kernel(*args, **kwargs):
            self.used += 1
            if policy == "lower_precision_fp":
                args, kwargs = self._cast_args(torch.get_autocast_dtype("cpu"), args, kwargs)
            elif policy == "fp32":
                args, kwargs = self._cast_args(torch.float32, args, kwargs)
            elif policy == "promote":
                to = torch.get_autocast_dtype("cpu")
                for t in list(args) + list(kwargs.values()):
                    if self._eligible(t):
                        to = torch.promote_types(to, t.dtype)
                args, kwargs = self._cast_args(to, args, kwargs)
            elif policy == "fp32_set_opt_dtype" and args and self._eligible(args[0]):
                given = kwargs.get("dtype") is not None or (
                    dtype_at is not None and len(args) > dtype_at and args[dtype_at] is not None)
                if not given and dtype_at is not None:
                    kwargs = dict(kwargs, dtype=torch.float32)
            with torch._C._ExcludeDispatchKeyGuard(guard):
                return op(*args, **kwargs)

        return kernel

    def __enter__(self):
        self._lib = torch.library.Library("aten", "IMPL")
        for name, policy in self.policies.items():
            try:
                _op(name)
            except AttributeError:
                self.skipped.append(name)
                continue
            self._lib.impl(name, self._kernel(name, policy), "AutocastCPU")
        cpu_only = [n[len("aten::"):] for n in torch._C._dispatch_get_all_op_names()
                    if n.startswith("aten::")
                    and torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCPU")]
        for name in cpu_only:
            if name in self.policies:
                continue
            # A fallthrough, as CUDA's autocast has for every op it does not list: the op's
            # own ops (a composite's) meet autocast again.
            self._lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")
        # autocast's cache lives until the outermost autocast region exits.
        self._exit = torch.amp.autocast_mode.autocast.__exit__
        outer = self._exit

        def exit_and_clear(ac, *exc):
            r = outer(ac, *exc)
            if not torch.is_autocast_enabled("cpu"):
                self.cache.clear()
            return r

        torch.amp.autocast_mode.autocast.__exit__ = exit_and_clear
        return self

    def __exit__(self, *exc):
        torch.amp.autocast_mode.autocast.__exit__ = self._exit
        self._lib._destroy()
        self._lib = None
        self.cache.clear()
