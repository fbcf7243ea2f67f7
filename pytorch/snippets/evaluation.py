"""Evaluation without the autograd graph: under no_grad (or inference_mode) a forward pass keeps
no activations for a backward pass that will never come."""
import torch

from measure import MiB, batch, device, lesson_model

model = lesson_model(width=2000, layers=4)
x, _ = batch(8192)


def forward_peak(context):
    from torch.distributed._tools.mem_tracker import MemTracker
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        with context():
            out = model(x)
        return out, torch.cuda.max_memory_allocated() / MiB
    mt = MemTracker()
    mt.track_external(model)
    with mt, context():
        out = model(x)
    return out, mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"] / MiB


# ANCHOR: eval
model.eval()
with torch.inference_mode():      # or torch.no_grad(): no graph, no kept activations
    y_pred = model(x)
# ANCHOR_END: eval

for name, context in [("with autograd", torch.enable_grad), ("no_grad", torch.no_grad),
                      ("inference_mode", torch.inference_mode)]:
    out, peak = forward_peak(context)
    print(f"{name:15} forward peak {peak:7.2f} MiB, keeps a graph: {out.grad_fn is not None}")
