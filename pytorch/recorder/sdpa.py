"""Which kernel CUDA's ``scaled_dot_product_attention`` runs, by PyTorch's own selection rule.

A transcription of ``select_sdp_backend`` in ``aten/src/ATen/native/transformers/cuda/
sdp_utils.cpp`` (pytorch main, read Nov 2026) for dense inputs: the backends in priority
order, each with the checks that can refuse it. A fake tensor cannot ask the card, so the card
is told (``CudaCard``: compute capability and the cuDNN the wheel ships). Returns the backend
and, for every backend tried before it, why it was refused, so a recording can say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

HALF = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class CudaCard:
    """The card a recording is for: what PyTorch's CUDA kernels ask the device."""
    major: int = 9
    minor: int = 0
    # ``torch.backends.cudnn.version()`` of the wheel: 91900 for torch 2.11+cu130 (measured on
    # the H200, reference/pytorch/gpu/2026-11-28-h200/README.md).
    cudnn: int = 91900
    cuda_major: int = 13

    def within(self, lo: tuple[int, int], hi: tuple[int, int]) -> bool:
        return lo <= (self.major, self.minor) <= hi


def parse_capability(text: str) -> tuple[int, int]:
    """``"9.0"`` -> (9, 0); ValueError with the expected form otherwise."""
    major, dot, minor = text.strip().partition(".")
    if not dot or not major.isdigit() or not minor.isdigit() or int(major) < 1:
        raise ValueError(f"compute capability {text!r}: expected MAJOR.MINOR, e.g. 8.0 or 9.0")
    return int(major), int(minor)


def prefers_cudnn(card: CudaCard) -> bool:
    """``check_prefer_cudnn_attention``: cuDNN first on sm90/sm10x with cuDNN newer than 9.15.0
    (with a CUDA 12 wheel only on minor 0 or 3)."""
    if card.cudnn <= 91500 or card.major not in (9, 10):
        return False
    return card.cuda_major >= 13 or card.minor in (0, 3)


def order(card: CudaCard) -> list[str]:
    default = ["flash", "efficient", "math", "cudnn"]
    return ["cudnn", "flash", "efficient", "math"] if prefers_cudnn(card) else default


