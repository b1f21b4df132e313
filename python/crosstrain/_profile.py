"""`crosstrain run --profile DIR`: torch.profiler (or torch_npu.profiler on Ascend) around the
script's own steps, with the wait / warmup / active / repeat schedule of the guides.

The profiler starts when torch is imported and steps at every step the tracker finds, so the
schedule counts the script's training steps (ProfilerStep#N is step N). Each cycle of each rank
becomes one trace: DIR/cycle<k>/rank<r>.pt.trace.json (torch.profiler's Chrome-trace schema, what
`crosstrain analyze` reads); on Ascend, torch_npu's own *_ascend_pt folders under DIR/cycle<k>/.
A cycle still open when the script ends is closed and written. Activities follow the devices the
process can use: the CPU, CUDA when available, the NPU through torch_npu. An Ascend setting the
installed torch_npu does not have falls back to its default with a one-line note.

Next to each torch.profiler trace (torch_npu's folders have none yet), <trace>.sources.json says where the script's Python calls were made from. The
trace's python_function events name the function called and the line it was *defined* at (or, for
frames already running when the profiler started, the line they were at then); the line a call
was made from is only in the profiler's event tree (each Python event's `caller`). That tree is
walked when the process ends (walking it costs about as much as exporting the trace, and this
keeps it out of the training steps), and each Python event whose caller is a file of the user or
of an installed library (not torch, not the standard library) is written as
[start time in ns, file, line, function]; `crosstrain analyze` joins them to the trace's events by
start time (the trace's baseTimeNanoseconds). The same file names every DataLoader the script
made, with its settings and the line that made it, and each DataLoader.__iter__ (where workers
start) is a span of its own in the trace.
"""
import functools
import json
import linecache
import os
import sys
import warnings

_LEVELS = {"level0": "Level0", "level1": "Level1", "level2": "Level2", "none": "Level_none"}
_AIC = {"pipe-utilization": "PipeUtilization", "arithmetic-utilization": "ArithmeticUtilization",
        "memory": "Memory", "memory-l0": "MemoryL0", "memory-ub": "MemoryUB",
        "resource-conflict-ratio": "ResourceConflictRatio", "l2-cache": "L2Cache", "none": "AiCoreNone"}


def _say(text):
    sys.stderr.write(f"crosstrain: {text}\n")


