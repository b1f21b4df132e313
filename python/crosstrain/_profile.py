"""`crosstrain run --profile DIR`: torch.profiler (or torch_npu.profiler on Ascend) around the
script's own steps, with the wait / warmup / active / repeat schedule of the guides.

The profiler starts when torch is imported and steps at every step the tracker finds, so the
schedule counts the script's training steps (ProfilerStep#N is step N). Each cycle of each rank
becomes one trace: DIR/cycle<k>/rank<r>.pt.trace.json (torch.profiler's Chrome-trace schema, what
`crosstrain analyze` reads); on Ascend, torch_npu's own *_ascend_pt folders under DIR/cycle<k>/.
A cycle still open when the script ends is closed and written. Activities follow the devices the
process can use: the CPU, CUDA when available, the NPU through torch_npu. An Ascend setting the
installed torch_npu does not have falls back to its default with a one-line note.
"""
import os
import sys

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
        npu = sys.modules.get("torch_npu")
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
        self.state.setdefault("profile", {})["traces"] = list(self.files)
