"""A dump folder (docs/DUMP_FORMAT.md, version 1): index.jsonl's header and records, loss.jsonl,
run.json (written by `crosstrain run`) and, in tensors mode, the .npy files."""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ._tables import table

FORMAT = "crosstrain-dump"
FORMAT_VERSION = 1
KINDS = ("forward", "grad_output", "param_grad", "param_grad_unscaled", "loss", "loss_scale",
         "op_forward", "op_backward", "op_optimizer")  # any other kind reads as "other", as in C++


@dataclass(frozen=True)
class Stats:
    """Over the finite elements; max/min are None when there is none."""
    max: Optional[float]
    min: Optional[float]
    mean: Optional[float]
    norm: Optional[float]
    nan_count: int = 0
    inf_count: int = 0

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Stats":
        num = lambda k: None if j.get(k) is None else float(j[k])
        return Stats(num("max"), num("min"), num("mean"), num("norm"), int(j.get("nan_count", 0)),
                     int(j.get("inf_count", 0)))


@dataclass(frozen=True)
class OpInput:
    """A tensor argument of an operator record; `source_record` is the dump's `from`: the record of
    the same step whose output it is (None for a parameter or a model input). A list argument has
    its entries in `tensors`."""
    arg: str
    dtype: Optional[str]
    shape: Optional[Tuple[int, ...]]
    device: Optional[str]
    source_record: Optional[str]
    tensors: Tuple["OpInput", ...] = ()

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "OpInput":
        return OpInput(j.get("arg", ""), j.get("dtype"), None if j.get("shape") is None else tuple(j["shape"]),
                       j.get("device"), j.get("from"), tuple(OpInput.from_json(t) for t in j.get("tensors", ())))


@dataclass(frozen=True)
class OpInfo:
    """The `op` object of an operator record."""
    name: str
    overload: str
    phase: str
    module: str
    source: str
    code: str
    user_source: str
    user_code: str
    inputs: Tuple[OpInput, ...]
    random: bool
    args: Optional[List[Any]]  # tensors mode: every argument, as the dump holds it

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "OpInfo":
        return OpInfo(j.get("name", ""), j.get("overload", ""), j.get("phase", ""), j.get("module", ""),
                      j.get("source", ""), j.get("code", ""), j.get("user_source", ""), j.get("user_code", ""),
                      tuple(OpInput.from_json(i) for i in j.get("inputs", ())), bool(j.get("random", False)),
                      j.get("args"))

    @property
    def where(self) -> str:
        """The user's own line when it differs from `source`, else `source`."""
        return self.user_source or self.source


@dataclass(frozen=True)
class Record:
    seq: int
    step: int
    name: str
    kind: str
    dtype: str
    shape: Tuple[int, ...]
    stats: Stats
    file: Optional[str] = None          # tensors mode: the .npy, relative to the dump folder
    stored_dtype: Optional[str] = None  # tensors mode: the .npy's dtype (float32 for bfloat16)
    device: Optional[str] = None
    op: Optional[OpInfo] = None

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Record":
        kind = j.get("kind", "other")
        return Record(int(j["seq"]), int(j["step"]), j["name"], kind if kind in KINDS else "other", j.get("dtype", ""),
                      tuple(j.get("shape", ())), Stats.from_json(j.get("stats", {})), j.get("file"),
                      j.get("stored_dtype"), j.get("device"), OpInfo.from_json(j["op"]) if "op" in j else None)


@dataclass(frozen=True)
class Header:
    format: str
    version: int
    mode: str       # "stats" or "tensors"
    producer: str
    meta: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LossPoint:
    step: int
    loss: float  # NaN for "nan" and null, +-inf for "inf"/"-inf"


RECORD_COLUMNS = ("seq", "step", "name", "kind", "dtype", "shape", "max", "min", "mean", "norm", "nan_count",
                  "inf_count", "device", "file", "stored_dtype", "op", "overload", "phase", "module", "source",
                  "code", "user_source", "user_code", "random")


