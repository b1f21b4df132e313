#!/usr/bin/env python3
"""What crosstrain's in-process agent (`crosstrain run`) costs a training step, next to MindStudio
Probe's statistics dump (msprobe, the Ascend precision tool) on the same model and loop.

Every (workload, variant) runs in a fresh process; the variants take turns (A B C D ... A B C D ...)
for several rounds, so load from other work on a shared machine falls on all of them alike. Each
process times every step of one training loop and the first --warmup steps are left out. Variants:

  plain          the loop alone
  mode-floor     an empty TorchDispatchMode around the loop: what any recorder of every operator in
                 Python pays before it records anything (the agent's operator level runs in one)
  agent-idle     the agent loaded, nothing asked (`crosstrain run -- python train.py`): step counting
  agent-module   module-level statistics of every step (`--dump D --dump-steps '' --dump-level module`)
  agent-op       operator-level statistics of every step (`--dump-level op`)
  agent-tensors  module level in tensors mode (--tensors only)
  agent-op-no-stats, agent-op-no-lines, agent-op-no-write   --breakdown: operator level with one
                 part of each record's work replaced by nothing in the worker (statistics, the
                 source-line walk, the JSON lines and their write): what that part costs
  agent-module-py, agent-op-py   the same with the statistics in Python (--python-stats: without the
                 compiled library, CROSSTRAIN_AGENT_NATIVE=0, as a `pip install`ed agent runs)
  msprobe-L0     msprobe task "statistics", level L0 (modules), every step
  msprobe-L1     msprobe task "statistics", level L1 (torch APIs), every step
  LABEL:module, LABEL:op   --other-agent LABEL=DIR: the same with another copy of the agent (DIR holds
                 crosstrain/, e.g. a proposed change), measured in the same turns

The agent is loaded the way `crosstrain run` loads it (PYTHONPATH=python/crosstrain/_boot and
CROSSTRAIN_AGENT_CONFIG); msprobe needs calls in the loop (PrecisionDebugger start/stop/step), which
the same loop makes only in its msprobe processes. One intra-op thread, so a step's process CPU time
is its work; other load moves it less than wall time (though by up to 1.6x between processes on a
2-vCPU machine at load 15), so ratios come from CPU time against the plain run of the same round,
with the rounds' spread and the wall-time ratio next to them. Before the rounds, the agent's own work
at a step boundary is timed on its own (a one-element SGD step, 20,000 times), far below that noise.

usage: .venv/bin/python bench/agent_overhead.py [--quick] [--rounds N] [--steps N] [--warmup N]
           [--workloads gpt2,vit_s,resnet50,tiny_gpt,cnn_many] [--tensors] [--python-stats] [--breakdown] [--msprobe-path DIR] [--other-agent LABEL=DIR]
           [--json FILE]
msprobe is looked up in --msprobe-path (or $MSPROBE_PATH), appended to sys.path so that the packages
of .venv win; without it the msprobe variants are left out with a note.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOT = os.path.join(ROOT, "python", "crosstrain", "_boot")

# name -> (what it is, full size, --quick size)
WORKLOADS = {
    "gpt2": ("transformers GPT-2, {layers} layers, d=256, 4 heads, vocab 8192, 128 tokens, batch {batch}, AdamW",
             {"batch": 4, "layers": 4}, {"batch": 2, "layers": 2}),
    "vit_s": ("timm vit_small_patch16_224 at {image} px, 100 classes, batch {batch}, AdamW",
              {"batch": 4, "image": 112}, {"batch": 2, "image": 64}),
    "resnet50": ("timm resnet50 at {image} px, 100 classes, batch {batch}, SGD momentum",
                 {"batch": 8, "image": 128}, {"batch": 2, "image": 64}),
    "tiny_gpt": ("character GPT (bench/small_models.py), {layers} layers, d={width}, 4 heads, 64 tokens, batch {batch}, "
                 "AdamW", {"batch": 16, "layers": 4, "width": 64}, {"batch": 4, "layers": 2, "width": 32}),
    "cnn_many": ("CNN of {depth} conv-BN-ReLU layers (bench/small_models.py), 32 px, batch {batch}, SGD momentum",
                 {"batch": 16, "depth": 24}, {"batch": 4, "depth": 8}),
}
AGENT_VARIANTS = {
    "agent-idle": {},
    "agent-module": {"dump_level": "module"},
    "agent-op": {"dump_level": "op"},
    "agent-tensors": {"dump_level": "module", "dump_mode": "tensors"},
    "agent-module-py": {"dump_level": "module"},
    "agent-op-py": {"dump_level": "op"},
    "agent-op-no-stats": {"dump_level": "op"},
    "agent-op-no-lines": {"dump_level": "op"},
    "agent-op-no-write": {"dump_level": "op"},
}
ABLATIONS = ("no-stats", "no-lines", "no-write")
# The agent's compiled statistics, as `crosstrain run` hands them over (built by scripts/build.sh).
NATIVE = os.path.join(ROOT, "build", "libcrosstrain_tensor_stats.so")
MSPROBE_VARIANTS = {"msprobe-L0": "L0", "msprobe-L1": "L1"}


# -- the training loop (worker processes) ---------------------------------------------------------
def build(name, size, torch):
    """(model, batches, loss_fn, optimizer) with synthetic data drawn from a fixed seed."""
    g = torch.Generator().manual_seed(0)
    batch = size["batch"]
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(vocab_size=8192, n_positions=128, n_embd=256, n_layer=size["layers"],
                                           n_head=4))
        tokens = [torch.randint(0, 8192, (batch, 128), generator=g) for _ in range(4)]
        batches = [(t, t) for t in tokens]

        def loss_fn(m, x, y):
            return m(input_ids=x, labels=y).loss
        return model, batches, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-4)
    if name in ("tiny_gpt", "cnn_many"):
        return build_small(name, size, torch, g)
    import timm
    torch.manual_seed(0)
    px = size["image"]
    if name == "vit_s":
        model = timm.create_model("vit_small_patch16_224", pretrained=False, img_size=px, num_classes=100)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)
    else:
        model = timm.create_model("resnet50", pretrained=False, num_classes=100)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    batches = [(torch.randn(batch, 3, px, px, generator=g), torch.randint(0, 100, (batch,), generator=g))
               for _ in range(4)]

    def loss_fn(m, x, y):
        return torch.nn.functional.cross_entropy(m(x), y)
    return model, batches, loss_fn, opt


def build_small(name, size, torch, g):
    import small_models
    torch.manual_seed(0)
    batch = size["batch"]
    if name == "tiny_gpt":
        model = small_models.TinyGPT(width=size["width"], layers=size["layers"])
        text = [torch.randint(0, 65, (batch, 65), generator=g) for _ in range(4)]
        batches = [(t[:, :-1], t[:, 1:]) for t in text]

        def loss_fn(m, x, y):
            return torch.nn.functional.cross_entropy(m(x).reshape(-1, 65), y.reshape(-1))
        return model, batches, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-3)
    model = small_models.ManyLayerCNN(depth=size["depth"])
    batches = [(torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g))
               for _ in range(4)]

    def loss_fn(m, x, y):
        return torch.nn.functional.cross_entropy(m(x), y)
    return model, batches, loss_fn, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def ablate(part):
    """Replaces one part of the agent's per-record work by nothing (--breakdown; the dump is then not
    a valid one): the statistics, the source-line walk, or the JSON lines and their write."""
    import crosstrain._dumpfile as dumpfile
    import crosstrain._source as source
    import crosstrain._stats as stats
    if part == "no-stats":
        stats.device_vector = lambda t: [0.0, 0.0, 0.0, 0.0, 0, 0, 1]
    elif part == "no-lines":
        source.where = lambda skip=1: (None, None)
    elif part == "no-write":
        dumpfile.DumpFile.flush = dumpfile.DumpFile.drop_pending


def empty_dispatch_mode(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Empty(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):  # as the agent's mode: no dynamo wrapper per operator
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    return Empty()


def worker(args):
    if args.msprobe_config:
        sys.path.append(args.msprobe_path)
    import torch
    torch.set_num_threads(args.threads)
    size = WORKLOADS[args.worker][2 if args.quick else 1]
    model, batches, loss_fn, opt = build(args.worker, size, torch)
    debugger = None
    if args.msprobe_config:
        from msprobe.pytorch import PrecisionDebugger
        debugger = PrecisionDebugger(config_path=args.msprobe_config)
    model.train()
    if args.ablate:
        ablate(args.ablate)
    if args.mode_floor:
        empty_dispatch_mode(torch).__enter__()
    wall, cpu = [], []
    for step in range(args.steps):
        x, y = batches[step % len(batches)]
        w0, c0 = time.perf_counter(), time.process_time()
        if debugger is not None:
            debugger.start(model=model)
        loss = loss_fn(model, x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if debugger is not None:
            debugger.stop()
            debugger.step()
        loss.item()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    with open(args.result, "w") as f:
        json.dump({"wall": wall, "cpu": cpu}, f)


def hook_cost(args):
    """CPU seconds per optimizer.step() of a one-element SGD: with the agent loaded this is the
    agent's own work at a step boundary plus a constant, measured far below the noise of a step."""
    import torch
    torch.set_num_threads(1)
    p = torch.nn.Parameter(torch.zeros(1))
    p.grad = torch.zeros(1)
    opt = torch.optim.SGD([p], lr=0.0)
    for _ in range(2000):
        opt.step()
    best = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(20000):
            opt.step()
        best.append((time.process_time() - c0) / 20000)
    with open(args.result, "w") as f:
        json.dump({"per_step": min(best)}, f)


