"""The lesson's network as the engine builds it (``MlpConfig::lesson(HIDDEN).with_layers(LAYERS)``),
for the recorder (pytorch/record.py): Linear(2, HIDDEN), ReLU, then (LAYERS - 1) x
[Linear(HIDDEN, HIDDEN), ReLU], then Linear(HIDDEN, 2); float32; cross_entropy on int64
targets; inputs randn(B, 2); STEPS steps of the lesson's loop. HIDDEN, LAYERS and OPTIMIZER are
module constants for ``--set`` (or ``record.record(..., overrides=...)``):

    python pytorch/record.py reference/pytorch/lesson_step.py --set HIDDEN=5000 --set LAYERS=34 \\
        --set OPTIMIZER=adam --out c2_adam_34.pickle

reference/pytorch/record_lesson.py records the lesson's fixtures with it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (32, 48, 64)
HIDDEN = 2000  # width of every hidden layer
LAYERS = 1  # hidden layers (each Linear + ReLU)
OPTIMIZER = "sgd"  # "sgd": SGD(lr=0.001), the lesson's; "adam": Adam(lr=0.001)


def make_model():
    if not isinstance(LAYERS, int) or LAYERS < 1:
        raise ValueError(f"LAYERS must be an int of at least 1, not {LAYERS!r}")
    layers = [nn.Linear(2, HIDDEN), nn.ReLU()]
    for _ in range(LAYERS - 1):
        layers += [nn.Linear(HIDDEN, HIDDEN), nn.ReLU()]
    layers.append(nn.Linear(HIDDEN, 2))
    return nn.Sequential(*layers)


def make_optimizer(model):
    # foreach left unset: the recorder sets CUDA's choice (foreach=True).
    if OPTIMIZER == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.001)
    if OPTIMIZER == "adam":
        return torch.optim.Adam(model.parameters(), lr=0.001)
    raise ValueError(f"OPTIMIZER must be 'sgd' or 'adam', not {OPTIMIZER!r}")


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return torch.randn(batch_size, 2), torch.randint(0, 2, (batch_size,))
