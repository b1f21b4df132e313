"""The agent's life in one process: armed at start-up, wired in when torch is imported, closed at
exit. One agent per process; `crosstrain run` and `crosstrain.start()` both end up here.
"""
import atexit
import functools
import json
import os
import sys
import threading
import time

from . import _lazy
from ._config import ENV_STATE_DIR, AgentConfig, ConfigError
from ._seed import Seeder
from ._steps import StepTracker

MIN_TORCH = (2, 1)
_agent = None
_lock = threading.Lock()


def _say(text):
    sys.stderr.write(f"crosstrain: {text}\n")
    sys.stderr.flush()


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.tracker = StepTracker()
        self.seeder = Seeder(cfg.seed, cfg.deterministic) if cfg.seed is not None else None
        self.recorder = None
        self.profiler = None
        self.torch_version = None
        self.state = {"pid": os.getpid()}
        self.closed = False
        self.active = False
        self._forked_child = False
        self._reported_at = 0.0

    def arm(self):
        if self.seeder is not None:
            self.seeder.at_start()
        os.register_at_fork(after_in_child=self._forked)
        _lazy.when_imported("torch", self._on_torch)

    def _forked(self):
        """A forked child is not this agent's process: it reports nothing and writes nothing (the
        recorder forgets its dump the same way)."""
        self.closed = True
        self._forked_child = True

    # -- torch is here --------------------------------------------------------------------------
    def _on_torch(self, torch):
        try:
            self._wire(torch)
        except Exception as e:  # the script must run whatever happens here
            _say(f"the agent is off in this process: {type(e).__name__}: {e}")

    def _wire(self, torch):
        self.torch_version = torch.__version__
        if _version_tuple(torch.__version__) < MIN_TORCH:
            _say(f"torch {torch.__version__} is older than {'.'.join(map(str, MIN_TORCH))}: the agent is off "
                 "in this process; the script runs as it would without crosstrain")
            return
        if self.seeder is not None:
            self.seeder.at_torch(torch)
        if self.cfg.records_anything:
            from ._record import Recorder
            self.recorder = Recorder(self.cfg, torch, self.state, self.stop_run, self._rank)
            self.tracker.add_listener(self.recorder)
            _patch_losses(torch, self.recorder)
            _patch_data_loading(torch, self.recorder)
        if self.cfg.profile:
            from ._profile import StepProfiler
            self.profiler = StepProfiler(self.cfg, torch, self.state, self._rank)
            self.tracker.add_listener(self.profiler)
        self.tracker.add_listener(self)
        self.tracker.install(torch, self.cfg.step_marker)
        self.active = True
        atexit.register(self.close)
        self._write_state()  # a process killed in its first step still says it ran under the agent

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.profiler is not None:
            self.profiler.close()
        if self.recorder is not None:
            try:
                self.recorder.close(self._run_info())
            except Exception as e:
                _say(f"could not finish the dump: {type(e).__name__}: {e}")
        self.state["closed"] = True  # the dump is finished: a signal after this lost nothing
        self._write_state()

    def on_step_end(self, step):
        """The report is written as the run goes too (each dumped step, and at most once a second),
        so a process that ends without exit handlers (os._exit, SIGTERM, SIGHUP) still says what its
        dump holds."""
        now = time.monotonic()
        recorder = self.recorder
        dumped = recorder is not None and recorder.file is not None and recorder.selected_step(step)
        if dumped or now - self._reported_at > 1.0:
            self._reported_at = now
            self._write_state(steps=step + 1)  # the tracker counts this step once the next begins

    def _run_info(self):
        """What run.json and the report say about the run."""
        info = {"steps_seen": self.tracker.step, "torch": self.torch_version, "seed": self.state.get("seed"),
                "level": self.cfg.dump_level}
        for key in ("skipped", "dump_error"):  # tensors not recorded by reason; why recording stopped
            if key in self.state:
                info[key] = self.state[key]
        return info

    def _rank(self):
        """(rank, world size): torchrun's environment, else an initialised process group, else (0, 1)."""
        env_rank, env_world = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
        if env_rank.isdigit() and env_world.isdigit():
            return int(env_rank), int(env_world)
        dist = getattr(sys.modules.get("torch"), "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def _write_state(self, steps=None):
        if not self.cfg.state_dir or not self.active or self._forked_child:
            return
        self.state["steps"] = self.tracker.step if steps is None else steps
        self.state["torch"] = self.torch_version
        if self.seeder is not None:
            self.state["seed"] = self.seeder.record
        rank, world = self._rank()
        if world > 1:
            self.state["rank"] = rank
        f = self.recorder.file if self.recorder is not None else None
        if f is not None:
            self.state["dump"] = {"dir": f.dir, "records": f.records, "bytes": f.bytes, "note": f.note}
        try:
            path = os.path.join(self.cfg.state_dir, f"agent-{os.getpid()}.json")
            with open(path + ".tmp", "w") as out:
                json.dump(self.state, out)
            os.replace(path + ".tmp", path)
        except (OSError, TypeError, ValueError):
            pass

    def stop_run(self, finding):
        """--stop-on-nonfinite: say where, keep what was recorded, end the process."""
        where = finding.get("user_source") or finding.get("source")
        _say(f"first non-finite tensor: {finding['record']} at step {finding['step']} "
             f"({finding['nan_count']} NaN, {finding['inf_count']} Inf)"
             + (f", {where}: {finding.get('code', '')}" if where else "")
             + (f" ({finding['note']})" if finding.get("note") else "") + "; stopping the run")
        self.close()
        os._exit(1)


def _version_tuple(text):
    parts = []
    for p in text.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _patch_losses(torch, recorder):
    """The loss is the tensor backward() runs from; GradScaler.scale maps a scaled loss back."""
    import torch.autograd as autograd
    original = autograd.backward
    if not getattr(original, "_crosstrain", False):
        @functools.wraps(original)
        def backward(tensors, *args, **kwargs):
            recorder.on_backward(tensors)
            return original(tensors, *args, **kwargs)
        backward._crosstrain = True
        autograd.backward = backward
    for cls in _grad_scaler_classes():
        if "scale" in cls.__dict__ and not getattr(cls.scale, "_crosstrain", False):
            cls.scale = _wrap_scale(cls.scale, recorder)
        for name in ("unscale_", "update"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_crosstrain", False):
                setattr(cls, name, _scaler_work(method, recorder))


def _patch_data_loading(torch, recorder):
    """A DataLoader's batch is made before the step (its transforms may be modules, torchvision's
    Normalize): what runs while one is fetched in this process is not recorded and opens no window."""
    from torch.utils.data import dataloader
    cls = getattr(dataloader, "_BaseDataLoaderIter", None)
    if cls is None or getattr(cls.__next__, "_crosstrain", False):
        return
    original = cls.__next__

    @functools.wraps(original)
    def __next__(it):
        return recorder.outside_steps(original, it)
    __next__._crosstrain = True
    cls.__next__ = __next__


def _grad_scaler_classes():
    import importlib
    out = []
    for path in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
        try:
            out.append(importlib.import_module(path).GradScaler)
        except (ImportError, AttributeError):
            pass
    return list(dict.fromkeys(out))


def _scaler_work(method, recorder):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        return recorder.scaler_call(method, *args, **kwargs)
    wrapper._crosstrain = True
    return wrapper


def _wrap_scale(scale, recorder):
    @functools.wraps(scale)
    def wrapper(scaler, outputs):
        result = recorder.scaler_call(scale, scaler, outputs)
        if hasattr(result, "numel"):
            recorder.on_scale(scaler, outputs, result)
        return result
    wrapper._crosstrain = True
    return wrapper


# -- public entry points ----------------------------------------------------------------------------
def start(**options):
    """Starts the agent in this process with `crosstrain run`'s options as keyword arguments
    (dump="DIR", dump_steps="0", dump_level="module|op|both", dump_mode="stats|tensors", seed=N, ...).
    Call it before the training loop; calling it again returns the running agent."""
    global _agent
    with _lock:
        if _agent is not None:
            return _agent
        options.setdefault("producer", "crosstrain.start")
        cfg = AgentConfig.from_mapping(options)
        _agent = Agent(cfg)
        _agent.arm()
        return _agent


def start_from_environment():
    global _agent
    try:
        cfg = AgentConfig.from_environment()
    except ConfigError as e:
        # A usage error of `crosstrain run`: said before the script starts, which never ran; the
        # report tells run that this line was the whole story.
        sys.stderr.write(f"crosstrain: error: {e}\n")
        sys.stderr.flush()
        _report_refusal(str(e))
        os._exit(2)
    if cfg is None:
        return None
    with _lock:
        if _agent is None:
            _agent = Agent(cfg)
            _agent.arm()
    return _agent


def _report_refusal(message):
    state_dir = os.environ.get(ENV_STATE_DIR, "")
    if not state_dir:
        return
    try:
        with open(os.path.join(state_dir, f"agent-{os.getpid()}.json"), "w") as out:
            json.dump({"pid": os.getpid(), "refused": message}, out)
    except OSError:
        pass


def stop():
    """Writes what was recorded and stops recording (also done at exit)."""
    if _agent is not None:
        _agent.close()


def current():
    return _agent
