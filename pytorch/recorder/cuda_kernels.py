"""CUDA's kernels, substituted into the fake CPU step where they allocate differently.

The step runs on fake CPU tensors (a fake CUDA backward needs a driver). Where CUDA's kernel
keeps other tensors than the CPU's, ``CudaKernels`` (kernels registered for the AutogradCPU
key, above autograd, so that what backward saves is CUDA's) calls the op CUDA calls; the fake
tensors run that op's meta function, which gives its outputs' shapes:

- dropout: ``native_dropout`` (a bool mask saved, where the CPU's composite keeps a float one),
  as ``at::dropout`` does on CUDA (``is_fused_kernel_acceptable``);
- ``scaled_dot_product_attention``: the backend ``sdpa.select`` picks for the card, through
  that backend's op (its saved output and logsumexp), or CUDA's math path written out.

What a CUDA kernel allocates inside itself (no meta function shows it) is added by
``Scratch`` at the dispatcher, from the kernel's source; what cannot be known without the
card is listed in ``approximate``, with its size where one was measured.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import cudnn_rnn, sdpa
from .sdpa import HALF, CudaCard

aten = torch.ops.aten


class CudaKernels:
    """While entered, the CPU's ``aten::dropout`` and ``aten::scaled_dot_product_attention``
    run as CUDA's: a kernel registered for the AutogradCPU key (``torch.library``), so that
    autograd records what CUDA's op saves. ``calls`` says what it did. Leaving removes them."""

    def __init__(self, card: CudaCard, on_host=None):
        self.card = card
        self.calls: dict[tuple, int] = {}
        # Called with each tensor CUDA keeps on the host (the philox seed and offset of the
        # memory-efficient kernels): the ledger's ``host``.
        self.on_host = on_host or (lambda t: None)
        self._lib = None
        # Flat cuDNN weight buffers (``cudnn_rnn.flatten``), by storage.
        self.rnn_buffers: dict = {}

    def __enter__(self):
        self._lib = torch.library.Library("aten", "IMPL")
        self._lib.impl("dropout", self.dropout, "AutogradCPU")
        self._lib.impl("scaled_dot_product_attention", self.attention, "AutogradCPU")
        self._lib.impl("linear", self.linear, "AutogradCPU")
        for kind in cudnn_rnn.MODES:
            count = (lambda k: lambda _: self._count(k, "cudnn", ""))(kind)
            self._lib.impl(f"{kind}.input", cudnn_rnn.rnn(kind, count, self.rnn_buffers),
                           "AutogradCPU")
        return self

    def __exit__(self, *exc):
        self._lib._destroy()
        self._lib = None

    def _count(self, *key):
        self.calls[key] = self.calls.get(key, 0) + 1

    # -- dropout
    def dropout(self, input, p, train):
        """``at::dropout``: CUDA's fused kernel where ``is_fused_kernel_acceptable``, else the
        composite every device shares."""
        if train and 0.0 < p < 1.0 and input.numel() > 0:
            self._count("dropout", "native_dropout", "")
            return aten.native_dropout(input, p, True)[0]
        return aten.dropout.default.decompose(input, p, train)

    # -- linear
    def linear(self, input, weight, bias=None):
        """``at::native::linear`` as it runs on a real tensor: its composite adds the bias out
        of place for a tensor subclass (a fake tensor is one), in place otherwise."""
        if input.dim() == 2 and bias is not None:
            return aten.addmm(bias, input, weight.t())
        if bias is not None and input.is_contiguous() and (input.dim() == 3 or bias.dim() == 1):
            flat = aten.addmm(bias, input.reshape(-1, input.size(-1)), weight.t())
            return flat.view(*input.shape[:-1], flat.size(-1))
        out = aten.matmul(input, weight.t())
        if bias is not None:
            out.add_(bias)
        return out

    # -- attention
    def attention(self, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                  scale=None, enable_gqa=False):
        """``scaled_dot_product_attention`` (attention.cpp) with CUDA's backend choice."""
        call = sdpa.Call(query, key, value, attn_mask, float(dropout_p), bool(is_causal),
                         bool(enable_gqa))
        backend, refused = sdpa.select(self.card, call)
        self._count("scaled_dot_product_attention", backend, "; ".join(refused))
        mask = attn_mask
        if mask is not None and mask.dtype == torch.bool:
            # convert_boolean_attn_mask: where(mask, 0, -inf) in the query's dtype.
            mask = torch.where(mask, 0.0, torch.scalar_tensor(-math.inf, dtype=query.dtype))
        lse = call.grad
        if backend == "flash":
            d = query.size(-1)
            q, k, v = (_pad8(t) for t in (query, key, value))
            scale = scale if scale is not None else 1.0 / math.sqrt(d)
            out = aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False,
                                                           scale=scale)[0]
            return out[..., :d] if out.size(-1) != d else out
        if backend == "efficient":
            if mask is not None:
                mask = _pad_bias(mask, query, key)
            res = aten._scaled_dot_product_efficient_attention(query, key, value, mask, lse,
                                                               dropout_p, is_causal, scale=scale)
            self.on_host(res[2])
            self.on_host(res[3])
            return res[0]
        if backend == "cudnn":
            res = aten._scaled_dot_product_cudnn_attention(query, key, value, mask, lse, dropout_p,
                                                           is_causal, False, scale=scale)
            return res[0]
        # The math path is a composite every device shares; its dropout is this dropout.
        return aten._scaled_dot_product_attention_math(query, key, value, mask, dropout_p,
                                                       is_causal, None, scale=scale,
                                                       enable_gqa=enable_gqa)[0]

    def summary(self) -> list[dict]:
        return [{"op": op, "as": kind, "calls": n, "refused": why}
                for (op, kind, why), n in sorted(self.calls.items())]


