"""An MLP whose two hidden blocks are checkpointed (non-reentrant): their activations are
recomputed in the backward pass. SGD; a custom step."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)

from torch.utils.checkpoint import checkpoint  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(32 if i == 0 else 64, 64), nn.ReLU(), nn.Linear(64, 64),
                          nn.ReLU()) for i in range(2))
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return self.head(x)


def make_model():
    return Net()


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.01)


def make_batch(batch_size):
    return torch.randn(batch_size, 32), torch.randint(0, 4, (batch_size,))


def step(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss
