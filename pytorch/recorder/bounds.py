"""Ops whose output's size depends on the data, recorded at their largest.

A fake tensor has shapes and no values, so ``nonzero``, a boolean mask, ``masked_select``,
``unique`` and ``.item()`` cannot run (``DynamicOutputShapeException``,
``DataDependentOutputException``). ``bounded`` runs them at the size they take when every
element counts (every element nonzero, every element unique): an upper bound of their memory,
which the recording states (``recorder.approximate``, ``bound``). ``.item()`` returns 0 (or
False, 0.0): the recording says so, since a value the step branches on is not known here.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _zero(t: torch.Tensor):
    if t.dtype == torch.bool:
        return False
    return 0.0 if t.is_floating_point() or t.is_complex() else 0


def _index(func, args, kwargs, make):
    """``x[mask]``: each boolean index as the long indices ``nonzero`` would give at most."""
    self, indices = args[0], args[1]
    out = []
    for idx in indices:
        if idx is not None and idx.dtype in (torch.bool, torch.uint8):
            n = idx.numel()
            out.extend(make((n,), torch.long) for _ in range(idx.dim()))
        else:
            out.append(idx)
    return func(self, out, *args[2:], **kwargs)


def bounded(func, args, kwargs, make):
    """The op at its largest output, or None for an op this does not know. ``make(shape,
    dtype)`` makes a tensor the ledger records (an allocation the kernel makes)."""
    if func is aten._local_scalar_dense.default:
        return _zero(args[0])
    if func is aten.nonzero.default:
        self = args[0]
        return make((self.numel(), self.dim()), torch.long)
    if func is aten.masked_select.default:
        self, mask = args[0], args[1]
        n = torch.broadcast_shapes(self.shape, mask.shape)
        return make((torch.Size(n).numel(),), self.dtype)
    if func is aten._unique2.default:
        self = args[0]
        inverse = args[2] if len(args) > 2 else kwargs.get("return_inverse", False)
        counts = args[3] if len(args) > 3 else kwargs.get("return_counts", False)
        return (make((self.numel(),), self.dtype),
                make(tuple(self.shape) if inverse else (0,), torch.long),
                make((self.numel(),) if counts else (0,), torch.long))
    if func is aten.index.Tensor:
        return _index(func, args, kwargs, make)
    return None


def describe(func, out, where: str) -> dict:
    """The ``approximate`` entry for one bounded call."""
    name = func.name() if hasattr(func, "name") else str(func)
    if func is aten._local_scalar_dense.default:
        return {"kernel": f"{name} (.item(), .tolist(), bool())", "what": "reads a value the "
                "recorder does not have: it returned " f"{out!r} here{where}", "bytes": None,
                "measured": None, "bound": False}
    ts = [t for t in (out if isinstance(out, tuple) else (out,)) if isinstance(t, torch.Tensor)]
    size = sum(t.untyped_storage().nbytes() for t in ts)
    return {"kernel": name, "what": "its output's size depends on the data: recorded at its "
            f"largest (every element counted){where}", "bytes": size, "measured": None,
            "bound": True}
