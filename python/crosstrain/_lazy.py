"""Run a callback once a module has been imported, without importing it ourselves.

The agent must not import torch at start-up (it would cost every Python process a second and
change nothing the script does), and it must be in place before the script's first step. A meta
path finder sees `import torch` coming, lets the real finders locate it, and wraps the loader so
the callback runs right after the module's body has finished.
"""
import importlib.abc
import importlib.util
import sys
import threading

_lock = threading.Lock()
_waiting = {}  # module name -> callbacks


def when_imported(name, callback):
    """callback(module) now if `name` is imported, else right after its import completes."""
    module = sys.modules.get(name)
    if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False) is False:
        callback(module)
        return
    with _lock:
        _waiting.setdefault(name, []).append(callback)
        if not any(isinstance(f, _Watcher) for f in sys.meta_path):
            sys.meta_path.insert(0, _Watcher())


class _ChainedLoader(importlib.abc.Loader):
    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # The real loader is restored first: code that looks at module.__loader__ sees it.
        module.__spec__.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        with _lock:
            callbacks = _waiting.pop(self._name, [])
        for cb in callbacks:
            cb(module)

    def __getattr__(self, attr):  # get_resource_reader, is_package, ... of the real loader
        return getattr(self._loader, attr)


class _Watcher(importlib.abc.MetaPathFinder):
    _busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _waiting or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.on = False
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ChainedLoader(spec.loader, fullname)
        return spec
