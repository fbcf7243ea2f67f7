"""The lesson's network (2 -> 100 -> 2, ReLU, float32), two steps of its loop, ADAM at lr 0.001:
the engine's MlpConfig::lesson(100) with the same optimizer."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (64, 96, 128)


def make_model():
    return nn.Sequential(nn.Linear(2, 100), nn.ReLU(), nn.Linear(100, 2))


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=0.001)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return torch.randn(batch_size, 2), torch.randint(0, 2, (batch_size,))
