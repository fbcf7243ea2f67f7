"""Mixed precision: the forward pass's matrix products in a 16-bit type under autocast, the
parameters and optimizer state still float32, and a GradScaler against float16's underflow.
On the CPU autocast uses bfloat16 (no scaler needed); on CUDA float16 with the scaler."""
import torch
import torch.nn.functional as F

from measure import batch, device, lesson_model, peak_mib, where

model = lesson_model(width=2000, layers=4)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
x, y = batch()
dtype = torch.float16 if device == "cuda" else torch.bfloat16


def float32_step():
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


# ANCHOR: amp
scaler = torch.amp.GradScaler(device, enabled=(dtype == torch.float16))


def mixed_step():
    optimizer.zero_grad()
    with torch.autocast(device_type=device, dtype=dtype):
        loss = F.cross_entropy(model(x), y)   # products in 16 bits, the loss in float32
    scaler.scale(loss).backward()             # scaled, so small gradients survive float16
    scaler.step(optimizer)                    # unscales; skips the step on inf/NaN
    scaler.update()                           # grows or shrinks the scale
# ANCHOR_END: amp


print(f"4 hidden layers of 2000, batch 4096, Adam ({where()}, autocast to {dtype}):")
print(f"  float32 {peak_mib(model, optimizer, float32_step):7.2f} MiB")
print(f"  mixed   {peak_mib(model, optimizer, mixed_step):7.2f} MiB")
