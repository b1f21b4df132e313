"""Statistics of a tensor where it lives: max, min, mean and L2 norm of its finite elements
(float64 accumulation), NaN and Inf counts; the definitions of docs/DUMP_FORMAT.md.

On the CPU, a tensor the compiled library can read (_native: dense, of a format dtype) gets one
pass in C. On an accelerator the statistics stay on the device as a float64 vector until the step is
written out, when every vector of the step comes back in one copy: no synchronisation per tensor.
On the CPU there is nothing to overlap, so the cheap form (one pass each for min/max, sum, sum of
squares) is read at once and the masked form runs only for a tensor that holds NaN or Inf. Sums
run in float32 over rows of 512 elements and add the rows in float64 (_sum_and_squares).
"""
import math

from . import _native

FIELDS = ("max", "min", "sum", "norm", "nan_count", "inf_count", "finite")
DTYPE_NAMES = {
    "float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16",
    "int64": "int64", "int32": "int32", "uint8": "uint8", "bool": "bool",
}


_format_dtype_set = None  # the torch.dtype objects of DTYPE_NAMES, made once torch is here


def _format_dtypes(torch):
    global _format_dtype_set
    if _format_dtype_set is None:
        _format_dtype_set = {getattr(torch, name) for name in DTYPE_NAMES}
    return _format_dtype_set


_dtype_names = {}  # torch.dtype -> "float32"


def dtype_name(t):
    dtype = t.dtype
    name = _dtype_names.get(dtype)
    if name is None:
        name = _dtype_names[dtype] = str(dtype).replace("torch.", "")
    return name


_wrapped = None  # torch._C._functorch.is_functorch_wrapped_tensor, or a stand-in without it


def _functorch_wrapped(torch):
    global _wrapped
    if _wrapped is None:
        _wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None) or \
            (lambda t: False)
    return _wrapped


def skip_reason(t):
    """None for a dense tensor of a dtype the format names; else why it is not recorded (nested,
    sparse, meta, a tensor inside a torch.func transform (vmap, grad: a wrapper without storage of
    its own), or a dtype such as float8 that the format has no name for)."""
    import torch
    if type(t) is torch.Tensor and t.dtype in _format_dtypes(torch) and t.layout is torch.strided and \
            not t.is_nested and not t.is_meta and not _functorch_wrapped(torch)(t):
        return None
    if not isinstance(t, torch.Tensor):
        return "not a tensor"
    if _functorch_wrapped(torch)(t):
        return "inside a torch.func transform"
    if t.is_nested:
        return "nested tensor"
    if t.layout != torch.strided:
        return f"{str(t.layout).replace('torch.', '')} layout"
    if t.is_meta:
        return "meta tensor"
    if dtype_name(t) not in DTYPE_NAMES:
        return f"dtype {dtype_name(t)}"
    return None


def version(t):
    """t's version counter, or None for an inference tensor (made under torch.inference_mode),
    which keeps none: statistics and "from" links of such a tensor are not reused."""
    try:
        return t._version
    except RuntimeError:
        return None


def dumpable(t):
    return skip_reason(t) is None


_ROW = 512  # elements summed in float32 before the row sums are added in float64
_SMALL = 16384  # CPU tensors up to this size go through numpy


def device_vector(t):
    """The 7 statistics of FIELDS as a float64 tensor on t's device (or a host list on the CPU)."""
    import torch
    n = t.numel()
    if n == 0:
        return [None, None, None, None, 0, 0, 0]
    if t.is_cpu:
        row = _native.cpu_stats(torch, t)  # one pass in C (src/agent), where it is loaded and can read t
        if row is not None:
            return row
    return python_vector(t.detach(), n)


def python_vector(x, n):
    """device_vector without the compiled library."""
    import torch
    with torch.no_grad():
        return _python_vector(torch, x, n)


def _python_vector(torch, x, n):
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    if not x.is_floating_point():
        lo, hi = torch.aminmax(x)
        xd = x.to(torch.float64)
        v = torch.stack([hi.to(torch.float64), lo.to(torch.float64), xd.sum(), torch.linalg.vector_norm(xd)])
        return _finish_cpu(v, n) if x.device.type == "cpu" else torch.cat([v, v.new_tensor([0, 0, n])])
    if x.device.type == "cpu":
        plain = type(x) is torch.Tensor  # numpy cannot read a subclass (DTensor...)
        if plain and n <= _SMALL:
            return _small_cpu(x, n)
        total, sumsq = _sum_and_squares(torch, x)
        if plain and x.dtype in (torch.float32, torch.float64):  # numpy's min and max vectorise better than aminmax
            a = x.reshape(-1).numpy()
            hi, lo = float(a.max()), float(a.min())
            values = [hi, lo] + torch.stack([total, sumsq.sqrt()]).tolist()
        else:  # 16-bit floats widened first (exact): torch before 2.2 has no float16 aminmax on the CPU
            lo, hi = torch.aminmax(x.float() if x.dtype in (torch.float16, torch.bfloat16) else x)
            values = torch.stack([hi.to(torch.float64), lo.to(torch.float64), total, sumsq.sqrt()]).tolist()
        if all(math.isfinite(a) for a in values):
            return values + [0, 0, n]
        return masked_vector(x).tolist()
    return masked_vector(x)


def _small_cpu(x, n):
    """A small CPU tensor through numpy: four numpy calls cost less than one torch call's overhead,
    and most of a step's records (biases, normalisation statistics, losses) are small."""
    import numpy as np
    import torch
    flat = x.reshape(-1)
    if flat.dtype in (torch.bfloat16, torch.float16):
        flat = flat.float()
    a = flat.numpy().astype(np.float64)
    with np.errstate(all="ignore"):  # inf - inf in a sum is a finding of the record, not a warning to the user
        hi, lo = float(a.max()), float(a.min())
        total, sumsq = float(a.sum()), float(np.square(a).sum())  # not a @ a: BLAS threads spin against the step
    if math.isfinite(total) and math.isfinite(sumsq) and math.isfinite(hi) and math.isfinite(lo):
        return [hi, lo, total, math.sqrt(sumsq), 0, 0, n]
    return masked_vector(x).tolist()


def _sum_and_squares(torch, x):
    """Sum and sum of squares as float64 scalars on x's device. A float32 reduction over 2M elements
    in float64 costs 6x the float32 one on a CPU; summing rows of 512 in float32 and the rows in
    float64 keeps the error below 1e-6 relative (measured against float64 to 16M elements)."""
    flat = x.reshape(-1)
    n = flat.numel()
    if x.dtype == torch.float64 or n < 4 * _ROW:
        xd = flat.to(torch.float64)
        return xd.sum(), xd.dot(xd)
    m = n - n % _ROW
    rows = flat[:m].view(-1, _ROW)
    total = rows.sum(1, dtype=torch.float32).to(torch.float64).sum()
    sumsq = torch.linalg.vector_norm(rows, dim=1, dtype=torch.float32).to(torch.float64).square().sum()
    if m < n:
        tail = flat[m:].to(torch.float64)
        total = total + tail.sum()
        sumsq = sumsq + tail.dot(tail)
    return total, sumsq


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
    total, sumsq = _sum_and_squares(torch, zeroed)
    return torch.stack([hi.to(torch.float64), lo.to(torch.float64), total, sumsq.sqrt(), nan.to(torch.float64),
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
