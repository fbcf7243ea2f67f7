"""A CNN and a GRU over detector traces: 1-d convolutions over 4 channels of 2048 samples
each (a waveform per event), downsampled by 8, a two-layer GRU over the 256 steps left, and a
linear head on its last state; Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)
CHANNELS, SAMPLES, HIDDEN, CLASSES = 4, 2048, 64, 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv1d(CHANNELS, 32, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool1d(2))
        self.gru = nn.GRU(64, HIDDEN, num_layers=2, batch_first=True)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, traces):
        features = self.cnn(traces).transpose(1, 2)  # (batch, steps, 64)
        out, _ = self.gru(features)
        return self.head(out[:, -1])


def make_model():
    return Net()


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return (torch.randn(batch_size, CHANNELS, SAMPLES),
            torch.randint(0, CLASSES, (batch_size,)))
