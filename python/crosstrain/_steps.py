"""Where a training step ends, found without the script's help.

A step ends when an optimizer's step returns: every torch.optim.Optimizer, whether the script calls
it directly, through GradScaler.step, an LR scheduler's wrapper, ZeroRedundancyOptimizer or a fused
implementation, reaches Optimizer's global step hooks. Nested calls (a subclass whose step calls
its parent's, both wrapped) end one step. A GradScaler that skips the optimizer because gradients
overflowed still ends the step. `module:qualname` names another boundary: the step ends when that
function returns (for loops without a torch optimizer, or with several optimizers stepped one after
the other in one iteration); optimizer steps inside it are still seen, but end no step.

An optimizer step that takes a closure (LBFGS, every Lightning step, `optimizer.step(closure)`)
runs the step's forward and backward inside the optimizer's step: the closure is wrapped so that
what it runs belongs to the forward and backward of the step, not to the optimizer.

Listeners: on_step_begin(step) is called when step N's window opens (after step N-1 ended, and
for step 0 when the tracker starts); on_optimizer(optimizer, has_closure) right before an outermost
optimizer step runs; on_closure_begin(optimizer) / on_closure_end(optimizer) around each call of its closure;
on_optimizer_end(optimizer) after an outermost optimizer step that ended no step (under a marker);
on_step_end(step) when it ends.
"""
import functools
import importlib
import sys
import threading

from . import _lazy


class StepTracker:
    def __init__(self):
        self.step = 0
        self._depth = 0
        self._ended_in_call = False
        self._listeners = []
        self._handles = []
        self._lock = threading.RLock()
        self.marker = ""

    def add_listener(self, listener):
        self._listeners.append(listener)

    def _emit(self, event, *args):
        for listener in self._listeners:
            fn = getattr(listener, event, None)
            if fn is not None:
                fn(*args)

    # -- boundaries ------------------------------------------------------------------------------
    def end_step(self):
        with self._lock:
            step = self.step
            self._emit("on_step_end", step)
            self.step += 1
            self._emit("on_step_begin", self.step)

    def install(self, torch, marker=""):
        self.marker = marker
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)
        self._handles.append(register_optimizer_step_pre_hook(self._pre))
        self._handles.append(register_optimizer_step_post_hook(self._post))
        if not marker:
            self._wrap_grad_scalers(torch)
        else:
            install_marker(marker, self.end_step)
        self._emit("on_step_begin", self.step)

    def _pre(self, optimizer, args, kwargs):
        with self._lock:
            self._depth += 1
            if self._depth != 1:
                return None
            wrapped = _with_wrapped_closure(self, optimizer, args, kwargs)
            self._emit("on_optimizer", optimizer, wrapped is not None)
        return wrapped

    def _post(self, optimizer, args, kwargs):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._ended_in_call = True
                if self.marker:
                    self._emit("on_optimizer_end", optimizer)
                else:
                    self.end_step()

    def _wrap_grad_scalers(self, torch):
        classes = []
        for path in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
            try:
                classes.append(importlib.import_module(path).GradScaler)
            except (ImportError, AttributeError):
                pass
        for cls in dict.fromkeys(classes):  # torch.cuda.amp.GradScaler subclasses torch.amp's
            if "step" in cls.__dict__ and not getattr(cls.step, "_crosstrain", False):
                cls.step = self._scaler_step(cls.step)

    def _scaler_step(self, step):
        tracker = self

        @functools.wraps(step)
        def wrapper(scaler, optimizer, *args, **kwargs):
            with tracker._lock:
                outer = tracker._depth == 0
                if outer:
                    tracker._ended_in_call = False
            result = step(scaler, optimizer, *args, **kwargs)
            if outer and not tracker._ended_in_call:  # the scaler skipped the optimizer
                tracker._emit("on_skipped_optimizer", optimizer)
                tracker.end_step()
            return result

        wrapper._crosstrain = True
        return wrapper

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def _with_wrapped_closure(tracker, optimizer, args, kwargs):
    """(args, kwargs) with the step's closure wrapped, or None when the step takes none."""
    if "closure" in kwargs and callable(kwargs["closure"]):
        kwargs = dict(kwargs)
        kwargs["closure"] = _closure(tracker, optimizer, kwargs["closure"])
        return args, kwargs
    first = 1 if args and args[0] is optimizer else 0  # torch passes the optimizer itself first
    if len(args) > first and callable(args[first]):
        args = tuple(args)
        return args[:first] + (_closure(tracker, optimizer, args[first]),) + args[first + 1:], kwargs
    return None