class StepProfiler:
    def __init__(self, cfg, torch, state, rank_of):
        self.cfg = cfg
        self.torch = torch
        self.state = state
        self.rank_of = rank_of          # () -> (rank, world size), asked when a trace is written
        self.cycle = 0
        self.files = []
        self.steps = []
        self.pid = os.getpid()
        self._prefixes = _path_prefixes()
        self.call_sites = CallSites(self._prefixes) if cfg.profile_stack else None
        self.loaders = []               # what DataLoader.__init__ was given, in creation order
        self._pending = []              # (trace path, the cycle's profiler results) to describe
        _watch_dataloaders(torch, self)
        npu = sys.modules.get("torch_npu")
        # torch.profiler warns at every cycle that it drops the last cycle's events; each cycle
        # is written before that, so the warning only adds noise to the script's output.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events at the end of each cycle")
        self.prof = self._npu_profiler(npu) if npu is not None else self._torch_profiler()
        self.prof.start()

    # -- construction ----------------------------------------------------------------------------
    def _schedule(self, module):
        c = self.cfg
        return module.schedule(wait=c.profile_wait, warmup=c.profile_warmup, active=c.profile_active,
                               repeat=c.profile_repeat)

    def _torch_profiler(self):
        from torch.profiler import ProfilerActivity, profile
        import torch.profiler as tp
        activities = [ProfilerActivity.CPU]
        if self.torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        xpu = getattr(self.torch, "xpu", None)
        if xpu is not None and xpu.is_available() and hasattr(ProfilerActivity, "XPU"):
            activities.append(ProfilerActivity.XPU)
        self.state.setdefault("profile", {})["activities"] = [a.name for a in activities]
        c = self.cfg
        return profile(activities=activities, schedule=self._schedule(tp), on_trace_ready=self._ready,
                       record_shapes=c.profile_shapes, profile_memory=c.profile_memory,
                       with_stack=c.profile_stack, with_modules=c.profile_stack)

    def _npu_profiler(self, torch_npu):
        p = torch_npu.profiler
        c = self.cfg
        kwargs = {}
        config_cls = getattr(p, "_ExperimentalConfig", None)
        if config_cls is None:
            _say("this torch_npu has no _ExperimentalConfig: --profiler-level, --aic-metrics and --l2-cache "
                 "take its defaults")
        else:
            exp = {}
            level = getattr(getattr(p, "ProfilerLevel", None), _LEVELS[c.profiler_level], None)
            if level is None:
                _say(f"this torch_npu has no profiler level {c.profiler_level}: its default is used")
            else:
                exp["profiler_level"] = level
            if c.aic_metrics:
                metric = getattr(getattr(p, "AiCMetrics", None), _AIC[c.aic_metrics], None)
                if metric is None:
                    _say(f"this torch_npu has no AI Core metric {c.aic_metrics}: its default is used")
                else:
                    exp["aic_metrics"] = metric
            exp["l2_cache"] = bool(c.l2_cache)
            try:
                kwargs["experimental_config"] = config_cls(**exp)
            except TypeError as e:
                _say(f"torch_npu's _ExperimentalConfig refused {sorted(exp)} ({e}): its defaults are used")
        activities = [p.ProfilerActivity.CPU, p.ProfilerActivity.NPU]
        self.state.setdefault("profile", {})["activities"] = ["CPU", "NPU"]
        self._npu_handler = p.tensorboard_trace_handler
        return p.profile(activities=activities, schedule=self._schedule(p), on_trace_ready=self._ready_npu,
                         record_shapes=c.profile_shapes, profile_memory=c.profile_memory,
                         with_stack=c.profile_stack, **kwargs)

    # -- traces ----------------------------------------------------------------------------------
    def _cycle_dir(self):
        d = os.path.join(self.cfg.profile, f"cycle{self.cycle}")
        os.makedirs(d, exist_ok=True)
        return d

    def _ready(self, prof):
        rank, _ = self.rank_of()
        path = os.path.join(self._cycle_dir(), f"rank{rank}.pt.trace.json")
        prof.export_chrome_trace(path)
        self._written(path)
        results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
        self._pending.append((path, results))
        while len(self._pending) > _MAX_PENDING:  # --profile-repeat 0: keep memory bounded
            self._describe(*self._pending.pop(0))

    def _describe(self, path, results):
        """Writes <trace>.sources.json next to a trace (never stops the script)."""
        doc = {"format": "crosstrain-call-sites", "version": 1, "cpus": _cpus(), "dataloaders": self.loaders}
        try:
            if self.call_sites is not None and results is not None:
                doc.update(self.call_sites.describe(results, whole_us=not _has_time_base(path)))
            stem = path[:-5] if path.endswith(".json") else path
            with open(stem + ".sources.json.tmp", "w") as f:
                json.dump(doc, f, separators=(",", ":"))
            os.replace(stem + ".sources.json.tmp", stem + ".sources.json")
        except Exception as e:
            _say(f"could not write the call sites of {path}: {type(e).__name__}: {e}")

    def _ready_npu(self, prof):
        rank, _ = self.rank_of()
        self._npu_handler(self._cycle_dir(), worker_name=f"rank{rank}")(prof)
        self._written(os.path.join(self._cycle_dir(), f"rank{rank}_*_ascend_pt"))

    def _written(self, path):
        self.files.append(path)
        self.cycle += 1
        self.state.setdefault("profile", {})["traces"] = list(self.files)

    # -- step events (StepTracker listener) ------------------------------------------------------
    def on_step_end(self, step):
        if os.getpid() == self.pid:
            self.prof.step()

    def close(self):
        if os.getpid() != self.pid:
            return
        try:
            self.prof.stop()  # writes a cycle still recording
        except Exception as e:  # a profiler that never recorded may refuse to stop
            _say(f"the profiler did not stop cleanly: {type(e).__name__}: {e}")
        while self._pending:
            self._describe(*self._pending.pop(0))
        self.state.setdefault("profile", {})["traces"] = list(self.files)

    # -- DataLoaders (called by the wrappers of _watch_dataloaders) --------------------------------
    def loader_made(self, loader):
        site = _user_site(sys._getframe(2), self._prefixes)
        self.loaders.append({
            "index": len(self.loaders), "num_workers": getattr(loader, "num_workers", None),
            "pin_memory": getattr(loader, "pin_memory", None),
            "persistent_workers": getattr(loader, "persistent_workers", None),
            "prefetch_factor": getattr(loader, "prefetch_factor", None),
            "batch_size": getattr(loader, "batch_size", None),
            "dataset": type(getattr(loader, "dataset", None)).__name__, "iterators": 0,
            "made_at": site})
        loader._crosstrain_loader = len(self.loaders) - 1


_MAX_PENDING = 2


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0


def _path_prefixes():
    """The folders torch's Python tracer strips from file names (sys.path, site-packages, torch's
    parent), longest first; [] when this torch does not say."""
    try:
        from torch.profiler.python_tracer import _prefix_regex
        return list(_prefix_regex())
    except Exception:
        return []


