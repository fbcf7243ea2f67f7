"""A template written for a GPU, as a script for one would be: the device chosen by
torch.cuda.is_available(), the model moved with .to(DEVICE), the batch made on the host and
moved with .cuda(), labels made on the card, autocast("cuda"), torch.compile and a
synchronize in its own step."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (4, 8, 16)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_model():
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(64, 4)).to(DEVICE)
    return torch.compile(model)


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def make_batch(batch_size):
    x = torch.randn(batch_size, 16).cuda()  # host tensor, then its copy on the card
    y = torch.randint(0, 4, (batch_size,), device=DEVICE)
    return x, y


def step(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    return loss
