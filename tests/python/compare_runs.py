"""Two tiny training runs' dumps for `crosstrain compare`'s verdict tests, written by the agent.

    compare_runs.py OUT --model gpt|cnn [--threads N] [--bf16] [--plant F] [--insert-op]
                        [--mode stats|tensors] [--width W] [--batch B]

Two optimizer steps (step 0 dumped at module and operator level) of a small GPT (two blocks of
causal self-attention and an MLP) or a small CNN, from seed 0 on the CPU. --threads sets
torch.set_num_threads (another reduction order: the rounding noise two honest runs differ by);
--bf16 runs the forward under bfloat16 autocast; --plant F multiplies the attention scores of
block 1 (GPT) or the output of the second convolution (CNN) by F (a real change of F - 1);
--insert-op adds one operator (an addition of 0) in block 0's MLP.
"""
import argparse
import math
import sys

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--model", choices=["gpt", "cnn"], default="gpt")
p.add_argument("--threads", type=int, default=1)
p.add_argument("--bf16", action="store_true")
p.add_argument("--plant", type=float, default=1.0)
p.add_argument("--insert-op", action="store_true")
p.add_argument("--mode", choices=["stats", "tensors"], default="stats")
p.add_argument("--width", type=int, default=64, help="GPT: embedding width (heads of 16)")
p.add_argument("--batch", type=int, default=8)
args = p.parse_args()

import crosstrain  # noqa: E402

crosstrain.start(dump=args.out, dump_steps="0", dump_level="both", dump_mode=args.mode, dump_overwrite=True,
                 meta={"precision": "bf16" if args.bf16 else "fp32", "threads": args.threads})

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, dim, heads, plant):
        super().__init__()
        self.heads, self.plant = heads, plant
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        # A learned offset of every score: softmax ignores it, so its gradient is zero in exact
        # arithmetic and rounding noise in practice (what a bias before a normalisation gets).
        self.offset = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scale = self.plant / math.sqrt(c // self.heads)
        att = (q @ k.transpose(-2, -1)) * scale + self.offset
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim, heads, plant, insert_op):
        super().__init__()
        self.insert_op = insert_op
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, plant)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        h = F.gelu(self.fc(self.ln2(x)))
        if self.insert_op:
            h = h + 0.0  # one more aten.add in this module, between its two residual adds
        return x + self.out(h)


class GPT(nn.Module):
    def __init__(self, vocab=64, dim=args.width, heads=args.width // 16, layers=2, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(
            Block(dim, heads, args.plant if i == 1 else 1.0, args.insert_op and i == 0) for i in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.conv2, self.bn2 = nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)
        x = self.conv2(x)
        if args.plant != 1.0:
            x = x * args.plant
        x = F.relu(self.bn2(x))
        return self.fc(x.mean(dim=(2, 3)))


if args.model == "gpt":
    model = GPT()
    x = torch.randint(0, 64, (args.batch, 16))
    y = torch.randint(0, 64, (args.batch, 16))
    loss_of = lambda out: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))  # noqa: E731
else:
    model = CNN()
    x = torch.randn(args.batch, 3, 16, 16)
    y = torch.randint(0, 10, (args.batch,))
    loss_of = lambda out: F.cross_entropy(out, y)  # noqa: E731
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
        out = model(x)
    loss = loss_of(out.float())
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"{args.out}: loss {loss.item():.6f}", file=sys.stderr)
