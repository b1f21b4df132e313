"""The agent's compiled statistics: src/agent/tensor_stats.h, a C library loaded with ctypes.

`crosstrain run` names the library it was built with in CROSSTRAIN_AGENT_NATIVE; one in this
package's folder or in the environment's lib/ (an install of crosstrain into the environment) is
found too. It has no libtorch and no Python headers in it, so
it serves any torch the script runs. Without it (a `pip install`ed agent, a library of another
interface version, CROSSTRAIN_AGENT_NATIVE=0) the statistics take the pure-Python path of
_stats.py, which computes the same definitions; tests compare the two.
"""
import ctypes
import os
import sys
import threading

LIBRARY_NAME = "libcrosstrain_tensor_stats.so"
_VERSION = 1
_CODES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int64": 4, "int32": 5, "uint8": 6,
          "bool": 7}  # the dtypes of the format (_stats.DTYPE_NAMES)

_lib = None
_loaded = False
_by_dtype = {}           # torch.dtype -> code
_local = threading.local()
why_not = ""             # why the library is not used ("" when it is)


def _candidates():
    """CROSSTRAIN_AGENT_NATIVE, this package's folder, then the environment's lib/ (where
    `cmake --install build --prefix "$VIRTUAL_ENV"` puts it)."""
    named = os.environ.get("CROSSTRAIN_AGENT_NATIVE", "")
    if named == "0":
        return []
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)
    installed = os.path.join(sys.prefix, "lib", LIBRARY_NAME)
    return [p for p in (named, here) if p] + ([installed] if not named and os.path.isfile(installed) else [])


def library():
    """The loaded library, or None (why_not says why)."""
    global _lib, _loaded, why_not
    if _loaded:
        return _lib
    _loaded = True
    reasons = []
    for path in _candidates():
        if not os.path.isfile(path):
            reasons.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.crosstrain_tensor_stats_version.restype = ctypes.c_int
            if lib.crosstrain_tensor_stats_version() != _VERSION:
                reasons.append(f"{path}: another interface version")
                continue
            fn = lib.crosstrain_tensor_stats
            fn.argtypes = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_double))
            fn.restype = ctypes.c_int
        except (OSError, AttributeError) as e:
            reasons.append(f"{path}: {e}")
            continue
        _lib, why_not = lib, ""
        return _lib
    why_not = "; ".join(reasons) or "no compiled statistics library (CROSSTRAIN_AGENT_NATIVE=0)"
    return None


def _out():
    buf = getattr(_local, "out", None)
    if buf is None:
        buf = _local.out = (ctypes.c_double * 7)()
    return buf


def cpu_stats(torch, t):
    """FIELDS of a plain dense CPU tensor (list of 7 floats), or None where the library cannot read
    it (no library, a subclass, a strided view with gaps, a lazily negated or conjugated tensor)."""
    lib = _lib if _loaded else library()
    if lib is None or type(t) is not torch.Tensor:
        return None
    code = _by_dtype.get(t.dtype)
    if code is None:
        code = _CODES.get(str(t.dtype)[6:])
        if code is None:
            return None
        _by_dtype[t.dtype] = code
    if not (t.is_contiguous() or _dense(t)) or t.is_neg() or t.is_conj():
        return None
    n = t.numel()
    out = _out()
    if lib.crosstrain_tensor_stats(t.data_ptr(), n, code, out) != 0:
        return None
    return [out[0], out[1], out[2], out[3], out[4], out[5], out[6]]


def _dense(t):
    """Whether t's elements fill one block of memory in some order (a transpose, a channels-last
    tensor): then data_ptr() is its first element and the block holds each element once."""
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True
