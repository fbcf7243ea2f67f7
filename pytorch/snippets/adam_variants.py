"""Adam's three implementations hold different temporaries in the update: `foreach` (CUDA's
default) works on whole lists of tensors at once, `fused` in one kernel, the for-loop one
parameter at a time."""
import torch
import torch.nn.functional as F

from measure import batch, lesson_model, peak_mib, where

x, y = batch(32)

# ANCHOR: adam
implementations = {
    "foreach": {"foreach": True},    # CUDA's default: whole lists of tensors at once
    "fused": {"fused": True},        # the whole update in one kernel
    "for-loop": {"foreach": False},  # one parameter at a time
}
# e.g. torch.optim.Adam(model.parameters(), lr=0.001, fused=True)
# ANCHOR_END: adam

print(f"8 hidden layers of 2000, batch 32 ({where()}):")
for name, options in implementations.items():
    model = lesson_model(width=2000, layers=8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, **options)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    print(f"  {name:8} {peak_mib(model, optimizer, step):7.2f} MiB")
