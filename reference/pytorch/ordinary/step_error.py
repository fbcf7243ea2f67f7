"""A step with a mistake: the target has 3 columns, the model gives 4."""
import torch
import torch.nn as nn

STEPS = 1


def make_model():
    return nn.Linear(8, 4)


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)


def make_batch(batch_size):
    return torch.randn(batch_size, 8), torch.randn(batch_size, 3)


def loss_fn(output, target):
    return ((output - target) ** 2).mean()  # the mistake
