"""A ResNet-style CNN on 224 x 224 images: a strided stem, residual basic blocks
(convolution, BatchNorm, ReLU, a projection where the shape changes), global average pooling
and a linear classifier; SGD with momentum."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (2, 4, 8)
SIZE, WIDTH, CLASSES = 224, 16, 10


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.short(x))


def make_model():
    w = WIDTH
    return nn.Sequential(
        nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        BasicBlock(w, w, 1), BasicBlock(w, 2 * w, 2), BasicBlock(2 * w, 4 * w, 2),
        BasicBlock(4 * w, 8 * w, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8 * w, CLASSES))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def make_batch(batch_size):
    return (torch.randn(batch_size, 3, SIZE, SIZE),
            torch.randint(0, CLASSES, (batch_size,)))
