"""One training step of the ViT or GPT-2 of tests/python/run_scripts (same model, batch 4), dumped by
MindStudio Probe's PrecisionDebugger (task "tensor", level L1: every torch API call with its
inputs), for comparing its acc_check with `crosstrain op-check --from-dump`.
usage: PYTHONPATH=<msprobe install> python bench/msprobe_step.py vit|gpt2 OUT_DIR"""
import json
import os
import sys

import torch

model_name, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(1)
os.makedirs(out, exist_ok=True)
config = os.path.join(out, "config.json")
with open(config, "w") as f:
    json.dump({"task": "tensor", "dump_path": out, "rank": [], "step": [], "level": "L1",
               "tensor": {"scope": [], "list": [], "data_mode": ["all"]}}, f)
from msprobe.pytorch import PrecisionDebugger  # noqa: E402

debugger = PrecisionDebugger(config_path=config)
if model_name == "vit":
    import timm
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2,
                              num_classes=10, drop_rate=0.1)
    x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    loss_fn = lambda: torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)  # noqa: E731
else:
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=2))
    x = torch.randint(0, 128, (4, 16))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = lambda: model(input_ids=x, labels=x).loss  # noqa: E731
model.train()
debugger.start(model)
loss = loss_fn()
opt.zero_grad(set_to_none=True)
loss.backward()
opt.step()
debugger.stop()
debugger.step()
