"""An MLP under autocast (float16) with a GradScaler, Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)

AUTOCAST = torch.float16
GRAD_SCALER = True


def make_model():
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 4))


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return torch.randn(batch_size, 16), torch.randint(0, 4, (batch_size,))
