"""The line of Python that made an operator run.

`where()` walks the caller's frames outwards and returns two places: `source`, the innermost frame
outside torch, the Python standard library and this agent (often a model library such as timm's
vision_transformer.py), and `user`, the innermost frame outside every installed package too (the
user's own files), when that is a different place. Classifying a file is cached, so a walk costs
a few attribute reads per frame.
"""
import linecache
import os
import sys
import sysconfig

_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))


def _prefixes():
    paths = sysconfig.get_paths()
    stdlib = [paths.get("stdlib"), paths.get("platstdlib")]
    site = [paths.get("purelib"), paths.get("platlib")]
    return ([os.path.abspath(p) + os.sep for p in stdlib if p],
            [os.path.abspath(p) + os.sep for p in site if p])


_STDLIB, _SITE = _prefixes()
_kind = {}  # filename -> 0 internal (torch, stdlib, agent), 1 installed library, 2 user file


def _classify(filename):
    k = _kind.get(filename)
    if k is not None:
        return k
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    if filename.startswith("<") or path.startswith(_AGENT_DIR + os.sep):
        k = 0
    elif any(path.startswith(p) for p in _SITE) or "/site-packages/" in path or "/dist-packages/" in path:
        top = path.split("-packages/", 1)[1].split(os.sep, 1)[0] if "-packages/" in path else ""
        k = 0 if top in ("torch", "torchgen", "functorch", "typing_extensions.py") else 1
    elif any(path.startswith(p) for p in _STDLIB):
        k = 0
    elif os.sep + "torch" + os.sep in path and os.path.exists(os.path.join(path.split(os.sep + "torch" + os.sep)[0], "torch", "__init__.py")):
        k = 0  # a torch built from source outside site-packages
    else:
        k = 2
    _kind[filename] = k
    return k


def where(skip=1):
    """(source, user): 'file:line' strings or None."""
    frame = sys._getframe(skip)
    source = user = None
    while frame is not None:
        code = frame.f_code
        k = _classify(code.co_filename)
        if k:
            here = (code.co_filename, frame.f_lineno)
            if source is None:
                source = here
            if k == 2:
                user = here
                break
        frame = frame.f_back
    return _label(source), (_label(user) if user != source else None)


def _label(place):
    if place is None:
        return None
    return f"{_short(place[0])}:{place[1]}"


_short_cache = {}
_full = {}  # short label -> the file's path


def _short(filename):
    s = _short_cache.get(filename)
    if s is None:
        path = os.path.abspath(filename)
        cwd = os.getcwd() + os.sep
        if path.startswith(cwd):
            s = path[len(cwd):]
        elif "-packages/" in path:
            s = path.split("-packages/", 1)[1]
        else:
            s = path
        _short_cache[filename] = s
        _full[s] = filename
    return s


_lines = {}


def code_line(label):
    """The text of the line a 'file:line' label of where() names ('' when unknown)."""
    text = _lines.get(label)
    if text is None:
        name, _, line = label.rpartition(":")
        text = _lines[label] = linecache.getline(_full.get(name, name), int(line)).strip()[:200] if label else ""
    return text