def measure_hook_cost(scratch, rounds):
    """Microseconds the agent adds per step when it records nothing (loaded, nothing asked) and on
    steps it does not dump (--dump with the default --dump-steps 0), against no agent, taking turns."""
    result = os.path.join(scratch, "hook.json")
    configs = {"none": None, "idle": {}, "undumped": {"dump": os.path.join(scratch, "hook-dump")}}
    times = {k: [] for k in configs}
    for _ in range(rounds):
        for name, options in configs.items():
            env = dict(os.environ)
            env.pop("CROSSTRAIN_AGENT_CONFIG", None)
            if options is not None:
                env["PYTHONPATH"] = BOOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
                env["CROSSTRAIN_AGENT_CONFIG"] = json.dumps(options)
            shutil.rmtree(os.path.join(scratch, "hook-dump"), ignore_errors=True)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--hook-cost", "--result", result], env=env,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(result) as f:
                times[name].append(json.load(f)["per_step"])
    base = statistics.median(times["none"])
    return {k: (statistics.median(v) - base) * 1e6 for k, v in times.items() if k != "none"}, base * 1e6


# -- the driver -----------------------------------------------------------------------------------
def count_records(variant, dump_dir, steps):
    """Statistics records per dumped step (agent: index.jsonl lines; msprobe: tensors with a Max in the
    last step's dump.json)."""
    if (variant.startswith("agent-") and variant != "agent-idle") or ":" in variant:
        path = os.path.join(dump_dir, "index.jsonl")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return (sum(1 for _ in f) - 1) / steps
    if variant.startswith("msprobe-"):
        found = []
        for base, _, files in os.walk(os.path.join(dump_dir, f"step{steps - 1}")):
            if "dump.json" in files:
                found.append(os.path.join(base, "dump.json"))
        if not found:
            return None
        with open(found[0]) as f:
            return _count_stats(json.load(f).get("data", {}))
    return None