@dataclass
class Call:
    """One call's inputs, as the checks read them."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None
    dropout: float
    causal: bool
    gqa: bool

    @property
    def grad(self) -> bool:
        return torch.is_grad_enabled() and any(t.requires_grad for t in (self.q, self.k, self.v))


def _common(c: Call) -> str | None:
    if not all(t.dim() == 4 for t in (c.q, c.k, c.v)):
        return "q, k and v are not 4-d (batch, heads, sequence, head size)"
    if any(t.size(-2) == 0 for t in (c.q, c.k, c.v)):
        return "a sequence length is 0"
    if c.q.size(0) != c.k.size(0) or c.q.size(0) != c.v.size(0):
        return "batch sizes differ"
    hq, hk = c.q.size(1), c.k.size(1)
    if c.gqa and hk and hq % hk:
        return "query heads are not a multiple of key heads"
    if not c.gqa and hq != hk:
        return "head counts differ (enable_gqa=False)"
    return None


def _stride1(c: Call, ignore_singleton: bool) -> str | None:
    for t in (c.q, c.k, c.v):
        if t.stride(-1) != 1 and not (ignore_singleton and t.size(-1) == 1):
            return "the last dimension's stride is not 1"
    return None


def gemm_alignment(card: CudaCard, dtype) -> int:
    """``minimum_gemm_alignment``: the head size's multiple the CUTLASS kernels need."""
    half = dtype in HALF
    tensor_cores = card.major >= 8 or (card.major >= 7 and half)
    mn = 4 if card.major >= 8 else 1
    return max(mn, 128 // (16 if half else 32)) if tensor_cores else mn


def why_not_flash(card: CudaCard, c: Call) -> str | None:
    if (why := _common(c)):
        return why
    if c.mask is not None:
        return "an attn_mask is given (flash takes none)"
    d = c.q.size(-1)
    if not (d == c.k.size(-1) == c.v.size(-1) and d <= 256):
        return f"head sizes {c.q.size(-1)}, {c.k.size(-1)}, {c.v.size(-1)}: flash needs equal, at most 256"
    if not card.within((8, 0), (12, 1)):
        return f"sm{card.major}{card.minor}: flash needs sm80 to sm121"
    if c.grad and (card.within((8, 6), (8, 9)) or card.within((12, 0), (12, 1))):
        if not (d <= 192 or (c.dropout == 0.0 and d > 224)):
            return f"training with head size {d} on sm{card.major}{card.minor}"
    if c.causal and c.q.size(-2) != c.k.size(-2):
        return "is_causal with different query and key lengths"
    if c.q.dtype not in HALF:
        return f"{str(c.q.dtype).replace('torch.', '')}: flash needs float16 or bfloat16"
    return _stride1(c, True)


def why_not_efficient(card: CudaCard, c: Call) -> str | None:
    if not card.within((5, 0), (12, 1)):
        return f"sm{card.major}{card.minor}: memory-efficient needs sm50 to sm121"
    if (why := _common(c)):
        return why
    a = gemm_alignment(card, c.q.dtype)
    dq, dk, dv = c.q.size(-1), c.k.size(-1), c.v.size(-1)
    if dq != dk or dq % a or dv % a or dq == 0 or dv == 0:
        return f"head sizes {dq}, {dv}: memory-efficient needs multiples of {a}"
    if (why := _stride1(c, False)):
        return why
    allowed = (torch.float16, torch.float32, torch.bfloat16) if card.major >= 8 else (torch.float16, torch.float32)
    if c.q.dtype not in allowed:
        return f"{str(c.q.dtype).replace('torch.', '')} on sm{card.major}{card.minor}"
    return None


def _cudnn_layout_ok(t: torch.Tensor) -> bool:
    b, h, s, d = t.shape
    packed = t.stride() == (s * 3 * h * d, d, 3 * h * d, 1)
    plain = t.stride() == (s * h * d, d, h * d, 1)
    return packed or plain


def why_not_cudnn(card: CudaCard, c: Call) -> str | None:
    if card.cudnn < 90000:
        return f"cuDNN {card.cudnn}: cuDNN attention needs 9.0"
    if c.dropout > 0.0 and 91100 < card.cudnn < 91400:
        return "dropout with cuDNN 9.11 to 9.13"
    if (why := _common(c)):
        return why
    if c.q.dtype not in HALF:
        return f"{str(c.q.dtype).replace('torch.', '')}: cuDNN attention needs float16 or bfloat16"
    if not card.within((8, 0), (12, 1)):
        return f"sm{card.major}{card.minor}: cuDNN attention needs sm80 to sm121"
    if c.dropout * 16.0 != int(c.dropout * 16.0):
        return f"dropout {c.dropout} is not a multiple of 1/16"
    if (why := _stride1(c, True)):
        return why
    b, h = c.q.size(0), c.q.size(1)
    if b > 65535 or h > 65535:
        return "batch or heads above 65535"
    sq, sk, dqk, dv = c.q.size(2), c.k.size(2), c.q.size(3), c.v.size(3)
    sm90 = (card.major == 9 and card.minor == 0) or card.major == 10
    limit = 256 if sm90 and card.cudnn > 92200 else (192 if sm90 and dqk == 192 and dv == 128 else 128)
    if dqk > limit or dv > limit:
        return f"head size above {limit}"
    if dqk % 8 or dv % 8:
        return "head size not a multiple of 8"
    if sk == 1 or (c.dropout != 0.0 and sq == 1):
        return "sequence length 1"
    if c.grad and sm90 and card.cudnn > 92200:
        if not ((dqk <= 128 and dv <= 128) or (dqk, dv) in ((192, 128), (256, 256))):
            return f"backward with head sizes {dqk}, {dv}"
    if not all(_cudnn_layout_ok(t) for t in (c.q, c.k, c.v)):
        return "q, k, v not in cuDNN's (batch, sequence, heads, head size) layout"
    return None


CHECKS = {"flash": why_not_flash, "efficient": why_not_efficient, "cudnn": why_not_cudnn}


def select(card: CudaCard, c: Call) -> tuple[str, list[str]]:
    """The backend CUDA runs, and why each one before it in the order was refused."""
    refused = []
    for backend in order(card):
        if backend == "math":
            return "math", refused
        why = CHECKS[backend](card, c)
        if why is None:
            return backend, refused
        refused.append(f"{backend}: {why}")
    return "math", refused
