"""Small-operator models for bench/agent_overhead.py: what many moved models look like per
operator (norms, activations, residual adds, attention glue), where a recorder's cost per operator
shows most.

  TinyGPT       a character-level GPT (pre-norm blocks, causal attention written out, GELU MLP)
  ManyLayerCNN  a deep, narrow CNN (conv, batch norm, ReLU, a residual add every two layers)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        weights = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=65, width=64, layers=4, heads=4, context=64):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


class ConvBN(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ManyLayerCNN(nn.Module):
    """depth ConvBN layers in three stages of widths (16, 32, 64), a residual add every two."""
    def __init__(self, depth=24, classes=10):
        super().__init__()
        widths = (16, 32, 64)
        self.stem = ConvBN(3, widths[0])
        layers, cin = [], widths[0]
        for i in range(depth):
            cout = widths[min(i * len(widths) // depth, len(widths) - 1)]
            layers.append(ConvBN(cin, cout, 2 if cout != cin else 1))
            cin = cout
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.stem(x)
        for i in range(0, len(self.layers) - 1, 2):
            y = self.layers[i + 1](self.layers[i](x))
            x = y + x if y.shape == x.shape else y
        return self.head(x.mean((2, 3)))
