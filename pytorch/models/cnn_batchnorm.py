"""A small CNN with BatchNorm (running statistics are buffers), SGD with momentum."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)


def make_model():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return torch.randn(batch_size, 3, 8, 8), torch.randint(0, 10, (batch_size,))
