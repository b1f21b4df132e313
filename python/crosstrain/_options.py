"""The options of `crosstrain run` and `crosstrain.start()`, read from options.json beside this file.

The same table is embedded into crosstrain's C++ front when it is built, which makes its flags, its
help and its checks from it; `check()` here is the agent's side of the same checks. Each type's check
is written once per language (check_value below, src/tools/run/run_options.cpp), and a test tries
valid and invalid values of every option on both sides (tests/cli/run_options_test.cpp).
"""
import copy
import json
import math
import os
import re

TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "options.json")


class OptionError(ValueError):
    pass


class Option:
    def __init__(self, entry):
        self.name = entry["name"]
        self.type = entry["type"]
        self.default = entry.get("default")
        self.choices = tuple(entry.get("choices", ()))
        self.pattern = entry.get("pattern", "")
        self.min = entry.get("min")
        self.max = entry.get("max")
        self.needs = entry.get("needs", "")
        self.group = entry.get("group", "")
        self.metavar = entry.get("metavar", "")
        self.help = entry.get("help", "")
        self.doc = entry.get("doc", "")
        self.hidden = bool(entry.get("hidden", False))

    @property
    def flag(self):
        return "--" + self.name.replace("_", "-")

    def fresh_default(self):
        return copy.deepcopy(self.default)


def _load():
    with open(TABLE_PATH) as f:
        table = json.load(f)
    return table, tuple(Option(e) for e in table["options"])


TABLE, OPTIONS = _load()
BY_NAME = {o.name: o for o in OPTIONS}

_LIST_ITEM = r"[0-9]{1,15}(?:-[0-9]{1,15})?"
_LIST = re.compile(rf"{_LIST_ITEM}(?:,{_LIST_ITEM})*")
_BYTES = re.compile(r"([0-9]+) *([A-Za-z]*)")


def list_ranges(text):
    """'0-4,10' -> [(0, 4), (10, 10)]; '' -> [] (every value). The syntax of --dump-steps and the
    C++ side's StepSelection::parse: no spaces, no empty items, at most 15 digits a number."""
    if text == "":
        return []
    if not isinstance(text, str) or not _LIST.fullmatch(text):
        raise OptionError(f"bad list {text!r} (expected e.g. 0-4,10,20-22)")
    ranges = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        lo, hi = int(lo), int(hi or lo)
        if hi < lo:
            raise OptionError(f"bad list {text!r}: {hi} < {lo} in {part!r}")
        ranges.append((lo, hi))
    return ranges


def byte_count(value):
    """An int, or text with an optional unit as the front's --dump-max-bytes takes it (10G, 512MiB;
    powers of 1024); None when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    m = _BYTES.fullmatch(value)
    if not m:
        return None
    unit = m.group(2).lower()
    if unit in ("", "b"):
        power = 0
    elif unit[0] in "kmgtpe" and unit[1:] in ("", "b", "i", "ib"):
        power = "kmgtpe".index(unit[0]) + 1
    else:
        return None
    return int(m.group(1)) * 1024 ** power


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_value(option, value, as_flag=False):
    """The value as the agent keeps it; OptionError naming the option when it is not one it takes:
    as `crosstrain run`'s flag (--dump-filter) when `as_flag`, else as start()'s keyword."""
    name, kind = (option.flag if as_flag else option.name), option.type
    if value is None and option.default is None:
        return None
    if kind == "bool":
        if not isinstance(value, bool):
            raise OptionError(f"{name} must be true or false, not {value!r}")
        return value
    if kind in ("int", "bytes"):
        number = byte_count(value) if kind == "bytes" else (value if _is_int(value) else None)
        if number is None or not option.min <= number <= option.max:
            what = "a byte count" if kind == "bytes" else "an integer"
            raise OptionError(f"{name} must be {what} between {option.min} and {option.max}, not {value!r}")
        return number
    if kind == "key_values":
        # The flag gives text; start() may give numbers too (meta={"threads": 2}), written as given.
        if not isinstance(value, dict) or not all(isinstance(k, str) and k and _meta_value(v)
                                                  for k, v in value.items()):
            raise OptionError(f"{name} must map names to text or numbers (KEY=VALUE), not {value!r}")
        return dict(value)
    if not isinstance(value, str):
        raise OptionError(f"{name} must be text, not {value!r}")
    if value == "" and option.default == "":
        return value
    if kind == "choice" and value not in option.choices:
        raise OptionError(f"{name} must be one of {', '.join(option.choices)}, not {value!r}")
    if kind == "list":
        try:
            list_ranges(value)
        except OptionError as e:
            raise OptionError(f"{name}: {e}")
    if kind == "regex":
        try:
            re.compile(value)
        except re.error as e:
            raise OptionError(f"{name} {value!r} is not a regular expression: {e}")
    if option.pattern and not re.fullmatch(option.pattern, value):
        raise OptionError(f"{name} takes {option.metavar}, not {value!r}")
    return value


def check_needs(values, as_flag=False):
    """An option left at its default needs nothing; one set needs the option it names set too."""
    for option in OPTIONS:
        if option.needs and values[option.name] != option.default and not values[option.needs]:
            needed = BY_NAME[option.needs]
            if as_flag:
                raise OptionError(f"{option.flag} needs {needed.flag}")
            raise OptionError(f"{option.name} needs {needed.name}")


def _default_text(option):
    if option.type == "bool":
        return "on" if option.default else "off"
    if option.default is None or option.default in ("", {}):
        return "-"
    if option.type == "bytes" and option.default % 1024 ** 3 == 0:
        return f"{option.default // 1024 ** 3} GiB"
    return f"`{option.default}`"


def _flag_text(option):
    if option.type == "bool":
        return f"`{option.flag}`" + (f" / `--no-{option.flag[2:]}`" if option.default else "")
    return f"`{option.flag} {option.metavar or option.name.upper()}`" if option.metavar else f"`{option.flag}`"


def _plain_number(n):
    """2^50, 10^9, 9 x 10^15: a bound as a reader takes it in."""
    if n > 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    digits = str(n).rstrip("0")
    zeros = len(str(n)) - len(digits)
    if zeros >= 6 and len(digits) == 1:
        return ("" if digits == "1" else f"{digits} x ") + f"10^{zeros}"
    return str(n)


def _accepts_text(option):
    kind = option.type
    if kind == "choice":
        return ", ".join(f"`{c}`" for c in option.choices)
    if kind in ("int", "bytes"):
        top = _plain_number(option.max)
        return f"{option.min} to {top}" + (", with K, M, G, T (powers of 1024)" if kind == "bytes" else "")
    return {"bool": "a flag (`True` or `False`)", "path": "a folder", "list": "`0-4,10` (`''`: all)", "regex": "a Python regex",
            "key_values": "`KEY=VALUE`, repeated", "text": f"`{option.metavar}`"}[kind]


def markdown_table():
    """docs/RUN.md's table of options (a test checks the file holds exactly this)."""
    lines = ["| flag | `start()` keyword | default | accepts | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        if option.hidden:
            continue
        needs = f"; needs `{BY_NAME[option.needs].flag}`" if option.needs else ""
        lines.append(f"| {_flag_text(option)} | `{option.name}` | {_default_text(option)} | {_accepts_text(option)} "
                     f"| {option.doc}{needs} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")


def _meta_value(v):
    """Text, a finite number or a bool: what a dump header's meta holds."""
    if isinstance(v, str) or isinstance(v, bool):
        return True
    return isinstance(v, (int, float)) and math.isfinite(v)
