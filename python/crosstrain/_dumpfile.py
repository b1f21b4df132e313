"""Writes crosstrain's dump format (docs/DUMP_FORMAT.md): index.jsonl, loss.jsonl, tensors/*.npy.

Records are queued with their statistics still on the device and written when the step ends
(`flush`), in the order they were queued (`seq`); `write` is one record written at once. The writer
counts the bytes it writes and stops at max_bytes (None: no limit) with a note in run.json: a dump
never fills a disk.
"""
import json
import math
import os
import re

from . import _stats

FORMAT_NAME = "crosstrain-dump"
FORMAT_VERSION = 1
NUMPY_DTYPES = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int64": "<i8", "int32": "<i4",
                "uint8": "|u1", "bool": "|b1"}


def json_number(v):
    """JSON has no NaN/Inf: crosstrain writes them as strings."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))  # json.dumps would build one a call


encode = _ENCODER.encode


def _line(obj):
    return _ENCODER.encode(obj) + "\n"


def _record_line(record):
    """A record's line; an operator's "op" object (_ops.OpFields) brings its own JSON, most of it
    encoded once per call site."""
    op = record.get("op")
    if op is None or isinstance(op, dict):
        return _line(record)
    head = _operator_head(record)
    if head is None:
        del record["op"]
        head = _ENCODER.encode(record)[:-1] + ',"op":'
    return head + op.json() + "}\n"


_escape = json.encoder.encode_basestring_ascii  # what the encoder does to a string (ensure_ascii)
_finite = math.isfinite


def _operator_head(record):
    """The text of an operator record up to its "op" object, as the encoder writes it, for the usual
    record (on the CPU, statistics mode, finite statistics); None for any other."""
    if len(record) != 8:
        return None
    stats = record["stats"]
    hi, lo, mean, norm = stats["max"], stats["min"], stats["mean"], stats["norm"]
    if hi is None or not (_finite(hi) and _finite(lo) and _finite(mean) and _finite(norm)):
        return None
    shape = record["shape"]
    return (f'{{"seq":{record["seq"]!r},"step":{record["step"]!r},"name":{_escape(record["name"])},'
            f'"kind":{_escape(record["kind"])},"dtype":{_escape(record["dtype"])},'
            f'"shape":[{",".join(map(repr, shape))}],"stats":{{"max":{hi!r},"min":{lo!r},"mean":{mean!r},'
            f'"norm":{norm!r},"nan_count":{stats["nan_count"]!r},"inf_count":{stats["inf_count"]!r}}},"op":')


class TakenBySibling(Exception):
    """The folder holds the dump of another process of the same run (each process writes its own)."""


OWNER_FILE = ".crosstrain-run"  # the id of the run whose process writes the dump in this folder


def _owner_of(directory):
    """The run id of the dump's writer: "" when none was written, None while the dump is being
    claimed (its index exists and is still empty)."""
    try:
        with open(os.path.join(directory, OWNER_FILE)) as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        return None if os.path.getsize(os.path.join(directory, "index.jsonl")) == 0 else ""
    except OSError:
        return ""


def _clear(directory):
    import shutil
    for name in ("index.jsonl", "loss.jsonl", "run.json", OWNER_FILE):
        try:
            os.remove(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    shutil.rmtree(os.path.join(directory, "tensors"), ignore_errors=True)


def claim(directory, overwrite, run_id, overwrite_option="--dump-overwrite"):
    """Opens directory/index.jsonl for this process alone (created exclusively). A dump already
    there is refused (the message names overwrite_option), replaced when overwrite, or, when it
    belongs to this run (a second Python process of the same command), left to its writer:
    TakenBySibling."""
    os.makedirs(directory, exist_ok=True)
    index = os.path.join(directory, "index.jsonl")
    for _ in range(3):
        try:
            f = open(index, "x")
        except FileExistsError:
            owner = _owner_of(directory)
            if owner is None or (run_id and owner == run_id):  # a sibling's, or one being claimed now
                raise TakenBySibling(directory)
            if not overwrite:
                raise FileExistsError(f"{directory} already holds a dump (use {overwrite_option} to replace it)")
            _clear(directory)
            continue
        if run_id:
            with open(os.path.join(directory, OWNER_FILE), "w") as owner_file:
                owner_file.write(run_id + "\n")
        return f
    raise FileExistsError(f"{directory}: another process keeps writing a dump there")


class DumpFile:
    def __init__(self, directory, mode, producer, meta, max_bytes=None, overwrite=False, run_id="",
                 overwrite_option="--dump-overwrite"):
        self._index = claim(directory, overwrite, run_id, overwrite_option)
        self.dir = directory
        self.mode = mode
        self.max_bytes = None if max_bytes is None else int(max_bytes)
        self.bytes = 0
        self.full = False
        self.note = ""
        self.seq = 0
        self.records = 0
        self.inputs = 0
        self._pending = []  # (record dict, stats vector)
        self._files = []    # tensor files written, in order (for rollback)
        self.disowned = False
        self._names_step = None
        self._names = {}
        self._loss = open(os.path.join(directory, "loss.jsonl"), "w")
        self._write(self._index, {"format": FORMAT_NAME, "version": FORMAT_VERSION, "mode": mode,
                                  "producer": producer, "meta": meta})
        self._index.flush()  # another process of the run reads whose dump this is

    def _write(self, f, obj):
        text = _line(obj)
        self.bytes += len(text)
        f.write(text)

    def unique(self, step, name):
        """`name`, or `name#k` for its k-th repetition within the step."""
        if step != self._names_step:
            self._names_step, self._names = step, {}
        n = self._names.get(name, 0)
        self._names[name] = n + 1
        return name if n == 0 else f"{name}#{n}"

    def room_for(self, nbytes):
        """False once writing nbytes more would pass max_bytes (then the dump stops, with a note)."""
        if self.full:
            return False
        if self.max_bytes is not None and self.bytes + nbytes > self.max_bytes:
            self.full = True
            self.note = (f"the dump stopped at {self.bytes} bytes: the next record would pass "
                         f"--dump-max-bytes {self.max_bytes}")
            return False
        return True

    def queue(self, record, vector):
        """record: seq and stats (both filled here, placed first and after shape), step, name, kind,
        dtype, shape, then optional fields; vector: statistics (_stats)."""
        record["seq"] = self.seq
        self.seq += 1
        self._pending.append((record, vector))

    def add(self, step, name, kind, tensor, vector, extra=None):
        """Queues the record of one tensor already named (unique within the step): dtype, shape,
        device when not the CPU, in tensors mode the .npy (saved now), then extra's fields.
        Returns the record; its "file" is absent when the byte budget is spent."""
        record = {"seq": None, "step": int(step), "name": name, "kind": kind, "dtype": _stats.dtype_name(tensor),
                  "shape": list(tensor.shape), "stats": None}  # the format's order; seq and stats come later
        if not tensor.is_cpu:
            record["device"] = str(tensor.device)
        if self.mode == "tensors":
            rel, stored = self.save_array(step, self.seq, name, tensor)
            if rel is not None:
                record["file"] = rel
                record["stored_dtype"] = stored
        if extra:
            record.update(extra)
        self.queue(record, vector)
        return record

    def write(self, step, name, kind, tensor):
        """One record written now: `name` (made unique within the step), its statistics and, in
        tensors mode, its .npy. tensor: a torch tensor or a numpy array. Returns the record."""
        import torch
        t = torch.as_tensor(tensor).detach()
        record = self.add(step, self.unique(step, name), kind, t, _stats.device_vector(t))
        self.flush()
        return record

    def save_input(self, step, label, tensor):
        """An operator's input (for replay), named in-<n>-<label>.npy with a counter of its own."""
        self.inputs += 1
        return self._save(f"tensors/step{int(step)}/in-{self.inputs:06d}-", label, tensor)

    def save_array(self, step, seq_hint, name, tensor):
        """Tensors mode: the tensor as .npy (bfloat16 widened to float32); returns (file, stored dtype)
        or (None, None) when the byte budget is spent."""
        return self._save(f"tensors/step{int(step)}/{seq_hint:06d}-", name, tensor)

    def _save(self, prefix, name, tensor):
        import torch
        t = tensor.detach()
        stored = str(t.dtype).replace("torch.", "")
        if t.dtype == torch.bfloat16:
            t, stored = t.float(), "float32"
        arr = t.cpu().contiguous().numpy()
        if not self.room_for(arr.nbytes + 128):
            return None, None
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:120]
        rel = f"{prefix}{stem}.npy"
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        import numpy as np
        np.save(path, arr, allow_pickle=False)
        size = os.path.getsize(path)
        self.bytes += size
        self._files.append((path, size))
        return rel, stored

    def mark(self):
        """Where the dump stands now, for rollback(): records queued, names taken, files written."""
        return (len(self._pending), self._names_step, dict(self._names), len(self._files), self.seq)

    def rollback(self, mark=None):
        """Forgets what was queued and saved since mark (None: everything not yet written)."""
        pending, names_step, names, files, seq = mark if mark else (0, None, {}, 0, None)
        del self._pending[pending:]
        if seq is not None:
            self.seq = seq
        self._names_step, self._names = names_step, names
        for path, size in self._files[files:]:
            try:
                os.remove(path)
                self.bytes -= size
            except OSError:
                pass
        del self._files[files:]

    def flush(self):
        if not self._pending or self._index is None:
            self._pending = []
            return
        self._files = []  # what is flushed stays
        rows = _stats.resolve([v for _, v in self._pending])
        for (record, _), row in zip(self._pending, rows):
            record["stats"] = _stats.to_record_stats(row)  # its place was kept when the record was made
            text = _record_line(record)
            if not self.room_for(len(text)):
                break
            self.bytes += len(text)
            self._index.write(text)
            self.records += 1
        self._pending = []
        self._index.flush()

    def drop_pending(self):
        self._pending = []

    def log_loss(self, step, value):
        if self._loss is None:
            return
        self._write(self._loss, {"step": int(step), "loss": json_number(float(value))})
        self._loss.flush()

    def sync_buffers(self):
        for f in (self._index, self._loss):
            if f is not None and not f.closed:
                f.flush()

    def disown(self):
        """In a forked child: the parent's files are left alone (their buffers were synced before
        the fork, so nothing is written twice)."""
        self._pending = []
        self._index = self._loss = None
        self.disowned = True

    def abandon(self):
        """After a write failed: what is queued is dropped, the files are closed as far as they can
        be, nothing more is written."""
        self._pending = []
        self.full = True
        for f in (self._index, self._loss):
            try:
                if f is not None and not f.closed:
                    f.close()
            except OSError:
                pass
        self._index = self._loss = None

    def close(self, run_info=None):
        """Flushes and closes; run_info (a dict) goes into run.json, with the records and bytes
        written (None: no run.json)."""
        if self.disowned:
            return
        self.flush()
        for f in (self._index, self._loss):
            if f is not None and not f.closed:
                f.close()
        self._index = self._loss = None
        if run_info is None:
            return
        info = dict(run_info)
        info["records"] = self.records
        info["bytes"] = self.bytes
        if self.note:
            info["note"] = self.note
        with open(os.path.join(self.dir, "run.json"), "w") as f:
            f.write(json.dumps(info, indent=1, sort_keys=True) + "\n")
