"""The line of Python that made an operator run.

`where()` walks the caller's frames outwards and returns two places: `source`, the innermost frame
outside torch, the Python standard library and this agent (often a model library such as timm's
vision_transformer.py), and `user`, the innermost frame of the user's own files, when that is a
different place. A file is the user's when no installed distribution holds it (site-packages,
`pip install --target` folders, editable installs, other libraries on PYTHONPATH: _library_roots).
Classifying a file is cached, so a walk costs a few attribute reads per frame.
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
_libraries = None  # folders and files of libraries outside site-packages (see _library_roots)


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
    elif any(path == r or path.startswith(r + os.sep) for r in _library_roots()):
        k = 1
    else:
        k = 2
    _kind[filename] = k
    return k


def _user_folders():
    """The program's own folders: the script's and the working directory."""
    out = [os.getcwd()]
    main = getattr(sys.modules.get("__main__"), "__file__", None) or (sys.argv[0] if sys.argv and sys.argv[0] else "")
    if main and not main.startswith("-"):
        out.append(os.path.dirname(os.path.abspath(main)))
    return [os.path.abspath(p) for p in out]


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _library_roots():
    """Where libraries live outside site-packages: a file is the user's only when no installed
    distribution holds it. So: what every *.dist-info / *.egg-info on sys.path names
    (`pip install --target`, a PYTHONPATH folder of packages), the source folder of each editable
    install, and any sys.path entry outside the program's own folders (the script's and the working
    directory: `PYTHONPATH=src` in a project stays the user's), such as a checked-out library; an
    editable install of the program itself stays the user's too."""
    global _libraries
    if _libraries is not None:
        return _libraries
    mine = _user_folders()
    roots = set()
    for entry in sys.path:
        entry = os.path.abspath(entry or ".")
        if not os.path.isdir(entry) or entry == _AGENT_DIR or entry.startswith(_AGENT_DIR + os.sep):
            continue
        roots.update(_distribution_files(entry))
        if not any(_inside(m, entry) or _inside(entry, m) for m in mine):  # PYTHONPATH=src is the user's
            roots.add(entry)
    for root in _editable_sources():
        if not any(_inside(m, root) or _inside(root, m) for m in mine):
            roots.add(root)
    _libraries = sorted(r for r in roots if not any(_inside(m, r) and m != r for m in mine))
    return _libraries


def _distribution_files(entry):
    """The top-level packages and modules the distributions installed into `entry` name."""
    out = set()
    try:
        names = os.listdir(entry)
    except OSError:
        return out
    for meta in names:
        if not meta.endswith((".dist-info", ".egg-info")):
            continue
        tops = _read_lines(os.path.join(entry, meta, "top_level.txt"))
        if not tops:
            tops = {line.split(",", 1)[0].split("/", 1)[0] for line in _read_lines(os.path.join(entry, meta, "RECORD"))}
        for top in tops:
            if top and not top.endswith((".dist-info", ".egg-info")) and top not in ("..", "__pycache__"):
                out.add(os.path.join(entry, top[:-3] if top.endswith(".py") else top))
                if top.endswith(".py") or os.path.isfile(os.path.join(entry, top + ".py")):
                    out.add(os.path.join(entry, top if top.endswith(".py") else top + ".py"))
    return out


def _editable_sources():
    """The source folders of editable installs (PEP 660's direct_url.json with dir_info.editable)."""
    import json
    out = []
    for entry in _SITE:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for meta in names:
            if not meta.endswith(".dist-info"):
                continue
            try:
                with open(os.path.join(entry, meta, "direct_url.json")) as f:
                    info = json.load(f)
            except (OSError, ValueError):
                continue
            url = info.get("url", "") if isinstance(info, dict) else ""
            if isinstance(info, dict) and (info.get("dir_info") or {}).get("editable") and url.startswith("file://"):
                from urllib.parse import unquote, urlparse
                out.append(os.path.abspath(unquote(urlparse(url).path)))
    return out


def _read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return {line.strip() for line in f if line.strip()}
    except OSError:
        return set()


def where(skip=1):
    """(source, user): 'file:line' strings or None."""
    frame = sys._getframe(skip)
    kinds = _kind
    source = user = None
    while frame is not None:
        filename = frame.f_code.co_filename
        k = kinds.get(filename)
        if k is None:
            k = _classify(filename)
        if k:
            here = (filename, frame.f_lineno)
            if source is None:
                source = here
            if k == 2:
                user = here
                break
        frame = frame.f_back
    return _label(source), (_label(user) if user != source else None)


_labels = {}  # (filename, line) -> 'file:line'


def _label(place):
    if place is None:
        return None
    label = _labels.get(place)
    if label is None:
        label = _labels[place] = f"{_short(place[0])}:{place[1]}"
    return label


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
