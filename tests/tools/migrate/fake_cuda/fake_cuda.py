"""A fake CUDA machine for checking migrations: torch.cuda, torch.accelerator (answering "cuda"),
tensor/module placement, factories, AMP, DDP and process-group set-up are replaced by recorders.

Every call is logged as the operation CUDA would perform, with its arguments normalised the way
torch resolves them on CUDA: `.cuda()`, `.to("cuda")` and `.to(torch.device("cuda"))` all record
("to", "cuda"); `.to(1)` and `.cuda(1)` record ("to", "cuda:1"); torch.accelerator.X and
torch.get_device_module(<cuda device>).X record what torch.cuda.X records, because on a CUDA
machine they dispatch to it. Two programs that leave the same log perform the same CUDA work.
"""
import contextlib
import io
import inspect

import torch
import torch.distributed as dist
import torch.nn as nn

LOG = []


def record(*event):
    LOG.append(tuple(repr(e) if not isinstance(e, (str, int, float, bool, type(None))) else e for e in event))


def norm_device(d, default="cuda"):
    if d is None:
        return default
    if isinstance(d, int):
        return f"cuda:{d}"
    return str(torch.device(d))


def _is_cuda(d):
    try:
        return d is not None and not isinstance(d, torch.dtype) and torch.device(d if not isinstance(d, int) else f"cuda:{d}").type == "cuda"
    except (TypeError, RuntimeError):
        return False


def _split_to(args, kwargs):
    device = kwargs.get("device")
    if device is None and args and isinstance(args[0], (str, int, torch.device)):
        device = args[0]
    return device


def _placement(kind, real_to, real_cuda):
    def to(self, *args, **kwargs):
        device = _split_to(args, kwargs)
        if _is_cuda(device):
            record(kind, norm_device(device), bool(kwargs.get("non_blocking", len(args) > 1 and args[1] is True)))
            return self
        return real_to(self, *args, **kwargs)

    def cuda(self, device=None, non_blocking=False, **kwargs):
        record(kind, norm_device(device), bool(non_blocking))
        return self
    return to, cuda


