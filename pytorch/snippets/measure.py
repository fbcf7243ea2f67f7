"""What the snippets share: the lesson's network at any depth, a batch, and the peak memory of a
few training steps — torch.cuda's peak on a CUDA device, else MemTracker's count of the live
tensors on the CPU (raw bytes; the allocator's rounding and cache are CUDA's alone)."""
import torch
import torch.nn as nn

MiB = 2**20
device = "cuda" if torch.cuda.is_available() else "cpu"


def lesson_model(width=2000, layers=1, move=True):
    """inputs 2 -> `layers` x [Linear(width), ReLU] -> Linear(2), the lesson's shape, on the
    device (`move=False`: where it was made, e.g. under `torch.device("meta")`)."""
    torch.manual_seed(0)
    mods = [nn.Linear(2, width), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*mods, nn.Linear(width, 2))
    return model.to(device) if move else model


def batch(rows=4096):
    torch.manual_seed(1)
    x = torch.randn(rows, 2, device=device)
    return x, (x[:, 0] * x[:, 1] > 0).long()


def peak_mib(model, optimizer, step, steps=2):
    """The peak of `steps` calls of `step()`, in MiB."""
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(steps):
            step()
        return torch.cuda.max_memory_allocated() / MiB
    mt = mem_tracker()
    mt.track_external(model, optimizer)
    # MemTracker refuses a top-level module called twice in one iteration; accumulation calls
    # the model once per micro-batch. Its per-module statistics are reset before each call
    # (the overall peak, the figure here, is kept).
    handle = nn.modules.module.register_module_forward_pre_hook(
        lambda mod, _inputs: mt.reset_mod_stats() if mod is model else None)
    try:
        with mt:
            for _ in range(steps):
                step()
    finally:
        handle.remove()
    return mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"] / MiB


def mem_tracker():
    """A new MemTracker: private, in PyTorch 2.5 or newer (on the CPU only, so that a CUDA run
    of an older PyTorch needs none)."""
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError:
        raise SystemExit("counting on the CPU needs MemTracker (PyTorch 2.5 or newer); this is "
                         f"{torch.__version__}") from None
    return MemTracker()


def where():
    return "torch.cuda.max_memory_allocated" if device == "cuda" else "MemTracker on the CPU"