def _closure(tracker, optimizer, closure):
    if getattr(closure, "_crosstrain", False):
        return closure

    @functools.wraps(closure)
    def wrapper(*a, **kw):
        tracker._emit("on_closure_begin", optimizer)
        try:
            return closure(*a, **kw)
        finally:
            tracker._emit("on_closure_end", optimizer)

    wrapper._crosstrain = True
    return wrapper


def install_marker(marker, callback):
    """Calls callback() each time module:qualname returns (also when it raises)."""
    module_name, qualname = marker.split(":", 1)

    def wrap(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            finally:
                callback()
        wrapper._crosstrain = True
        return wrapper

    def patch(module):
        owner, attr = _resolve_owner(module, qualname)
        if owner is None:
            sys.stderr.write(f"crosstrain: step marker {marker}: {module.__name__} has no {qualname}\n")
            return
        fn = getattr(owner, attr)
        if not getattr(fn, "_crosstrain", False):
            setattr(owner, attr, wrap(fn))

    if module_name == "__main__":
        _MainMarker(qualname, wrap, callback).install()
    else:
        _lazy.when_imported(module_name, patch)


def _resolve_owner(module, qualname):
    parts = qualname.split(".")
    owner = module
    for p in parts[:-1]:
        owner = getattr(owner, p, None)
        if owner is None:
            return None, None
    if not hasattr(owner, parts[-1]):
        return None, None
    return owner, parts[-1]


class _MainMarker:
    """A marker inside the script itself: its function only exists once the script has defined it,
    so a hook waits for the first call, swaps the global for the wrapper, counts that first call's
    return itself, then removes itself (no cost after the first step). The hook is a profile
    function, or, where one is already set (`python -m cProfile`, a profiler of the user's), a trace
    function, so the user's profiler is never replaced. The script's globals are its frame's: under
    cProfile or runpy, sys.modules["__main__"] is not the script."""

    def __init__(self, qualname, wrap, callback):
        self.qualname = qualname
        self.name = qualname.split(".")[-1]
        self.wrap = wrap
        self.callback = callback
        self.frame = None
        self.set_hook, self.get_hook = (sys.setprofile, sys.getprofile) if sys.getprofile() is None \
            else (sys.settrace, sys.gettrace)
        self.tracing = self.set_hook is sys.settrace

    def install(self):
        self.set_hook(self._event)

    def _event(self, frame, event, arg):
        if event == "call" and self.frame is None and frame.f_code.co_name == self.name \
                and frame.f_globals.get("__name__") == "__main__":
            owner, attr = _resolve_owner(_GlobalsView(frame.f_globals), self.qualname)
            if owner is not None and getattr(getattr(owner, attr), "__code__", None) is frame.f_code:
                _set(owner, attr, self.wrap(getattr(owner, attr)))
                self.frame = frame
                return self._event if self.tracing else None  # a trace function sees returns locally
        elif event == "return" and frame is self.frame:
            if self.get_hook() == self._event:
                self.set_hook(None)
            self.frame = None
            self.callback()
        elif frame is self.frame:
            return self._event  # a local trace function that returns None stops seeing its frame
        return None if self.tracing else self._event


class _GlobalsView:
    """A module's globals dict read like the module (for _resolve_owner)."""

    def __init__(self, globals_dict):
        self.__dict__["_g"] = globals_dict

    def __getattr__(self, name):
        try:
            return self._g[name]
        except KeyError:
            raise AttributeError(name) from None


def _set(owner, attr, value):
    if isinstance(owner, _GlobalsView):
        owner._g[attr] = value
    else:
        setattr(owner, attr, value)
