"""A GPT-style decoder: token and position embeddings, pre-norm blocks of causal
self-attention (F.scaled_dot_product_attention) and a GELU MLP, the output head tied to the
token embedding, bfloat16 autocast, AdamW. The sizes are module constants: record it at a
GPT-2-small size with --set DIM=768 --set HEADS=12 --set LAYERS=12 --set SEQ=1024
--set VOCAB=50257."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 2
BATCH_SIZES = (2, 4, 8)
AUTOCAST = torch.bfloat16
VOCAB, SEQ, DIM, HEADS, LAYERS, DROPOUT = 512, 64, 64, 4, 2, 0.1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM),
                                 nn.Dropout(DROPOUT))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=DROPOUT if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.head.weight = self.tok.weight  # tied

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def make_model():
    return Decoder()


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4)


def loss_fn(output, target):
    return F.cross_entropy(output.reshape(-1, output.size(-1)), target.reshape(-1))


def make_batch(batch_size):
    tokens = torch.randint(0, VOCAB, (batch_size, SEQ + 1))
    return tokens[:, :-1], tokens[:, 1:]