def _short_name(path, prefixes):
    """A file's name as the profiler writes it: without the longest sys.path entry it lies under."""
    path = os.path.abspath(path)
    return next((path[len(p):] for p in prefixes if path.startswith(p)), path)


def _user_site(frame, prefixes):
    """{file, line, text} of the innermost frame of the user's own files, or None."""
    from ._source import _classify
    while frame is not None:
        code = frame.f_code
        if _classify(code.co_filename) == 2:
            text = linecache.getline(code.co_filename, frame.f_lineno).strip()
            return {"file": _short_name(code.co_filename, prefixes), "line": frame.f_lineno, "text": text}
        frame = frame.f_back
    return None


def _watch_dataloaders(torch, profiler):
    """DataLoader.__init__ notes each loader's settings and the line that made it; __iter__ becomes
    a span of the trace named with num_workers and persistent_workers, since that is where worker
    processes start (every epoch, unless persistent_workers keeps them)."""
    data = getattr(getattr(torch, "utils", None), "data", None)
    cls = getattr(data, "DataLoader", None)
    if cls is None or getattr(cls.__init__, "_crosstrain_profile", False):
        return
    init, iterate = cls.__init__, cls.__iter__
    record_function = torch.autograd.profiler.record_function

    @functools.wraps(init)
    def __init__(loader, *args, **kwargs):
        init(loader, *args, **kwargs)
        if getattr(loader, "_crosstrain_loader", None) is None:
            try:
                profiler.loader_made(loader)
            except Exception:
                pass

    @functools.wraps(iterate)
    def __iter__(loader):
        index = getattr(loader, "_crosstrain_loader", None)
        if index is not None and index < len(profiler.loaders):
            profiler.loaders[index]["iterators"] += 1
        name = (f"DataLoader.__iter__ (num_workers={getattr(loader, 'num_workers', '?')}, "
                f"persistent_workers={getattr(loader, 'persistent_workers', '?')})")
        with record_function(name):
            return iterate(loader)

    __init__._crosstrain_profile = True
    cls.__init__, cls.__iter__ = __init__, __iter__


def _has_time_base(path):
    """Whether the exported trace names its clock's base (Kineto writes it near the start or at the
    end; a trace without one times events in whole microseconds). Reads 64 KiB at each end."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            tail = f.read()
    except OSError:
        return True
    return b'"baseTimeNanoseconds"' in head or b'"baseTimeNanoseconds"' in tail


class CallSites:
    """The caller of every Python event of a cycle that was made from a user's or a library's file
    (torch's own files and the standard library are left out: they are never the answer)."""

    def __init__(self, prefixes):
        from torch._C._profiler import _EventType
        self.kinds = (_EventType.PyCall, _EventType.PyCCall)
        self.prefixes = prefixes
        self.files = {}     # name as the profiler wrote it -> (index, kind, path) or None (internal)
        self.table = []     # [name, kind, path] by index

    def _file(self, name):
        """The profiler strips each file name of the sys.path entry it lies under: find it again."""
        known = self.files.get(name, 0)
        if known != 0:
            return known
        from ._source import _classify
        path = name
        if not name.startswith("<") and not os.path.isabs(name):
            path = next((p + name for p in self.prefixes if os.path.isfile(p + name)), os.path.abspath(name))
        kind = 0 if name.startswith("<") else _classify(path)
        entry = None
        if kind:
            entry = (len(self.table), kind, path)
            self.table.append([name, "user" if kind == 2 else "library", path])
        self.files[name] = entry
        return entry

    def describe(self, results, whole_us=False):
        """`whole_us`: the trace's timestamps are whole microseconds of the clock, truncated from
        the events' nanoseconds (no baseTimeNanoseconds: torch 2.1's Kineto); the starts written
        are truncated alike, so that `analyze` finds each event by its start."""
        self.files, self.table = {}, []
        calls, lines = [], {}
        kinds = self.kinds
        # Operators' children are walked too: a custom autograd Function's backward and the
        # forward that activation checkpointing recomputes are Python under an operator.
        stack = list(results.experimental_event_tree())
        while stack:
            e = stack.pop()
            stack.extend(e.children)
            if e.tag not in kinds:
                continue
            caller = e.extra_fields.caller
            f = self._file(caller.file_name)
            if f is None:
                continue
            line = caller.line_number
            start = e.start_time_ns // 1000 * 1000 if whole_us else e.start_time_ns
            calls.append([start, f[0], line, caller.function_name])
            key = (f[0], line)
            if key not in lines:
                lines[key] = linecache.getline(f[2], line).strip()
        calls.sort()
        return {"files": self.table, "calls": calls,
                "lines": [[k[0], k[1], text] for k, text in sorted(lines.items())]}
