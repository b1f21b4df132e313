"""The agent's configuration: the options of options.json (see _options.py) with the values one
process was given, by `crosstrain run` (JSON in CROSSTRAIN_AGENT_CONFIG) or by `start(**options)`
(the same names as keyword arguments). Unknown names and bad values raise ConfigError with one line.
"""
import json
import os

from ._options import OPTIONS, OptionError, check_needs, check_value, list_ranges

ENV_CONFIG = "CROSSTRAIN_AGENT_CONFIG"
ENV_STATE_DIR = "CROSSTRAIN_AGENT_STATE_DIR"  # where each process reports what it did (run's summary)

# Set by the way the agent was started, not options of run: where the process reports, and the
# producer named in the dump's header.
_SETTINGS = {"state_dir": "", "producer": "crosstrain run"}


class ConfigError(OptionError):
    pass


def parse_int_list(text, what):
    """'0-4,10' -> predicate over ints; '' or None -> every value (crosstrain's --dump-steps syntax)."""
    try:
        ranges = list_ranges("" if text is None else str(text))
    except OptionError as e:
        raise ConfigError(f"{what}: {e}")
    if not ranges:
        return lambda v: True
    return lambda v: any(lo <= v <= hi for lo, hi in ranges)


def last_of_int_list(text):
    """The largest value a list selects; None when it is unbounded ('')."""
    if text is None or text == "":
        return None
    return max(hi for _, hi in list_ranges(str(text)))


class AgentConfig:
    """One attribute per option (cfg.dump_level, cfg.seed, ...) and per setting (state_dir, producer)."""

    def __init__(self, **values):
        for option in OPTIONS:
            setattr(self, option.name, option.fresh_default())
        for name, value in _SETTINGS.items():
            setattr(self, name, value)
        for name, value in values.items():
            setattr(self, name, value)

    def values(self):
        return {name: getattr(self, name) for name in [o.name for o in OPTIONS] + list(_SETTINGS)}

    def __repr__(self):
        return "AgentConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.values().items()) + ")"

    def __eq__(self, other):
        return isinstance(other, AgentConfig) and self.values() == other.values()

    def validate(self, as_flags=False):
        """`as_flags`: a refusal names `crosstrain run`'s flag (the values came from it), not the keyword."""
        try:
            for option in OPTIONS:
                setattr(self, option.name, check_value(option, getattr(self, option.name), as_flags))
            check_needs(self.values(), as_flags)
        except OptionError as e:
            raise ConfigError(str(e)) from None
        for name in _SETTINGS:
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be text")
        return self

    @property
    def records_anything(self):
        return bool(self.dump) or self.stop_on_nonfinite

    @classmethod
    def known_names(cls):
        return [o.name for o in OPTIONS] + list(_SETTINGS)

    @classmethod
    def from_mapping(cls, values, as_flags=False):
        known = cls.known_names()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"unknown agent option(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**values).validate(as_flags)

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
        return cls.from_mapping(values, as_flags=True)
