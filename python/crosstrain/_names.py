"""Module and parameter names as `named_modules()` gives them, for any model the script builds.

The script never tells the agent which module is its model. The first module called while no other
module is running is a root: its submodules and parameters are named from it. The first root that
has parameters is named like the model itself ("", so its submodules are "layer1.0.conv1"); any
other root (a loss module, a second network of a GAN) is prefixed with its class name
("Discriminator.main.0"), with "_2", "_3", ... for a further root of the same class, the model's
own class counting as taken (a model "" is labelled by its class: Lightning's autoencoder calls an
encoder and a decoder that are both `Sequential`, named "" and "Sequential_2"; "#k" stays the
repetition of a record name in a step). Wrappers that only
forward to the model (DistributedDataParallel, DataParallel, torch.compile's module) are
transparent: their inner module's names are used, so one process and N ranks dump the same names.
"""
import threading

_WRAPPER_ATTRS = ("module", "_orig_mod")
_WRAPPER_CLASSES = ("DistributedDataParallel", "DataParallel", "OptimizedModule")


def unwrap(module):
    while type(module).__name__ in _WRAPPER_CLASSES:
        inner = next((getattr(module, a) for a in _WRAPPER_ATTRS if hasattr(module, a)), None)
        if inner is None:
            break
        module = inner
    return module


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix and name else (prefix or name)


class ModuleNames:
    def __init__(self):
        self._paths = {}        # id(module) -> path
        self._modules = {}      # id(module) -> module (keeps ids from being reused)
        self._params = {}       # id(param) -> name
        self._transparent = set()
        self._main_taken = False
        self._class_count = {}
        self._local = threading.local()
        self.entered = 0        # module calls seen (a compiled model's inner modules are not)

    # -- the stack of running modules (per thread) -------------------------------------------------
    def stack(self):
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    def current_path(self):
        s = self.stack()
        return s[-1][1] if s else ""

    def current_label(self):
        """The running module's record path ("" outside every module; a root named "" by class)."""
        s = self.stack()
        return self.label(s[-1][1], s[-1][0]) if s else ""

    def enter(self, module):
        """Pushes module; returns (path, is_root, transparent)."""
        s = self.stack()
        is_root = not s
        key = id(module)
        if key not in self._paths:
            if is_root:
                self._register_root(module)
            else:
                self._paths[key] = _join(s[-1][1], type(module).__name__)
                self._modules[key] = module
        path = self._paths[key]
        s.append((module, path))
        self.entered += 1
        return path, is_root, key in self._transparent

    def exit(self):
        s = self.stack()
        if s:
            s.pop()

    def label(self, path, module):
        """The record path of a module: its path, or its class name for a root named ""."""
        return path if path else type(unwrap(module)).__name__

    def _register_root(self, module):
        inner = unwrap(module)
        has_params = next(iter(inner.parameters()), None) is not None
        cls = type(inner).__name__
        n = self._class_count.get(cls, 0)
        self._class_count[cls] = n + 1
        if has_params and not self._main_taken:
            prefix = ""  # labelled by its class, which it takes
            self._main_taken = True
        else:
            prefix = cls if n == 0 else f"{cls}_{n + 1}"
        m = module
        while m is not inner:
            self._transparent.add(id(m))
            self._paths[id(m)] = prefix
            self._modules[id(m)] = m
            m = next(getattr(m, a) for a in _WRAPPER_ATTRS if hasattr(m, a))
        for name, sub in inner.named_modules(remove_duplicate=False):
            if id(sub) not in self._paths:
                self._paths[id(sub)] = _join(prefix, name)
                self._modules[id(sub)] = sub
        for name, p in inner.named_parameters(remove_duplicate=False):
            self._params.setdefault(id(p), _join(prefix, name))

    def param_name(self, p, fallback):
        return self._params.get(id(p), fallback)
