"""Evaluation without the autograd graph: under no_grad (or inference_mode) a forward pass keeps
no activations for a backward pass that will never come. Each mode's peak is its own: the
previous mode's output (and with it any graph) is freed before the next is measured."""
import torch

from measure import MiB, batch, device, lesson_model, mem_tracker

model = lesson_model(width=2000, layers=4)
x, _ = batch(8192)


def forward_peak(context):
    """Whether the forward pass kept a graph, and its peak (the model's weights included)."""
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()   # from what is alive now: the model and x
        with context():
            out = model(x)
        return out.grad_fn is not None, torch.cuda.max_memory_allocated() / MiB
    mt = mem_tracker()                         # MemTracker, on the CPU only
    mt.track_external(model)
    with mt, context():
        out = model(x)
    peak = mt.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    return out.grad_fn is not None, peak / MiB


# ANCHOR: eval
model.eval()
with torch.inference_mode():      # or torch.no_grad(): no graph, no kept activations
    y_pred = model(x)
# ANCHOR_END: eval
del y_pred

for name, context in [("with autograd", torch.enable_grad), ("no_grad", torch.no_grad),
                      ("inference_mode", torch.inference_mode)]:
    graph, peak = forward_peak(context)   # its output, and the graph, die on return
    print(f"{name:15} forward peak {peak:7.2f} MiB, keeps a graph: {graph}")
