"""LSTM, GRU and plain RNNs as cuDNN runs them on CUDA, in a fake CPU step.

On the CPU an ``nn.LSTM`` runs one cell per time step (hundreds of small tensors, each saved
for backward); on CUDA it is one ``_cudnn_rnn`` call over a flat weight buffer. Three pieces,
each from PyTorch's CUDA source (``aten/src/ATen/native/cudnn/RNN.cpp``, ``nn/modules/rnn.py``):

- ``flatten``: ``RNNBase.flatten_parameters`` on a card: one zeroed buffer holds every weight,
  the parameters become views of it (their own copies freed);
- ``rnn``: ``at::lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` on CUDA (``_cudnn_impl``): one
  ``aten::_cudnn_rnn`` over that buffer, so autograd saves what cuDNN's backward needs;
- ``forward`` and ``backward``: the two kernels' allocations in the card's order, in place of
  ``_cudnn_rnn``'s meta function (which has no reserve) and of ``_cudnn_rnn_backward`` (which
  has none): the input made contiguous in (time, batch, features), the outputs, the gradient
  buffer for the weights (one, the gradients views of it).

cuDNN's workspace (freed inside each call) and its reserve space (kept for backward) are sized
by ``cudnnGetRNNTempSpaceSizes``, which needs the library and the card: not recorded, listed in
``approximate`` with what the H200 showed.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

# cudnnRNNMode_t, as ``_cudnn_rnn`` takes it.
MODES = {"rnn_relu": 0, "rnn_tanh": 1, "lstm": 2, "gru": 3}


def _key(t: torch.Tensor) -> int:
    return t.untyped_storage()._cdata


def flatten(m: torch.nn.Module, buffers: dict) -> None:
    """``flatten_parameters`` as on a card, for one ``RNNBase``: one flat weight buffer
    (``zeros``), its parameters views of it in ``_flat_weights`` order; ``buffers`` maps the
    buffer's storage to it, for ``weight_buffer``."""
    if not isinstance(m, torch.nn.RNNBase) or getattr(m, "proj_size", 0):
        return
    weights = [w for w in m._flat_weights if w is not None]
    if not weights or len({w.dtype for w in weights}) != 1:
        return
    buf = torch.zeros(sum(w.numel() for w in weights), dtype=weights[0].dtype)
    offset = 0
    with torch.no_grad():
        for w in weights:
            w.data = buf[offset:offset + w.numel()].view_as(w)
            offset += w.numel()
    buffers[_key(buf)] = buf
    m._init_flat_weights()


def weight_buffer(params, buffers: dict) -> torch.Tensor | None:
    """The flat buffer ``params`` are all views of (``try_get_weight_buf``), if they are."""
    keys = {_key(p) for p in params}
    return buffers.get(keys.pop()) if len(keys) == 1 else None


def rnn(kind: str, count, buffers: dict):
    """The AutogradCPU kernel for ``aten::<kind>.input``: cuDNN's call, as ``_cudnn_impl``
    makes it (``count`` is told each call; falls back to the CPU's for what it cannot
    take: projections, mixed dtypes)."""
    mode = MODES[kind]
    op = getattr(aten, kind).input

    def kernel(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
        h = hx[0] if kind == "lstm" else hx
        c = hx[1] if kind == "lstm" else None
        per_layer = 4 if has_biases else 2
        if len(params) != per_layer * num_layers * (2 if bidirectional else 1) or \
                len({p.dtype for p in params}) != 1:
            return op.decompose(input, hx, params, has_biases, num_layers, dropout, train,
                                bidirectional, batch_first)
        count(kind)
        out = aten._cudnn_rnn(input, list(params), per_layer, weight_buffer(params, buffers), h, c,
                              mode, h.size(2), 0, num_layers, batch_first, dropout, train,
                              bidirectional, [], None)
        if kind == "lstm":
            return out[0], out[1], out[2]
        return out[0], out[1]

    return kernel


def _time_major(input: torch.Tensor, batch_first: bool) -> torch.Tensor:
    return input.transpose(0, 1) if batch_first else input


def _contiguous(inside, name, t: torch.Tensor) -> torch.Tensor:
    """``t.contiguous()``: a copy, recorded, where it is not."""
    if t.is_contiguous():
        return t
    c = torch.empty(t.shape, dtype=t.dtype)
    inside(name, c)
    return c


def forward(inside, args):
    """``_cudnn_rnn``: (output, hy, cy, reserve, weight_buf), allocated as on the card."""
    (input, weight, _stride0, weight_buf, hx, cx, _mode, hidden, proj, _layers, batch_first,
     _dropout, _train, bidirectional, _sizes, _state) = args
    x = _contiguous(inside, "input.contiguous()", _time_major(input, batch_first))
    if weight_buf is None:
        weight_buf = torch.empty(sum(w.numel() for w in weight), dtype=input.dtype)
        inside("weight_buf", weight_buf)
    t, b = x.size(0), x.size(1)
    out_size = (proj or hidden) * (2 if bidirectional else 1)
    output = torch.empty(t, b, out_size, dtype=input.dtype)
    inside("output", output)
    hy = torch.empty(hx.shape, dtype=hx.dtype)
    inside("hy", hy)
    cy = torch.empty(cx.shape, dtype=cx.dtype) if cx is not None else torch.empty(0)
    inside("cy", cy)
    reserve = torch.empty(0, dtype=torch.uint8)
    del x
    return _time_major(output, batch_first), hy, cy, reserve, weight_buf


def backward(inside, args):
    """``_cudnn_rnn_backward``: (dx, dhx, dcx, dw), its buffers as on the card: the zeros for
    gradients autograd did not give, the input and output gradient made contiguous, then one
    flat buffer for the weights' gradients, each a view of it."""
    (input, weight, _stride0, weight_buf, hx, cx, output, grad_output, grad_hy, grad_cy,
     _mode, _hidden, _proj, _layers, batch_first, _dropout, _train, _bidir, _sizes, _state,
     _reserve, mask) = args
    zeros = []
    for g, like, name in ((grad_output, output, "grad_output"), (grad_hy, hx, "grad_hy"),
                          (grad_cy, cx, "grad_cy")):
        if g is None and like is not None and not (name == "grad_cy" and cx is None):
            z = torch.zeros(like.shape, dtype=like.dtype)
            inside(f"zeros_like({name})", z)
            zeros.append(z)
    x = _contiguous(inside, "input.contiguous()", _time_major(input, batch_first))
    go = grad_output if grad_output is not None else zeros[0]
    dy = _contiguous(inside, "grad_output.contiguous()", _time_major(go, batch_first))
    dx = torch.empty(x.shape, dtype=x.dtype)
    inside("dx", dx)
    dhx = torch.empty(hx.shape, dtype=hx.dtype)
    inside("dhx", dhx)
    dcx = torch.empty(cx.shape, dtype=cx.dtype) if cx is not None else None
    if dcx is not None:
        inside("dcx", dcx)
    del dy, x
    dw = []
    if mask[3]:
        x = _contiguous(inside, "input.contiguous()", _time_major(input, batch_first))
        flat = torch.zeros(sum(w.numel() for w in weight), dtype=input.dtype)
        inside("dw", flat)
        offset = 0
        for w in weight:
            dw.append(flat[offset:offset + w.numel()].view_as(w))
            offset += w.numel()
        del x, flat
    del zeros
    return _time_major(dx, batch_first), dhx, dcx, dw
