"""Where a training step ends, found without the script's help.

A step ends when an optimizer's step returns: every torch.optim.Optimizer, whether the script calls
it directly, through GradScaler.step, an LR scheduler's wrapper, ZeroRedundancyOptimizer or a fused
implementation, reaches Optimizer's global step hooks. Nested calls (a subclass whose step calls
its parent's, both wrapped) end one step. A GradScaler that skips the optimizer because gradients
overflowed still ends the step. `module:qualname` names another boundary: the step ends when that
function returns (for loops without a torch optimizer).

Listeners: on_step_begin(step) is called when step N's window opens (after step N-1 ended, and
for step 0 when the tracker starts); on_optimizer(optimizer) right before an outermost optimizer
step runs; on_step_end(step) when it ends.
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
        if not marker:
            from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                               register_optimizer_step_pre_hook)
            self._handles.append(register_optimizer_step_pre_hook(self._pre))
            self._handles.append(register_optimizer_step_post_hook(self._post))
            self._wrap_grad_scalers(torch)
        else:
            install_marker(marker, self.end_step)
        self._emit("on_step_begin", self.step)

    def _pre(self, optimizer, args, kwargs):
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._emit("on_optimizer", optimizer)

    def _post(self, optimizer, args, kwargs):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._ended_in_call = True
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
    so a profile hook waits for the first call, swaps the global for the wrapper, counts that first
    call's return itself, then removes itself (no cost after the first step)."""

    def __init__(self, qualname, wrap, callback):
        self.qualname = qualname
        self.name = qualname.split(".")[-1]
        self.wrap = wrap
        self.callback = callback
        self.frame = None

    def install(self):
        sys.setprofile(self._profile)

    def _profile(self, frame, event, arg):
        if event == "call" and self.frame is None and frame.f_code.co_name == self.name \
                and frame.f_globals.get("__name__") == "__main__":
            owner, attr = _resolve_owner(sys.modules.get("__main__"), self.qualname)
            if owner is not None and getattr(owner, attr).__code__ is frame.f_code:
                setattr(owner, attr, self.wrap(getattr(owner, attr)))
                self.frame = frame
        elif event == "return" and frame is self.frame:
            sys.setprofile(None)
            self.frame = None
            self.callback()