def _pad8(t: torch.Tensor) -> torch.Tensor:
    """``pad_last_dim<8, false>``: flash takes head sizes that are multiples of 8."""
    d = t.size(-1)
    return t if d % 8 == 0 else F.pad(t, (0, 8 - d % 8))


def _pad_bias(mask: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``preprocess_mask``: the bias expanded to (batch, heads, L, S), its last dimension padded
    to a multiple of 16 (a copy) where it is not."""
    shape = (q.size(0), q.size(1), q.size(-2), k.size(-2))
    if mask.size(-1) % 16:
        pad = 16 - mask.size(-1) % 16
        mask = F.pad(mask, (0, pad))[..., : k.size(-2)]
    return mask.expand(shape)


class Scratch:
    """What a CUDA kernel allocates inside itself, at the dispatcher: ``before(func, args)``
    gives (name, tensor) pairs alive across the op; ``after(func, args, out)`` a list of
    steps, ("alloc", name, tensor) or ("free", name), run once the op's outputs exist;
    ``kernel(func)`` a whole kernel run in place of the op's meta function, given
    ``inside(name, tensor)`` to record each allocation as it makes it."""

    def __init__(self):
        # Kernels met whose allocations are only partly recorded (see ``approximate``).
        self.seen: set[str] = set()

    KERNELS = {
        aten._cudnn_rnn.default: cudnn_rnn.forward,
        aten._cudnn_rnn_backward.default: cudnn_rnn.backward,
    }

    def kernel(self, func):
        return self.KERNELS.get(func)

    def order(self, func, outputs: list) -> list:
        """The op's outputs in the order CUDA's kernel allocates them (``dropout_cuda``: the
        mask before the output)."""
        return outputs[::-1] if func is aten.native_dropout.default else outputs

    def before(self, func, args):
        if func is aten.embedding_dense_backward.default:
            # embedding_dense_backward_cuda: grad_.contiguous() (then, above 3072 indices, a
            # sort's buffers: ``approximate``).
            grad = args[0]
            if args[1].numel() > 3072 and not args[4]:
                self.seen.add("embedding_sort")
            if not grad.is_contiguous():
                return [("grad.contiguous()", torch.empty(grad.shape, dtype=grad.dtype))]
            return []
        if func is aten._scaled_dot_product_flash_attention_backward.default:
            # _flash_attention_backward: grad_out and out, in (B, L, H, D), made contiguous.
            held = []
            for name, t in (("grad_out.contiguous()", args[0]), ("out.contiguous()", args[4])):
                bl = t.transpose(1, 2)
                if not bl.is_contiguous():
                    held.append((name, torch.empty(bl.shape, dtype=bl.dtype)))
            return held
        if func is aten._scaled_dot_product_efficient_attention_backward.default:
            grad = args[0]
            # _efficient_attention_backward: grad_out in (B, M, H, K), made contiguous.
            if not grad.transpose(1, 2).is_contiguous():
                return [("grad_out.contiguous()", torch.empty_like(grad.transpose(1, 2),
                                                                    memory_format=torch.contiguous_format))]
        return []

    def after(self, func, args, out):
        if func is aten._scaled_dot_product_flash_attention_backward.default:
            # mha_bwd (flash_api.cpp): softmax_d and dq_accum in float32, the key and value
            # gradients expanded to every query head for grouped-query attention.
            q, k = args[1], args[2]
            b, h, lq, d = q.shape
            hk, lk = k.size(1), k.size(2)
            up = lambda x, m: (x + m - 1) // m * m  # noqa: E731
            d_r = up(up(d, 8), 32 if up(d, 8) <= 128 else 64)
            steps = [("alloc", "softmax_d", torch.empty(b, h, up(lq, 128))),
                     ("alloc", "dq_accum", torch.empty(b, up(lq, 128), h, d_r))]
            if hk != h:
                steps += [("alloc", "dk_expanded", torch.empty(b, lk, h, d, dtype=q.dtype)),
                          ("alloc", "dv_expanded", torch.empty(b, lk, h, d, dtype=q.dtype)),
                          ("free", "dv_expanded"), ("free", "dk_expanded")]
            return steps + [("free", "dq_accum"), ("free", "softmax_d")]
        if func is aten._scaled_dot_product_efficient_attention_backward.default:
            grad, q = args[0], args[1]
            b, h, m, k = q.shape
            if q.dtype in HALF:
                return [("alloc", "delta", torch.empty(b, h, m)), ("free", "delta")]
            # delta = (grad_out.float() * out.float()).sum(-1).transpose(-2, -1).contiguous()
            return [("alloc", "mul", torch.empty(b, m, h, grad.size(-1))),
                    ("alloc", "sum", torch.empty(b, m, h)),
                    ("alloc", "delta", torch.empty(b, h, m)),
                    ("free", "sum"), ("free", "mul"), ("free", "delta")]
        return []


def approximate(calls: list[dict], seen: set[str] = frozenset()) -> list[dict]:
    """What the recording of these kernels leaves out, as data: each with its kernel, what,
    and bytes measured where a card showed them (else None). ``seen``: ``Scratch.seen``."""
    out = []
    if "embedding_sort" in seen:
        out.append({"kernel": "embedding_dense_backward", "what": "the sort's and segments' "
                    "buffers CUDA's embedding backward takes above 3072 indices are not "
                    "recorded", "bytes": None,
                    "measured": None})
    kinds = {c["as"] for c in calls if c["op"] == "scaled_dot_product_attention"}
    if "efficient" in kinds:
        out.append({"kernel": "_efficient_attention_backward", "what": "its workspace (CUTLASS's "
                    "gradient accumulators, sized by the kernel chosen and the key splits) is "
                    "not recorded: its size is not known without the card",
                    "bytes": None, "measured": "262,400 B on an H200 for batch 4, 4 heads, 6 "
                    "tokens, head size 8, float32 (pytorch/models/transformer_encoder.py), "
                    "freed inside the op"})
    if "cudnn" in kinds:
        out.append({"kernel": "cuDNN attention", "what": "cuDNN's workspace is not recorded: "
                    "its size is not known without cuDNN",
                    "bytes": None, "measured": None})
    rnns = {c["op"] for c in calls if c["as"] == "cudnn" and c["op"] in cudnn_rnn.MODES}
    if rnns:
        out.append({"kernel": "_cudnn_rnn", "what": "cuDNN's workspace (each call, forward "
                    "and backward) and reserve space (kept for backward) are not recorded: "
                    "cudnnGetRNNTempSpaceSizes sizes them, which needs cuDNN and the card", "bytes": None,
                    "measured": "on an H200 (cuDNN 9.19), float32, batch 4: LSTM 16 to 32, "
                    "6 steps: workspace 8,483,616 B, reserve 15,616 B; GRU 16 to 24, 2 "
                    "layers, 5 steps: workspace 16,846,496 B, reserve 25,216 B "
                    "(pytorch/models/embedding_lstm.py, embedding_gru.py)"})
    return out
