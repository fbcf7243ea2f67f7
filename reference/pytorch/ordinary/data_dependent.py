"""A step whose tensors' sizes depend on the data: a boolean mask, nonzero, unique and a
value read with .item()."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)


def make_model():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)


def make_batch(batch_size):
    return torch.randn(batch_size, 16), torch.randint(0, 4, (batch_size,))


def loss_fn(output, target):
    confident = output[output.max(dim=1).values > 0]  # data: a boolean mask
    positive = torch.nonzero(target)  # data: nonzero
    classes = torch.unique(target)  # data: unique
    if target.float().mean().item() > 10:  # data: a value read
        return F.cross_entropy(output, target) * 2
    extra = confident.sum() + positive.float().sum() + classes.float().sum()
    return F.cross_entropy(output, target) + 0 * extra
