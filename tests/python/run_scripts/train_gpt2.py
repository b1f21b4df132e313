"""A Hugging Face transformers GPT-2 built from a small config (no download) trained as a language
model: the loss comes out of the model (labels=...), dropout is on."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from common import loader, parse_args, train

args = parse_args(__doc__)
config = GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)
tokens = torch.randint(0, 128, (32, 16))
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
train(args, model, loader(tokens, tokens, args.batch_size), lambda m, x, y: m(input_ids=x, labels=y).loss, opt)
