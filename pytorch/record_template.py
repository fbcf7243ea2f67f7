"""Your own training step, for the recorder. Copy this file, edit it, then run

    python pytorch/record.py my_step.py --out my_step.pickle

The recorder runs STEPS training steps under FakeTensorMode (tensors with shapes and no
storage: no GPU, no memory, any size) and writes the memory snapshot PyTorch would have
recorded. Replay it on a card with `cargo run --release -p memviz -- replay my_step.pickle
--card 16GiB --largest-batch` (the book's "Your own model"); PyTorch's viewer draws it too.
Running this file itself records it and prints the summary (nothing is written).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# ANCHOR: settings
STEPS = 2  # training steps to record
BATCH_SIZES = (4, 8, 16)  # three batch sizes: the first is recorded, all three fit B -> bytes
AUTOCAST = None  # e.g. torch.float16: the default step runs forward + loss under autocast
GRAD_SCALER = False  # True: the default step scales the loss (torch.amp.GradScaler)
# ANCHOR_END: settings


# ANCHOR: yours
def make_model():
    # Your network. A .to("cuda") here is fine: the recorder puts it on the card as that does.
    return nn.Sequential(nn.Linear(2, 100), nn.ReLU(), nn.Linear(100, 2))


def make_optimizer(model):
    # Leave foreach unset: the recorder sets what CUDA picks (foreach=True) and says so.
    return torch.optim.SGD(model.parameters(), lr=0.001)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    # One batch of `batch_size` rows, as your data loader hands it to the GPU.
    x = torch.randn(batch_size, 2)
    y = torch.randint(0, 2, (batch_size,))  # cross_entropy's targets are int64
    return x, y
# ANCHOR_END: yours


# Optional: your own step. Without it the recorder runs
#     optimizer.zero_grad(set_to_none=True); out = model(x); loss = loss_fn(out, y)
#     loss.backward(); optimizer.step()
# (with AUTOCAST and GRAD_SCALER as set above; `out` and `loss` are loop variables: the
# previous step's die when the next forward assigns them). What your step returns stays
# alive until the next step returns (keep nothing you do not mean to keep).
#
# def step(model, optimizer, batch):
#     x, y = batch
#     optimizer.zero_grad(set_to_none=True)
#     loss = loss_fn(model(x), y)
#     loss.backward()
#     optimizer.step()
#     return loss


if __name__ == "__main__":
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    # Beside record.py (pytorch/), or a copy at the repository's root.
    sys.path[:0] = [here, os.path.join(here, "pytorch")]
    import record

    sys.exit(record.main([__file__]))
