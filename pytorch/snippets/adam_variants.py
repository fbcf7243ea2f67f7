"""Adam's three implementations hold different temporaries in the update: `foreach` (CUDA's
default) works on whole lists of tensors at once, `fused` in one kernel, the for-loop one
parameter at a time."""
import torch
import torch.nn.functional as F

from measure import batch, lesson_model, peak_mib, where

x, y = batch(32)

print(f"8 hidden layers of 2000, batch 32 ({where()}):")
for name, options in [("foreach", {"foreach": True}),
                      ("fused", {"fused": True}),
                      ("for-loop", {"foreach": False})]:
    model = lesson_model(width=2000, layers=8)
    # ANCHOR: adam
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, **options)
    # ANCHOR_END: adam

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    print(f"  {name:8} {peak_mib(model, optimizer, step):7.2f} MiB")