def _count_stats(value):
    if isinstance(value, dict):
        return (1 if "Max" in value else 0) + sum(_count_stats(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_stats(v) for v in value)
    return 0


def run_variant(args, workload, variant, scratch):
    dump_dir = os.path.join(scratch, "dump")
    shutil.rmtree(dump_dir, ignore_errors=True)
    result = os.path.join(scratch, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", workload, "--steps", str(args.steps),
           "--threads", str(args.threads), "--result", result] + (["--quick"] if args.quick else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    env.pop("CROSSTRAIN_AGENT_CONFIG", None)
    if variant.startswith("agent-") or ":" in variant:
        label, _, level = variant.partition(":")
        options = dict(AGENT_VARIANTS[f"agent-{level}"] if level else AGENT_VARIANTS[variant])
        if options:
            options.update(dump=dump_dir, dump_steps="")
        boot = os.path.join(args.other_agents[label], "crosstrain", "_boot") if level else BOOT
        env["PYTHONPATH"] = boot + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["CROSSTRAIN_AGENT_CONFIG"] = json.dumps(options)
        env["CROSSTRAIN_AGENT_NATIVE"] = "0" if variant.endswith("-py") else NATIVE
        part = variant[len("agent-op-"):] if variant.startswith("agent-op-no-") else ""
        if part:
            cmd += ["--ablate", part]
    elif variant == "mode-floor":
        cmd.append("--mode-floor")
    elif variant.startswith("msprobe-"):
        config = os.path.join(scratch, "msprobe.json")
        with open(config, "w") as f:
            json.dump({"task": "statistics", "dump_path": dump_dir, "rank": [], "step": [],
                       "level": MSPROBE_VARIANTS[variant], "statistics": {"scope": [], "list": [],
                                                                        "data_mode": ["all"],
                                                                        "summary_mode": "statistics"}}, f)
        cmd += ["--msprobe-config", config, "--msprobe-path", args.msprobe_path]
    log = os.path.join(scratch, f"{workload}-{variant}.log")
    with open(log, "w") as out:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0 or not os.path.exists(result):
        with open(log) as f:
            tail = f.read()[-1500:]
        raise RuntimeError(f"{workload} / {variant} failed (exit {rc}):\n{tail}")
    with open(result) as f:
        times = json.load(f)
    os.remove(result)
    records = count_records(variant, dump_dir, args.steps)
    shutil.rmtree(dump_dir, ignore_errors=True)
    keep = slice(args.warmup, None)
    return {"wall": statistics.median(times["wall"][keep]), "cpu": statistics.median(times["cpu"][keep]),
            "records": records, "steps_wall": times["wall"], "steps_cpu": times["cpu"]}


def msprobe_available(path):
    if not path:
        return False
    probe = subprocess.run([sys.executable, "-c", f"import sys; sys.path.append({path!r}); import msprobe.pytorch"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0


def msprobe_version(path):
    for name in os.listdir(path):
        if name.startswith("mindstudio_probe-") and name.endswith(".dist-info"):
            return name[len("mindstudio_probe-"):-len(".dist-info")]
    return "?"


def report(results, variants, workloads, args):
    for w in workloads:
        rows = results[w]
        print(f"\n{w}: {WORKLOADS[w][0].format(**WORKLOADS[w][2 if args.quick else 1])}")
        print(f"  {'variant':<15}{'CPU ms/step':>12}{'wall ms/step':>13}{'ratio (CPU)':>13}"
              f"{'rounds (CPU ratio)':>26}{'ratio (wall)':>14}{'records/step':>14}")
        for v in variants:
            cpu = [r["cpu"] for r in rows[v]]
            wall = [r["wall"] for r in rows[v]]
            ratios = [r["cpu"] / p["cpu"] for r, p in zip(rows[v], rows["plain"])]
            wall_ratios = [r["wall"] / p["wall"] for r, p in zip(rows[v], rows["plain"])]
            records = rows[v][0]["records"]
            spread = f"{min(ratios):.3f}-{max(ratios):.3f}"
            print(f"  {v:<15}{statistics.median(cpu) * 1e3:>12.0f}{statistics.median(wall) * 1e3:>13.0f}"
                  f"{statistics.median(ratios):>13.3f}{spread:>26}{statistics.median(wall_ratios):>14.3f}"
                  f"{'' if records is None else f'{records:.0f}':>14}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small models, 1 round, 4 steps: checks that it runs")
    p.add_argument("--rounds", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--workloads", help="comma-separated (default gpt2,vit_s; gpt2 with --quick)")
    p.add_argument("--tensors", action="store_true", help="also the agent's tensors mode (module level)")
    p.add_argument("--breakdown", action="store_true",
                   help="also operator level without its statistics, source lines or writes (what each costs)")
    p.add_argument("--python-stats", action="store_true",
                   help="also the agent with its statistics in Python (module and op level)")
    p.add_argument("--variants", help="comma-separated subset of the variants to run (plain is always run)")
    p.add_argument("--msprobe-path", default=os.environ.get("MSPROBE_PATH", ""))
    p.add_argument("--other-agent", action="append", default=[], metavar="LABEL=DIR",
                   help="also measure the agent in DIR/crosstrain (module and op level)")
    p.add_argument("--json", help="write every process's step times and medians here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--msprobe-config", help=argparse.SUPPRESS)
    p.add_argument("--hook-cost", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mode-floor", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ablate", choices=ABLATIONS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.hook_cost:
        return hook_cost(args)
    if args.worker:
        return worker(args)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.steps = args.steps or (4 if args.quick else 6)
    if args.steps <= args.warmup:
        p.error("--steps must be larger than --warmup")
    workloads = (args.workloads or ("gpt2" if args.quick else "gpt2,vit_s")).split(",")
    for w in workloads:
        if w not in WORKLOADS:
            p.error(f"unknown workload {w!r} (known: {', '.join(WORKLOADS)})")
    variants = ["plain", "mode-floor", "agent-idle", "agent-module", "agent-op"] + \
        (["agent-tensors"] if args.tensors else []) + \
        (["agent-module-py", "agent-op-py"] if args.python_stats else []) + \
        ([f"agent-op-{part}" for part in ABLATIONS] if args.breakdown else [])
    if not os.path.isfile(NATIVE):
        print(f"{NATIVE} is not built (scripts/build.sh): the agent variants compute statistics in Python")
    args.other_agents = {}
    for item in args.other_agent:
        label, _, path = item.partition("=")
        if not label or ":" in label or not os.path.isdir(os.path.join(path, "crosstrain", "_boot")):
            p.error(f"--other-agent takes LABEL=DIR with DIR/crosstrain/_boot, not {item!r}")
        args.other_agents[label] = os.path.abspath(path)
        variants += [f"{label}:module", f"{label}:op"]
    if msprobe_available(args.msprobe_path):
        variants += list(MSPROBE_VARIANTS)
        print(f"msprobe {msprobe_version(args.msprobe_path)} from {args.msprobe_path}")
    else:
        print("msprobe not found (--msprobe-path DIR): its variants are left out")
    if args.variants:
        wanted = set(args.variants.split(",")) | {"plain"}
        unknown = wanted - set(variants)
        if unknown:
            p.error(f"unknown or unavailable variant(s) {', '.join(sorted(unknown))} (here: {', '.join(variants)})")
        variants = [v for v in variants if v in wanted]
    print(f"{args.rounds} rounds x {len(workloads)} workloads x {len(variants)} variants, {args.steps} steps each "
          f"(first {args.warmup} left out), {args.threads} intra-op thread(s)")
    scratch = tempfile.mkdtemp(prefix="agent_overhead-")
    results = {w: {v: [] for v in variants} for w in workloads}
    start = time.monotonic()
    try:
        if "agent-idle" in variants:
            added, base = measure_hook_cost(scratch, 1)
            print(f"agent's own work per step boundary (one-element SGD step of {base:.1f} us): "
                  f"loaded, nothing asked {added['idle']:+.1f} us; --dump, a step not dumped {added['undumped']:+.1f} us",
                  flush=True)
        for r in range(args.rounds):
            for w in workloads:
                for v in variants:
                    results[w][v].append(run_variant(args, w, v, scratch))
                    m = results[w][v][-1]
                    print(f"  round {r + 1} {w:<9} {v:<14} CPU {m['cpu'] * 1e3:7.0f} ms  wall {m['wall'] * 1e3:7.0f} ms",
                          flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{time.monotonic() - start:.0f} s in all")
    report(results, variants, workloads, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
