"""The training script of bench/run_profile_overhead.py: tests/python/profile_scripts/train_vit.py's
loop (timm's ViT, AdamW, a DataLoader over tensors in memory) for --steps steps, and, with
--torch-profiler DIR, torch.profiler added the way its documentation shows (a schedule, a trace
per cycle, prof.step() after each optimizer step). Prints one JSON line: the loop's wall and CPU
seconds."""
import argparse
import json
import time

import timm
import torch

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--torch-profiler", default="", help="record with torch.profiler into this folder")
p.add_argument("--no-stack", action="store_true", help="torch.profiler without Python stacks and module spans")
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)

model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=4, num_classes=10)
images, labels = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=16, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

prof = None
if args.torch_profiler:
    from torch.profiler import ProfilerActivity, profile, schedule
    stack = not args.no_stack
    prof = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                   on_trace_ready=lambda p: p.export_chrome_trace(f"{args.torch_profiler}/trace.{p.step_num}.json"),
                   with_stack=stack, with_modules=stack)
    prof.start()

wall, cpu = time.perf_counter(), time.process_time()
step = 0
while step < args.steps:
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if prof is not None:
            prof.step()
        step += 1
        if step == args.steps:
            break
if prof is not None:
    prof.stop()
print(json.dumps({"loop_wall_s": time.perf_counter() - wall, "loop_cpu_s": time.process_time() - cpu,
                  "loss": loss.item()}))
