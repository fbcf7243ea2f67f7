"""An MLP with dropout, SGD with momentum (one momentum buffer per parameter after step 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)


def make_model():
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 64),
                         nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return torch.randn(batch_size, 16), torch.randint(0, 4, (batch_size,))
