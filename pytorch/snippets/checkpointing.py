"""Activation checkpointing: keep only some activations for the backward pass and recompute the
rest. `use_reentrant=False` is the variant PyTorch recommends, and 2.x wants it said."""
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from measure import batch, lesson_model, peak_mib, where

model = lesson_model(width=1000, layers=8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
x, y = batch()


def plain():
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


# ANCHOR: checkpoint
class Checkpointed(torch.nn.Module):
    """The same layers, keeping only the input of each of `segments` segments for the
    backward pass, which recomputes the rest."""

    def __init__(self, layers, segments):
        super().__init__()
        self.layers, self.segments = layers, segments

    def forward(self, x):
        return checkpoint_sequential(self.layers, self.segments, x, use_reentrant=False)


checkpointed = Checkpointed(model, segments=4)


# One function by hand: its inside is recomputed, only its input is kept.
def first_block(t):
    return model[1](model[0](t))


h = checkpoint(first_block, x, use_reentrant=False)
# ANCHOR_END: checkpoint

print(f"8 hidden layers of 1000, batch 4096, SGD ({where()}):")
print(f"  plain        {peak_mib(model, optimizer, plain):7.2f} MiB")


def checkpointed_step():
    optimizer.zero_grad()
    F.cross_entropy(checkpointed(x), y).backward()
    optimizer.step()


print(f"  checkpointed {peak_mib(checkpointed, optimizer, checkpointed_step):7.2f} MiB")