class _Recorded:
    def __init__(self, name, *a, **kw):
        record(name, *a, *sorted(kw.items()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def record(self, *a):
        record("event.record")

    def __getattr__(self, name):
        return lambda *a, **kw: record(name)


def _bound(fn, args, kwargs, skip=1):
    sig = inspect.signature(fn)
    bound = sig.bind_partial(*((None,) * skip + tuple(args)), **kwargs)
    bound.apply_defaults()
    return {k: v for k, v in list(bound.arguments.items())[skip:] if k not in ("kwargs", "args")}


def install():
    cuda = torch.cuda
    real_autocast_init = torch.amp.autocast.__init__
    real_scaler_init = torch.amp.GradScaler.__init__

    def autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
        dtype = torch.float16 if dtype is None and device_type == "cuda" else dtype
        return _Recorded("autocast", device_type, dtype, enabled, True if cache_enabled is None else cache_enabled)

    def cuda_autocast(enabled=True, dtype=torch.float16, cache_enabled=True):
        return autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def scaler(device="cuda", *args, **kwargs):
        params = _bound(real_scaler_init, (device,) + args, kwargs)
        return _Recorded("GradScaler", *sorted(params.items()))

    def cuda_scaler(*args, **kwargs):
        return scaler("cuda", *args, **kwargs)

    class AmpModule:
        pass
    def custom_amp(kind, keywords):
        def amp_custom(fn=None, *, device_type, **kw):  # device_type is required, as in torch.amp
            if set(kw) - keywords:
                raise TypeError(f"{kind}: unexpected {sorted(set(kw) - keywords)}")
            if fn is None:
                return lambda f: amp_custom(f, device_type=device_type, **kw)
            record(kind, device_type, kw.get("cast_inputs"))
            return fn

        def cuda_custom(fn=None, **kw):
            return amp_custom(fn, device_type="cuda", **kw)
        return amp_custom, cuda_custom
    torch.amp.custom_fwd, cuda.amp.custom_fwd = custom_amp("custom_fwd", {"cast_inputs"})
    torch.amp.custom_bwd, cuda.amp.custom_bwd = custom_amp("custom_bwd", set())
    torch.amp.autocast = torch.autocast = autocast
    torch.amp.GradScaler = scaler
    cuda.amp.autocast = cuda_autocast
    cuda.amp.GradScaler = cuda_scaler
    del real_autocast_init

    for name, result in [("is_available", True), ("device_count", 2)]:
        def query(*a, _name=name, _result=result, **kw):
            record(_name)
            return _result
        setattr(cuda, name, query)
        setattr(torch.accelerator, name, query)
    torch.accelerator.current_accelerator = lambda check_available=False: torch.device("cuda")
    for name in ["synchronize", "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "memory_stats", "reset_peak_memory_stats", "manual_seed", "manual_seed_all",
                 "current_stream", "memory_summary", "get_device_name", "get_device_properties", "mem_get_info"]:
        def op(*a, _name=name, **kw):
            seed = _name.startswith("manual_seed")
            record(_name, *(norm_device(d) if not seed and _is_cuda(d) else d for d in a + tuple(kw.values())))
            return 0

        def accelerator_op(*a, _name=name):  # torch.accelerator.memory takes the device positionally only
            return op(*a, _name=_name)
        setattr(cuda, name, op)
        if hasattr(torch.accelerator.memory, name):
            setattr(torch.accelerator.memory, name, accelerator_op)
    cuda.set_device = lambda d: record("set_device", norm_device(d))
    cuda.current_device = lambda: 0
    cuda.Stream = lambda *a, **kw: _Recorded("Stream", *a, **kw)
    cuda.Event = lambda *a, **kw: _Recorded("Event", *a, **kw)
    cuda.stream = lambda s=None: _Recorded("stream", type(s).__name__)
    real_module = torch.get_device_module
    torch.get_device_module = lambda d=None: cuda if _is_cuda(d) else real_module(d)

    torch.Tensor.to, torch.Tensor.cuda = _placement("tensor.to", torch.Tensor.to, torch.Tensor.cuda)
    nn.Module.to, nn.Module.cuda = _placement("module.to", nn.Module.to, nn.Module.cuda)
    for name in ["zeros", "ones", "randn", "rand", "empty", "full", "tensor", "arange", "randint"]:
        real = getattr(torch, name)

        def factory(*a, _real=real, _name=name, **kw):
            if _is_cuda(kw.get("device")):
                record("factory", _name, norm_device(kw.pop("device")))
            return _real(*a, **kw)
        setattr(torch, name, factory)
    torch.load = lambda f, map_location=None, **kw: record("load", map_location if callable(map_location) else
                                                           (norm_device(map_location) if _is_cuda(map_location) else map_location)) or {}

    # torch.distributed.Backend lower-cases the name it is given.
    dist.init_process_group = lambda backend=None, **kw: record("init_process_group", backend.lower() if isinstance(backend, str)
                                                                else backend, *sorted(kw.items()))
    dist.is_nccl_available = lambda: record("is_backend_available", "nccl") or True
    dist.is_backend_available = lambda b: record("is_backend_available", b) or True

    class FakeDDP(nn.Module):
        def __init__(self, module, device_ids=None, output_device=None, **kw):
            super().__init__()
            record("DistributedDataParallel", device_ids, output_device)
    nn.parallel.DistributedDataParallel = FakeDDP
    nn.parallel.DataParallel = nn.DataParallel = FakeDDP


DEFINITION = "_accel_device = "


def run(source, name):
    """Executes one snippet under the fake; returns its log. The device definition a migration
    inserts asks torch.accelerator once which device there is (a query that does no device work);
    the log starts after it."""
    LOG.clear()
    scope = {"__name__": "__snippet__", "record": record}
    lines = source.splitlines(keepends=True)
    cut = next((i + 1 for i, line in enumerate(lines) if line.startswith(DEFINITION)), 0)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile("".join(lines[:cut]), name, "exec"), scope)
        LOG.clear()
        exec(compile("\n" * cut + "".join(lines[cut:]), name, "exec"), scope)
    return list(LOG)