def _loss_value(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return float(v)


def _json_lines(path: str) -> List[Tuple[int, Any]]:
    """(line number, value) per line; a last line cut short by a crash (no newline, not JSON) is left out."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except ValueError as e:
            if n == len(lines):  # the writer flushes whole lines: a partial one is the last
                break
            raise ValueError(f"{path}: line {n}: not JSON: {e}") from None
    return out


class Dump:
    """One dump folder. `records` are in execution order (`seq`), `losses` one per step."""

    def __init__(self, path: str, header: Header, records: List[Record], losses: List[LossPoint],
                 run: Optional[Dict[str, Any]]):
        self.path = path
        self.header = header
        self.records = records
        self.losses = losses
        self.run = run  # run.json (crosstrain run), None when there is none

    def __repr__(self):
        return f"Dump({self.path!r}: {self.header.mode}, {len(self.records)} records, {len(self.losses)} losses)"

    @property
    def steps(self) -> List[int]:
        return sorted({r.step for r in self.records})

    def record(self, name: str, step: int = 0) -> Record:
        for r in self.records:
            if r.name == name and r.step == step:
                return r
        raise KeyError(f"{self.path}: no record {name!r} at step {step}")

    def tensor(self, record: Record):
        """The record's tensor as a numpy array (tensors mode; needs numpy). A bfloat16 tensor comes
        back widened to float32, as stored: `torch.from_numpy(a).to(torch.bfloat16)` is exact."""
        if not record.file:
            raise ValueError(f"{self.path}: {record.name} at step {record.step} has no tensor file (a stats-mode dump?)")
        import numpy
        return numpy.load(os.path.join(self.path, record.file), allow_pickle=False)

    def records_table(self, frame: Optional[bool] = None):
        """One row per record, statistics and operator fields as columns (RECORD_COLUMNS)."""
        rows = []
        for r in self.records:
            row = {"seq": r.seq, "step": r.step, "name": r.name, "kind": r.kind, "dtype": r.dtype, "shape": r.shape,
                   "max": r.stats.max, "min": r.stats.min, "mean": r.stats.mean, "norm": r.stats.norm,
                   "nan_count": r.stats.nan_count, "inf_count": r.stats.inf_count, "device": r.device,
                   "file": r.file, "stored_dtype": r.stored_dtype}
            if r.op is not None:
                row.update({"op": r.op.name, "overload": r.op.overload, "phase": r.op.phase, "module": r.op.module,
                            "source": r.op.source, "code": r.op.code, "user_source": r.op.user_source,
                            "user_code": r.op.user_code, "random": r.op.random})
            rows.append(row)
        return table(rows, RECORD_COLUMNS, frame)

    def losses_table(self, frame: Optional[bool] = None):
        return table([{"step": p.step, "loss": p.loss} for p in self.losses], ("step", "loss"), frame)


def read_dump(path) -> Dump:
    """Reads the dump folder `path` (the folder holding index.jsonl). A folder of rank dumps
    (rank0/, rank1/, ...) is read with read_rank_dumps."""
    path = os.fspath(path)
    index = os.path.join(path, "index.jsonl")
    if not os.path.isfile(index):
        hint = " (a folder of rank dumps: read_rank_dumps)" if _rank_folders(path) else ""
        raise FileNotFoundError(f"{path}: no index.jsonl{hint}")
    lines = _json_lines(index)
    if not lines or not isinstance(lines[0][1], dict) or lines[0][1].get("format") != FORMAT:
        raise ValueError(f"{index}: line 1 is not a {FORMAT} header")
    h = lines[0][1]
    version = h.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"{index}: format version {version!r}; this reader knows up to {FORMAT_VERSION}")
    header = Header(h["format"], version, h.get("mode", "stats"), h.get("producer", ""), dict(h.get("meta") or {}))
    records = []
    for n, j in lines[1:]:
        try:
            records.append(Record.from_json(j))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{index}: line {n}: not a record ({type(e).__name__}: {e})") from None
    losses = []
    loss_path = os.path.join(path, "loss.jsonl")
    if os.path.isfile(loss_path):
        losses = [LossPoint(int(j["step"]), _loss_value(j.get("loss"))) for _, j in _json_lines(loss_path)]
    run = None
    run_path = os.path.join(path, "run.json")
    if os.path.isfile(run_path):
        with open(run_path, encoding="utf-8") as f:
            run = json.load(f)
    return Dump(path, header, records, losses, run)


def _rank_folders(path: str) -> Dict[int, str]:
    if not os.path.isdir(path):
        return {}
    out = {}
    for name in os.listdir(path):
        m = re.fullmatch(r"rank(\d+)", name)
        if m and os.path.isfile(os.path.join(path, name, "index.jsonl")):
            out[int(m.group(1))] = os.path.join(path, name)
    return out


def read_rank_dumps(path) -> Dict[int, Dump]:
    """A data-parallel run's dumps, `path/rank<N>/` (train --dump, run --dump under torchrun), by rank."""
    path = os.fspath(path)
    folders = _rank_folders(path)
    if not folders:
        raise FileNotFoundError(f"{path}: no rank<N>/index.jsonl folders")
    return {rank: read_dump(folders[rank]) for rank in sorted(folders)}
