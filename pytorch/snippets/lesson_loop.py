"""The lesson's training loop: a fully connected network, cross-entropy, one optimizer step per
mini-batch. Runs anywhere (CUDA if present, else the CPU) at a small size."""
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

# ANCHOR: model
hidden_size = 2000
model = nn.Sequential(
    nn.Linear(2, hidden_size), nn.ReLU(),  # one hidden layer, as the lesson
    nn.Linear(hidden_size, 2),
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)  # as the challenges
# ANCHOR_END: model

# Stand-in data: 2 features, 2 classes (the lesson's own data set has 1,173,000 rows).
x_all = torch.randn(4096, 2)
y_all = (x_all[:, 0] * x_all[:, 1] > 0).long()  # labels are int64, as cross_entropy wants
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(x_all, y_all), batch_size=32, shuffle=True)

# ANCHOR: loop
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # one mini-batch on the device
        optimizer.zero_grad()              # gradients to None (PyTorch 2.x)
        y_pred = model(x)
        loss = F.cross_entropy(y_pred, y)
        loss.backward()
        optimizer.step()
        total += loss.item()               # a number: keeps no graph alive
    print(f"epoch {epoch}: mean loss {total / len(loader):.4f}")
# ANCHOR_END: loop
