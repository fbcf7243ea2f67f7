"""Which tensors `torch.optim.Adam(foreach=True)` allocates and frees inside `optimizer.step()`,
in order, as the installed PyTorch runs it: the fixture
crates/gpumem/tests/fixtures/pytorch_adam_update.json, which the engine's
`foreach_adam_allocates_as_pytorch_does` test replays under `--torch` of the same version.

    python reference/pytorch/adam_update.py --out FILE

With --out FILE the run is merged into FILE under its torch version (other versions' runs
stay), so one file holds 2.0's, 2.1's and today's. Run it once per PyTorch:

    /work/venv20/bin/python reference/pytorch/adam_update.py --out crates/gpumem/tests/fixtures/pytorch_adam_update.json

On the CPU with real tensors: a TorchDispatchMode sees every aten op of the step, and a weakref
finalizer on each tensor an op returns says when PyTorch frees it. A tensor the op returns
that shares its storage with an input (an in-place op, a view) is no allocation and is left out.
The network is the lesson's (Linear(2, H), ReLU, Linear(H, H), ReLU, Linear(H, 2)) at a width
we chose, small enough to run anywhere; two steps of the lesson's loop, the second recorded
(the first also makes the optimizer's state).
"""
import argparse
import datetime
import json
import platform
import sys
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

HIDDEN = 6  # an input we chose: any width gives the same sequence
LAYERS = 2
BATCH = 4


def make_model():
    layers = [nn.Linear(2, HIDDEN), nn.ReLU()]
    for _ in range(LAYERS - 1):
        layers += [nn.Linear(HIDDEN, HIDDEN), nn.ReLU()]
    layers.append(nn.Linear(HIDDEN, 2))
    return nn.Sequential(*layers)


class Allocations(TorchDispatchMode):
    """Every tensor an op makes (not an input's storage), and when it is freed."""

    def __init__(self, params):
        super().__init__()
        self.shapes = [tuple(p.shape) for p in params]
        self.events = []
        self.live = 0
        self.peak = 0
        self.next_id = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = {
            t.untyped_storage().data_ptr()
            for t in torch.utils._pytree.tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        out = func(*args, **kwargs)
        op = func.overloadpacket.__name__
        # A foreach op's outputs are one per parameter, in model.parameters()' order.
        per_param = isinstance(out, (list, tuple)) and len(out) == len(self.shapes)
        for i, t in enumerate(torch.utils._pytree.tree_flatten(out)[0]):
            if not isinstance(t, torch.Tensor):
                continue
            if t.untyped_storage().data_ptr() in inputs:
                continue
            like = i if per_param and tuple(t.shape) == self.shapes[i] else None
            self.record(op, t, like)
        return out

    def record(self, op, t, like):
        size = t.untyped_storage().nbytes()
        ident = self.next_id
        self.next_id += 1
        self.live += size
        self.peak = max(self.peak, self.live)
        self.events.append(
            {"event": "alloc", "id": ident, "op": op, "bytes": size, "param": like}
        )
        weakref.finalize(t, self.freed, ident, size)

    def freed(self, ident, size):
        self.live -= size
        self.events.append({"event": "free", "id": ident})


def run():
    torch.manual_seed(0)
    model = make_model()
    params = list(model.parameters())
    optimizer = torch.optim.Adam(params, lr=0.001, foreach=True)
    x, y = torch.randn(BATCH, 2), torch.randint(0, 2, (BATCH,))
    for step in (1, 2):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if step == 1:
            optimizer.step()
            continue
        mode = Allocations(params)
        with mode:
            optimizer.step()
    param_bytes = sum(p.untyped_storage().nbytes() for p in params)
    sized = [e for e in mode.events if e["event"] == "alloc" and e["param"] is not None]
    return {
        "params": [
            {"name": n, "shape": list(p.shape), "bytes": p.untyped_storage().nbytes()}
            for n, p in model.named_parameters()
        ],
        "param_bytes": param_bytes,
        "events": mode.events,
        "peak_bytes": mode.peak,
        "parameter_sized_allocations": len(sized),
        "peak_over_param_bytes": mode.peak / param_bytes,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="merge this run into FILE (JSON), under its torch version")
    a = ap.parse_args()
    result = run()
    version = torch.__version__
    print(
        f"PyTorch {version}: {result['parameter_sized_allocations']} parameter-sized "
        f"tensors allocated in optimizer.step(); peak {result['peak_bytes']} B of tensors "
        f"made in the step = {result['peak_over_param_bytes']:.3f} x the parameters' "
        f"{result['param_bytes']} B"
    )
    for e in result["events"]:
        if e["event"] == "alloc":
            print(f"  alloc #{e['id']} {e['op']} {e['bytes']} B param={e['param']}")
        else:
            print(f"  free  #{e['id']}")
    if not a.out:
        return
    try:
        with open(a.out) as f:
            doc = json.load(f)
    except FileNotFoundError:
        doc = {
            "method": (
                "torch.optim.Adam(model.parameters(), lr=0.001, foreach=True) on the lesson's "
                f"nn.Sequential Linear(2, {HIDDEN}), ReLU, Linear({HIDDEN}, {HIDDEN}), ReLU, "
                f"Linear({HIDDEN}, 2), float32 on the CPU, batch {BATCH}; step 2's "
                "optimizer.step() under a TorchDispatchMode: each tensor an op returns "
                "that does not share an input's storage is an alloc (param: for a foreach op's "
                "outputs, the index in model.parameters() of the parameter it is for), its "
                "weakref finalizer the free"
            ),
            "runs": {},
        }
    doc["runs"][version] = {
        "torch_version": version,
        "python_version": platform.python_version(),
        "command": "python reference/pytorch/adam_update.py --out " + a.out,
        "created": datetime.date.today().isoformat(),
        **result,
    }
    doc["runs"] = dict(sorted(doc["runs"].items()))
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
