"""Statistics of a tensor where it lives: max, min, mean and L2 norm of its finite elements
(float64 accumulation), NaN and Inf counts; the definitions of docs/DUMP_FORMAT.md.

On an accelerator the statistics stay on the device as a float64 vector until the step is
written out, when every vector of the step comes back in one copy: no synchronisation per tensor.
On the CPU there is nothing to overlap, so the cheap form (one pass each for min/max, sum, norm)
is read at once and the masked form runs only for a tensor that holds NaN or Inf.
"""
import math

FIELDS = ("max", "min", "sum", "norm", "nan_count", "inf_count", "finite")
DTYPE_NAMES = {
    "float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16",
    "int64": "int64", "int32": "int32", "uint8": "uint8", "bool": "bool",
}


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def dumpable(t):
    """A dense tensor of a dtype the format names."""
    import torch
    return isinstance(t, torch.Tensor) and t.layout == torch.strided and dtype_name(t) in DTYPE_NAMES \
        and not t.is_meta


def device_vector(t):
    """The 7 statistics of FIELDS as a float64 tensor on t's device (or a host list on the CPU)."""
    import torch
    x = t.detach()
    n = x.numel()
    if n == 0:
        return [None, None, None, None, 0, 0, 0]
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    if not x.is_floating_point():
        lo, hi = torch.aminmax(x)
        xd = x.to(torch.float64)
        v = torch.stack([hi.to(torch.float64), lo.to(torch.float64), xd.sum(), torch.linalg.vector_norm(xd)])
        return _finish_cpu(v, n) if x.device.type == "cpu" else torch.cat([v, v.new_tensor([0, 0, n])])
    if x.device.type == "cpu":
        lo, hi = torch.aminmax(x)
        v = torch.stack([hi.to(torch.float64), lo.to(torch.float64), torch.sum(x, dtype=torch.float64),
                         torch.linalg.vector_norm(x, dtype=torch.float64)])
        values = v.tolist()
        if all(math.isfinite(a) for a in values):
            return values + [0, 0, n]
        return masked_vector(x).tolist()
    return masked_vector(x)


def masked_vector(x):
    """Exact statistics whatever the tensor holds, on its device, without synchronising."""
    import torch
    finite = torch.isfinite(x)
    nan = torch.isnan(x).sum()
    count = finite.sum()
    zeroed = torch.where(finite, x, torch.zeros((), dtype=x.dtype, device=x.device))
    inf_fill = torch.full((), float("inf"), dtype=x.dtype, device=x.device)
    hi = torch.where(finite, x, -inf_fill).max()
    lo = torch.where(finite, x, inf_fill).min()
    return torch.stack([hi.to(torch.float64), lo.to(torch.float64), torch.sum(zeroed, dtype=torch.float64),
                        torch.linalg.vector_norm(zeroed, dtype=torch.float64), nan.to(torch.float64),
                        (x.numel() - count - nan).to(torch.float64), count.to(torch.float64)])


def _finish_cpu(v, n):
    return v.tolist() + [0, 0, n]


def resolve(vectors):
    """Host lists for a list of vectors (device tensors are copied back together, per device)."""
    import torch
    out = list(vectors)
    by_device = {}
    for i, v in enumerate(out):
        if isinstance(v, torch.Tensor):
            by_device.setdefault(v.device, []).append(i)
    for device, idx in by_device.items():
        host = torch.stack([out[i] for i in idx]).cpu().tolist()
        for i, row in zip(idx, host):
            out[i] = row
    return out


def to_record_stats(row):
    """A host row of FIELDS -> the format's stats object."""
    hi, lo, total, norm, nan, inf, finite = row
    finite = int(finite)
    if finite == 0:
        return {"max": None, "min": None, "mean": None, "norm": None, "nan_count": int(nan), "inf_count": int(inf)}
    return {"max": float(hi), "min": float(lo), "mean": float(total) / finite, "norm": float(norm),
            "nan_count": int(nan), "inf_count": int(inf)}


def has_nonfinite(row):
    return bool(row[4]) or bool(row[5])
