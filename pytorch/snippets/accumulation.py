"""Gradient accumulation: the same update from k smaller micro-batches. The activations shrink
by k; the gradients, now alive across the micro-batches, do not."""
import torch
import torch.nn.functional as F

from measure import batch, lesson_model, peak_mib, where

model = lesson_model(width=2000, layers=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
x, y = batch(8192)


def whole_batch():
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


# ANCHOR: accumulate
k = 4  # micro-batches per update


def accumulated():
    optimizer.zero_grad()
    for xs, ys in zip(x.chunk(k), y.chunk(k)):
        loss = F.cross_entropy(model(xs), ys) / k   # each micro-batch's share of the mean
        loss.backward()                             # adds into every .grad
    optimizer.step()                                # one update for the whole batch
# ANCHOR_END: accumulate


print(f"2 hidden layers of 2000, batch 8192, SGD ({where()}):")
print(f"  one batch        {peak_mib(model, optimizer, whole_batch):7.2f} MiB")
print(f"  {k} micro-batches {peak_mib(model, optimizer, accumulated):7.2f} MiB")
