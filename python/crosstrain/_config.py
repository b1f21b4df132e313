"""The agent's options: one definition for `crosstrain run` (environment) and `crosstrain.start()`.

`crosstrain run` passes them as JSON in CROSSTRAIN_AGENT_CONFIG; `start(**options)` takes the same
names as keyword arguments. Unknown names and bad values raise ConfigError with one line.
"""
import json
import os
import re
from dataclasses import dataclass, field, fields

ENV_CONFIG = "CROSSTRAIN_AGENT_CONFIG"
ENV_STATE_DIR = "CROSSTRAIN_AGENT_STATE_DIR"  # where each process reports what it did (run's summary)

DUMP_LEVELS = ("module", "op", "both")
DUMP_MODES = ("stats", "tensors")
DEFAULT_MAX_BYTES = 10 * 1024 ** 3


class ConfigError(ValueError):
    pass


def parse_int_list(text, what):
    """'0-4,10' -> predicate over ints; '' -> every value (crosstrain's --dump-steps syntax)."""
    if text is None or text == "":
        return lambda v: True
    ranges = []
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if not m:
            raise ConfigError(f"bad {what} {text!r} (expected e.g. 0-4,10,20-22)")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ConfigError(f"bad {what} range {part.strip()!r}: {hi} < {lo}")
        ranges.append((lo, hi))
    return lambda v: any(lo <= v <= hi for lo, hi in ranges)


def last_of_int_list(text):
    """The largest value a list selects; None when it is unbounded ('')."""
    if text is None or text == "":
        return None
    return max(int(p.split("-")[-1]) for p in str(text).split(","))


@dataclass
class AgentConfig:
    dump: str = ""                 # dump directory; empty: no dump
    dump_steps: str = "0"
    dump_level: str = "module"     # module | op | both
    dump_mode: str = "stats"       # stats | tensors
    dump_ranks: str = ""           # '' = every rank
    dump_filter: str = ""          # regex on record names
    dump_max_bytes: int = DEFAULT_MAX_BYTES
    dump_overwrite: bool = False
    dump_optimizer_ops: bool = False  # operator level: also the optimizer's operators (many, parameter-sized)
    seed: int = -1                 # < 0: leave the script's seeding alone
    deterministic: bool = False
    step_marker: str = ""          # module:qualname ending a step when it returns
    stop_on_nonfinite: bool = False
    test_perturb: str = ""         # test aid: "RECORD_NAME=SCALE" disturbs one record on this side
    profile: str = ""              # trace directory; empty: no profiling
    profile_wait: int = 1
    profile_warmup: int = 1
    profile_active: int = 3
    profile_repeat: int = 1
    profile_memory: bool = False
    profile_shapes: bool = False
    profile_stack: bool = True     # Python stacks: what ties operators to the script's lines
    profiler_level: str = "level1"  # Ascend (torch_npu): level0 | level1 | level2 | none
    aic_metrics: str = ""          # Ascend: pipe-utilization, arithmetic-utilization, memory, ...
    l2_cache: bool = False         # Ascend
    state_dir: str = ""            # set by `crosstrain run`
    producer: str = "crosstrain run"
    meta: dict = field(default_factory=dict)

    def validate(self):
        if self.dump_level not in DUMP_LEVELS:
            raise ConfigError(f"dump_level must be one of {', '.join(DUMP_LEVELS)}, not {self.dump_level!r}")
        if self.dump_mode not in DUMP_MODES:
            raise ConfigError(f"dump_mode must be one of {', '.join(DUMP_MODES)}, not {self.dump_mode!r}")
        parse_int_list(self.dump_steps, "step list")
        parse_int_list(self.dump_ranks, "rank list")
        if self.dump_filter:
            try:
                re.compile(self.dump_filter)
            except re.error as e:
                raise ConfigError(f"dump_filter {self.dump_filter!r} is not a regular expression: {e}")
        if int(self.dump_max_bytes) <= 0:
            raise ConfigError("dump_max_bytes must be positive")
        if self.step_marker and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", self.step_marker):
            raise ConfigError(f"step_marker must be module:function (e.g. train:train_step), not {self.step_marker!r}")
        if self.profile:
            for name in ("profile_wait", "profile_warmup", "profile_repeat"):
                if int(getattr(self, name)) < 0:
                    raise ConfigError(f"{name} must be 0 or more")
            if int(self.profile_active) < 1:
                raise ConfigError("profile_active must be at least 1: a schedule without active steps records nothing")
            from ._profile import _AIC, _LEVELS
            if self.profiler_level not in _LEVELS:
                raise ConfigError(f"profiler_level must be one of {', '.join(_LEVELS)}")
            if self.aic_metrics and self.aic_metrics not in _AIC:
                raise ConfigError(f"aic_metrics must be one of {', '.join(_AIC)}")
        if self.test_perturb and "=" not in self.test_perturb:
            raise ConfigError("test_perturb must be RECORD_NAME=SCALE")
        return self

    @property
    def records_anything(self):
        return bool(self.dump) or self.stop_on_nonfinite

    @classmethod
    def from_mapping(cls, values):
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown agent option(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**values).validate()

    @classmethod
    def from_environment(cls, environ=None):
        """None when the environment asks for nothing (the agent stays off)."""
        environ = os.environ if environ is None else environ
        text = environ.get(ENV_CONFIG)
        if not text:
            return None
        try:
            values = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"{ENV_CONFIG} is not JSON: {e}")
        if not isinstance(values, dict):
            raise ConfigError(f"{ENV_CONFIG} must hold a JSON object")
        values.setdefault("state_dir", environ.get(ENV_STATE_DIR, ""))
        return cls.from_mapping(values)
