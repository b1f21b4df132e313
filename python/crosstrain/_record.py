"""What the agent records on a dumped step: module outputs, output and parameter gradients, the
loss and the loss scale (module level), every aten operator in forward, backward and the optimizer
(operator level, `_ops.OpMode`).

A step's window opens at its first module call, or in a script that calls no module at its first
operator on a tensor that requires gradients with gradients enabled (so the model's construction,
its initialisation under no_grad and the data loading before the forward are not part of step 0),
and closes when the step ends. What runs while a DataLoader makes a batch in this process (its
transforms, which may be modules such as torchvision's Normalize) is never recorded. Two kinds of
window are provisional, and the first call of a module with parameters (with gradients on, for the
second) starts the window again, dropping what was recorded before it: one opened by an operator (a
model that copies layers in its __init__ with gradients on runs such operators before its first
forward), and one opened by a forward without gradients (a validation batch after an optimizer
step, Lightning's sanity check), which at the end of a run that stepped is dropped too. A script that
only runs forwards without gradients (an evaluation) keeps them. On steps that are not dumped
nothing is installed. Every tensor goes through `emit`, which names it, applies the filter,
the test disturbance and the non-finite check, and queues it with its statistics.
"""
import functools
import os
import re
import sys
import weakref

from . import _source, _stats
from ._dumpfile import DumpFile, TakenBySibling
from ._grad_outputs import hook_gradient
from ._names import ModuleNames
from ._nonfinite import NonfiniteWatch
from ._recompute import Recompute


def flatten(value, label):
    """(label, tensor) pairs of a module output: tensors, tuples/lists ([i]) and mappings ([key])."""
    import torch
    if isinstance(value, torch.Tensor):
        return [(label, value)]
    out = []
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return flatten(value[0], label)
        for i, v in enumerate(value):
            out.extend(flatten(v, f"{label}[{i}]"))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(flatten(v, f"{label}[{k}]"))
    return out


def _guarded(method):
    """A recorder entry point called from the script's own calls (hooks, optimizer steps): an
    exception of the agent stops recording with one line and never reaches the script."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            self.fail(e)
            return None
    return wrapper


def _agent_operators(method):
    """A recorder method that runs tensor operators of its own (the loss's copy, the step's mean):
    the operator recorder leaves them out (busy), so they are neither records of the script's step
    nor counted in it."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        before, self.busy = self.busy, True
        try:
            return method(self, *args, **kwargs)
        finally:
            self.busy = before
    return wrapper


def _always_called(register, hook):
    """A forward hook registered to run also when the call raises (always_call, torch 2.1 on)."""
    try:
        return register(hook, always_call=True)
    except TypeError:  # torch before 2.1
        return register(hook)


class Recorder:
    def __init__(self, cfg, torch, state, on_stop, rank_of):
        self.cfg = cfg
        self.torch = torch
        self.rank_of = rank_of                  # () -> (rank, world size)
        self.state = state                      # the agent's report (nonfinite finding, notes)
        self.on_stop = on_stop                  # --stop-on-nonfinite: called with the finding
        self.names = ModuleNames()
        self.selected_step = _parse(cfg.dump_steps)
        self.last_step = _last(cfg.dump_steps)
        self.selected_rank = _parse(cfg.dump_ranks)
        self.filter = re.compile(cfg.dump_filter) if cfg.dump_filter else None
        # What goes into the dump, and what runs: --stop-on-nonfinite watches every operator (the first
        # NaN is an operator's output) whatever the dump records.
        self.dump_modules = bool(cfg.dump) and cfg.dump_level in ("module", "both")
        self.dump_ops = bool(cfg.dump) and cfg.dump_level in ("op", "both")
        self.modules = self.dump_modules
        self.ops = self.dump_ops or cfg.stop_on_nonfinite
        self.tensors = cfg.dump_mode == "tensors"
        self.perturb = _parse_perturb(cfg.test_perturb)
        self.pid = os.getpid()
        self.file = None
        self.step = 0
        self.armed = False          # this step is recorded; waiting for its first module call
        self.open = False           # the window is open: hooks record
        self.provisional = None     # a window that may not be the step's: the dump's mark to go back to
        self.provisional_kind = None  # "operator" (opened by one) or "no_grad" (by a forward without gradients)
        self.finished = False       # past the last dumped step (no stop_on_nonfinite)
        self.in_optimizer = False
        self.backward_site = (None, None)  # (source, user) of this step's latest backward() call
        self._hooks = []
        self._own_hooks = {}        # id(module) -> our hook, last of the module's own forward hooks
        self.recompute = Recompute(torch)
        self._mode = None
        self._losses = []           # this step's losses (for loss.jsonl)
        self._loss_log = []         # (step, mean loss tensor or float) not yet written
        self._scaled = {}           # id(scaled loss) -> (loss, scale)
        self._closure_calls = 0     # this step's closure evaluations (LBFGS evaluates one several times)
        self._step_scaler = None    # the GradScaler that scaled this step's loss (its backward overflows by design)
        self.in_scaler = False      # a GradScaler's own work (scale, unscale_, update) is running
        self.watch = NonfiniteWatch(torch, state, on_stop)
        self.last_file = None
        self.busy = False
        self._seen = {}             # id(tensor) -> (weakref, version, statistics) within a step
        self._compiled_marks = {}   # id(compiled model) -> module calls seen when it was called
        # A forked child (a DataLoader worker) inherits the hooks and the dispatch mode: it records
        # nothing and must not pay for the mode.
        self.failed = False
        os.register_at_fork(before=self._before_fork, after_in_child=self._forget_in_child)

    # -- step events (StepTracker listener) -------------------------------------------------------
    @_guarded
    def on_step_begin(self, step):
        self.step = step
        self.armed = False
        if self.finished:
            return
        if self.cfg.stop_on_nonfinite or self.selected_step(step):
            self.armed = True
            self._install_module_hooks()
            if self.ops:  # watches for a step that calls no module (_ops.OpMode opens the window)
                self._op_mode().push()

    @_guarded
    def on_optimizer(self, optimizer, has_closure=False):
        """Before an optimizer step: its parameters' gradients, unless the step computes them in its
        closure (then they are recorded when the closure returns)."""
        if not has_closure:
            self._param_grads(optimizer)
        self._enter_optimizer()

    @_guarded
    def on_closure_begin(self, optimizer):
        self._closure_calls += 1
        self.in_optimizer = False  # the closure's operators are the step's forward and backward
        if self._mode is not None:
            self._mode.resume()

    @_guarded
    def on_closure_end(self, optimizer):
        self._param_grads(optimizer)
        self._enter_optimizer()

    def _enter_optimizer(self):
        """The optimizer's own operators are recorded only with --dump-optimizer-ops (nor watched by
        --stop-on-nonfinite): otherwise the mode steps aside until the step ends or a closure runs."""
        self.in_optimizer = True
        if self._mode is not None and not self.cfg.dump_optimizer_ops:
            self._mode.suspend()

    @_guarded
    def on_optimizer_end(self, optimizer):
        """An optimizer step that ended no step (a --step-marker names the step): what follows it
        in the step is not the optimizer's."""
        self.in_optimizer = False
        if self._mode is not None:
            self._mode.resume()

    @_guarded
    def on_skipped_optimizer(self, optimizer):
        self.on_optimizer(optimizer)
        if self.watch.deferred is not None:
            scaler = self._step_scaler
            scale = float(scaler.get_scale()) if scaler is not None else None
            self.watch.judge_scaled_step(True, scale)

    def _param_grads(self, optimizer):
        if self.open and self.modules:
            for gi, group in enumerate(optimizer.param_groups):
                for pi, p in enumerate(group["params"]):
                    if p.grad is not None:
                        name = self.names.param_name(p, f"param_group{gi}.{pi}")
                        self.emit(f"param_grad/{name}", "param_grad", p.grad)

    @_guarded
    def on_step_end(self, step):
        self.in_optimizer = False
        self._step_scaler = None
        if self._closure_calls > 1 and self._losses:  # a line search: the step's loss is its first evaluation's
            self._losses = self._losses[:1]
        self._closure_calls = 0
        if self.watch.deferred is not None:
            self.watch.judge_scaled_step(False, None)
        self._close_window()
        self._log_step_loss(step)
        if self.file is not None:
            self.file.flush()
        if self.last_step is not None and step >= self.last_step and not self.cfg.stop_on_nonfinite:
            self.finished = True

    # -- window -------------------------------------------------------------------------------------
    def _install_module_hooks(self):
        """Global hooks: a module call's record is its output as the call returns it, so a module
        with forward hooks of its own (which run after the global ones and may replace the output)
        is recorded by a hook of ours put last among them (_last_of_own_hooks). always_call: a call
        that raises (the early stop of a non-reentrant checkpoint's recompute) still leaves."""
        if self._hooks:
            return
        import torch.nn.modules.module as mm
        post = _always_called(mm.register_module_forward_hook, self._global_post_forward)
        self._hooks = [mm.register_module_forward_pre_hook(self._pre_forward), post]
        self.recompute.clear()

    def _remove_module_hooks(self):
        for h in self._hooks:
            h.remove()
        self._hooks = []
        for h in self._own_hooks.values():
            h.remove()
        self._own_hooks = {}

    def _last_of_own_hooks(self, module):
        """Puts our hook last among the module's own forward hooks (before they run: Module's call
        takes its list of hooks after the forward)."""
        handle = self._own_hooks.get(id(module))
        if handle is None:
            handle = _always_called(module.register_forward_hook, self._post_forward)
            self._own_hooks[id(module)] = handle
        elif next(reversed(module._forward_hooks)) != handle.id:
            module._forward_hooks.move_to_end(handle.id)  # the script added one after ours

    def _open_window(self):
        if _in_dataloader_worker(self.torch):  # a spawned or forkserver worker runs the agent anew
            self.retire()
            return
        if not self.selected_rank(self.rank_of()[0]) and not self.cfg.stop_on_nonfinite:
            self.retire()
            return
        self.open = True
        if self.ops:
            self._op_mode().push()

    def retire(self):
        """Records nothing more in this process (hooks removed, the mode popped where it can be)."""
        self.armed = self.open = False
        self.finished = True
        self.provisional = self.provisional_kind = None
        self._remove_module_hooks()
        if self._mode is not None:
            self._mode.pop()

    def fail(self, error):
        """The agent failed (a dump that cannot be written, a tensor it cannot read): recording
        stops with one line, what was written stays, and the script goes on."""
        if self.failed:
            return
        self.failed = True
        reason = f"{type(error).__name__}: {error}"
        self.state["dump_error"] = reason
        sys.stderr.write(f"crosstrain: recording stopped at step {self.step} ({reason}); "
                         "the script goes on without the agent's dump\n")
        sys.stderr.flush()
        if self.file is not None:
            self.file.abandon()
        self.retire()

    def _before_fork(self):
        if self.file is not None:
            self.file.sync_buffers()  # a child must not inherit buffered lines and write them again

    def _forget_in_child(self):
        """A forked child (a DataLoader worker, a process the script forks) inherits the hooks, the
        mode and the dump's open files: it writes nothing and records nothing."""
        if self.file is not None:
            self.file.disown()
        self.file = None
        self._loss_log, self._losses = [], []
        self.retire()

    def _op_mode(self):
        if self._mode is None:
            from ._ops import OpMode
            self._mode = OpMode(self)
        return self._mode

    def open_at_operator(self):
        """A recorded step of a script that calls no module: its window opens at the first operator
        that runs with gradients on a tensor that requires them (its forward)."""
        if self.armed and not self.open:
            self._open_window()
            if self.open:
                self._mark_provisional("operator")

    def _mark_provisional(self, kind):
        self.provisional = self.file.mark() if self.file is not None else ()
        self.provisional_kind = kind

    def _restart_window(self):
        """A module with parameters runs in a provisional window: what ran before it was the model's
        construction (a window an operator opened) or a forward without gradients (a validation
        batch between two optimizer steps, Lightning's sanity check), not the step."""
        if self.file is not None:
            self.file.rollback(self.provisional or None)
        self.provisional = self.provisional_kind = None
        self._seen.clear()
        self.recompute.clear()
        if self._mode is not None:
            self._mode.forget()

    def _close_window(self):
        self._seen.clear()
        if self._mode is not None:
            self._mode.pop()
        self.open = False
        self.armed = False
        self.provisional = self.provisional_kind = None
        self._remove_module_hooks()
        self.names.stack().clear()

    @_guarded
    def _pre_forward(self, module, args):
        # busy: the agent's own work, or a DataLoader making a batch (its transforms' modules)
        if os.getpid() != self.pid or self.busy or _is_compiling(self.torch):  # dynamo never traces the agent
            return None
        if module._forward_hooks:
            self._last_of_own_hooks(module)
        if self.recompute.enter(module):  # checkpointing's forward again, inside backward: named only
            self.names.enter(module)
            return None
        path, is_root, _ = self.names.enter(module)
        if is_root and self.provisional is not None and self.open and _has_parameters(module) and \
                (self.provisional_kind == "operator" or self.torch.is_grad_enabled()):
            self._restart_window()
        if is_root and self.armed and not self.open:
            self._open_window()
            if self.open and not self.torch.is_grad_enabled():
                # A validation forward between optimizer steps is not the next step's: a forward with
                # gradients that follows in this step starts the window again without it.
                self._mark_provisional("no_grad")
        if type(module).__name__ == "OptimizedModule":
            self._compiled_call(module)
        if self.open and self.modules:
            self.recompute.called(module)
        return None

    def _global_post_forward(self, module, args, output):
        if id(module) in self._own_hooks:
            return None  # recorded by our hook after the module's own ones
        return self._post_forward(module, args, output)

    @_guarded
    def _post_forward(self, module, args, output):
        if os.getpid() != self.pid or self.busy or _is_compiling(self.torch):
            return None
        if self.recompute.depth():
            self.names.exit()
            self._recomputed(self.recompute.exit(), args, output)
            return None
        s = self.names.stack()
        path = s[-1][1] if s else ""
        transparent = id(module) in self.names._transparent
        if transparent and self._compiled_marks.pop(id(module), None) == self.names.entered:
            transparent = False  # the compiled graph ran: its modules were not seen, its output is the model's
        self.names.exit()
        if not self.open or not self.modules or transparent:
            self.recompute.returned(module, None, False)
            return None
        label = self.names.label(path, module)
        replaced = None
        names, hooked = [], False
        for sub, t in flatten(output, label):
            if not self.recordable(t):
                continue
            name = self.emit(f"forward/{sub}", "forward", t, replaceable=True)
            if isinstance(name, tuple):  # the test disturbance returned a replacement
                name, replaced = name
                t = replaced
            names.append(name[len("forward/"):])
            if t.requires_grad:
                self._hook_gradient(t, names[-1], args)
                hooked = True
        self.recompute.returned(module, names, hooked)
        if replaced is not None and isinstance(output, self.torch.Tensor):
            return replaced
        return None

    def _recomputed(self, call, args, output):
        """A recomputed module call: its output's gradient is hooked under the names of the forward
        call it repeats when that call's output had no graph (reentrant checkpointing); nothing else."""
        if call is None or call.hooked or not call.names or not self.open or not self.modules:
            return
        outputs = [t for _, t in flatten(output, "") if _stats.dumpable(t)]
        if len(outputs) == len(call.names):
            for name, t in zip(call.names, outputs):
                if t.requires_grad:
                    self._hook_gradient(t, name, args)

    def _hook_gradient(self, t, label, args):
        step = self.step
        hook_gradient(t, lambda region: self._grad_hook(step, label, region), args, self._count_skipped)

    def _count_skipped(self, reason):
        skipped = self.state.setdefault("skipped", {})
        skipped[reason] = skipped.get(reason, 0) + 1

    def _compiled_call(self, module):
        """A torch.compile'd model: its inner modules run inside the compiled graph, unseen (their
        records exist only when it runs eagerly), so its own output stands for the model's."""
        self._compiled_marks[id(module)] = self.names.entered
        if "compiled" not in self.state and self.open:
            self.state["compiled"] = True
            sys.stderr.write(
                "crosstrain: a torch.compile'd model: " + (
                    "an operator dump runs it eagerly on the dumped steps (a dispatch mode turns compilation "
                    "off), so its records are the eager program's" if self.ops else
                    "module level records what runs outside its compiled graphs (the model's output, the "
                    "parameters' gradients, the loss); the modules inside are not seen") +
                "; to compare compiled against eager, dump the same command with TORCHDYNAMO_DISABLE=1 at module "
                "level as the other side and compare them with --allow-missing\n")

    def _grad_hook(self, step, label, region=None):
        """region: the gradient's part that is the output's (a view's place in its base's gradient)."""
        def hook(grad):
            if self.open and self.step == step:
                try:
                    self._grad_output(label, grad, region)
                except Exception as e:
                    self.fail(e)
        return hook

    @_agent_operators
    def _grad_output(self, label, grad, region):
        self.emit(f"grad_output/{label}", "grad_output", region(grad) if region is not None else grad, unique=False)

    # -- losses -------------------------------------------------------------------------------------
    @_guarded
    def on_scale(self, scaler, loss, scaled):
        self._scaled[id(scaled)] = (loss, scaler)
        self._step_scaler = scaler

    def scaler_call(self, fn, *args, **kwargs):
        """A GradScaler method (scale, unscale_, update): its operators' range is the scale's."""
        before, self.in_scaler = self.in_scaler, True
        try:
            return fn(*args, **kwargs)
        finally:
            self.in_scaler = before

    @_guarded
    def on_backward(self, tensors):
        if self.torch._C._current_autograd_node() is not None:
            return  # a backward inside backward (reentrant checkpointing's): not the step's loss
        if self.open:
            self.backward_site = _source.where(1)
        t = tensors[0] if isinstance(tensors, (tuple, list)) and len(tensors) == 1 else tensors
        if not isinstance(t, self.torch.Tensor) or t.numel() != 1 or not t.is_floating_point():
            return
        self._on_loss(t)

    @_agent_operators
    def _on_loss(self, t):
        loss, scaler = self._scaled.pop(id(t), (t, None))
        self._scaled.clear()
        self._losses.append(self._loss_value(loss))
        if self.open and self.modules:
            self.emit("loss", "loss", loss.detach().reshape(()))
            if scaler is not None and getattr(scaler, "_scale", None) is not None:
                self.emit("loss_scale", "loss_scale", scaler._scale.detach().reshape(()).float())

    def _loss_value(self, loss):
        """The loss for the loss log: float64 as it is, half and bfloat16 widened to float32 (exact)."""
        v = loss.detach().reshape(())
        return v if v.dtype == self.torch.float64 else v.float()

    @_agent_operators
    def _log_step_loss(self, step):
        if self._losses:
            if len({v.dtype for v in self._losses}) > 1:
                self._losses = [v.double() for v in self._losses]
            mean = self.torch.stack(self._losses).mean() if len(self._losses) > 1 else self._losses[0]
            self._loss_log.append((step, mean))
            self._losses = []
        if self._loss_log and (self._loss_log[0][1].device.type == "cpu" or len(self._loss_log) >= 32):
            self.write_losses()

    @_agent_operators
    def write_losses(self):
        if not self._loss_log or not self.cfg.dump:
            self._loss_log = []
            return
        values = self.torch.stack([v.to("cpu") for _, v in self._loss_log]).tolist()
        f = self.dump_file()
        if f is not None:
            for (step, _), v in zip(self._loss_log, values):
                f.log_loss(step, v)
        self._loss_log = []

    # -- records ------------------------------------------------------------------------------------
    def dump_file(self):
        if self.file is None and self.cfg.dump:
            directory = self.cfg.dump
            rank, world = self.rank_of()
            if world > 1:
                directory = os.path.join(directory, f"rank{rank}")
            elif _multiprocessing_child():  # a Pool's or a Process's: DIR is the command's own process's
                directory = os.path.join(directory, f"pid{os.getpid()}")
            meta = dict(self.cfg.meta)
            meta.setdefault("level", self.cfg.dump_level)
            run_id = self.cfg.state_dir  # one per `crosstrain run`

            def open_in(d):
                return DumpFile(d, self.cfg.dump_mode, self.cfg.producer, meta, self.cfg.dump_max_bytes,
                                overwrite=self.cfg.dump_overwrite, run_id=run_id)
            try:
                self.file = open_in(directory)
            except TakenBySibling:  # python a.py && python b.py: each process its own place
                self.file = open_in(os.path.join(directory, f"pid{os.getpid()}"))
        return self.file

    @_agent_operators
    def outside_steps(self, fn, *args):
        """fn(*args) with nothing recorded and no step opened (a DataLoader making a batch)."""
        return fn(*args)

    @_agent_operators
    def emit(self, base, kind, tensor, extra=None, unique=True, replaceable=False, inputs=None):
        """Names, filters, disturbs (test aid), checks and queues one tensor; returns its name.
        inputs: an operator's (args, kwargs), for the non-finite watch."""
        f = self.dump_file() if self.selected_step(self.step) else None
        name = f.unique(self.step, base) if (f is not None and unique) else base
        replaced = None
        self.last_file = None
        if self.perturb and self.perturb[0] == name:
            replaced = _disturb(self.torch, tensor, self.perturb[1], in_place=not replaceable)
            tensor = replaced if replaceable else tensor
        vector = self._statistics(tensor)
        if self.cfg.stop_on_nonfinite:
            scaled = self.in_scaler or (self._step_scaler is not None and kind in _SCALED_KINDS)
            self.watch.check(name, kind, self.step, tensor, vector, extra, inputs, self._seen_row, scaled)
        wanted = self.dump_ops if kind.startswith("op_") else self.dump_modules
        if f is not None and wanted and not f.full and (self.filter is None or self.filter.search(name)):
            self.last_file = f.add(self.step, name, kind, tensor, vector, extra).get("file")
        if replaced is not None and replaceable:
            return name, replaced
        return name

    def _statistics(self, tensor):
        """The tensor's statistics, computed once per step: a block returns its last child's output
        and an Identity passes its input on, so a third of a step's records can be one tensor."""
        key = id(tensor)
        seen = self._seen.get(key)
        version = _stats.version(tensor)
        if seen is not None and seen[0]() is tensor and seen[1] == version and version is not None:
            return seen[2]
        vector = _stats.device_vector(tensor)
        if version is not None:
            try:
                self._seen[key] = (weakref.ref(tensor), version, vector)
            except TypeError:
                pass
        return vector

    def share_statistics(self, source, tensor):
        """tensor holds source's elements in source's order: it gets source's statistics of this step,
        if they were computed and source has not changed since."""
        seen = self._seen.get(id(source))
        if seen is not None and seen[0]() is source and seen[1] == _stats.version(source):
            version = _stats.version(tensor)
            if version is not None:
                try:
                    self._seen[id(tensor)] = (weakref.ref(tensor), version, seen[2])
                except TypeError:
                    pass

    def recordable(self, t):
        """True for a tensor the format can hold; the others (nested, meta, float8...) are counted
        by reason in the agent's report and run.json, never a failure."""
        reason = _stats.skip_reason(t)
        if reason is None:
            return True
        self._count_skipped(reason)
        return False

    def _seen_row(self, tensor):
        seen = self._seen.get(id(tensor))
        if seen is not None and seen[0]() is tensor and seen[1] == _stats.version(tensor):
            return _stats.resolve([seen[2]])[0]
        return None

    def close(self, run_info):
        if self.provisional_kind == "no_grad" and self.step > 0 and self.file is not None:
            # forwards without gradients after the last optimizer step (a final validation) make no step
            self.file.rollback(self.provisional or None)
        self._close_window()
        if self._losses:
            self._log_step_loss(self.step)
        self.write_losses()
        if self.file is not None:
            self.file.close(run_info)


_SCALED_KINDS = ("op_backward", "grad_output", "param_grad")  # what a scaled loss's backward makes

_compiling = None  # torch.compiler.is_compiling, or torch._dynamo's before torch 2.3 had it


def _is_compiling(torch):
    global _compiling
    if _compiling is None:
        _compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if _compiling is None:
            import torch._dynamo
            _compiling = torch._dynamo.is_compiling
    return _compiling()


def _in_dataloader_worker(torch):
    data = getattr(getattr(torch, "utils", None), "data", None)
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


def _multiprocessing_child():
    """True in a process that Python's multiprocessing started (spawn or forkserver: the agent runs
    anew there; a forked one records nothing, see _forget_in_child)."""
    mp = sys.modules.get("multiprocessing")
    parent = getattr(mp, "parent_process", None)
    return parent is not None and parent() is not None


def _has_parameters(module):
    return next(iter(module.parameters()), None) is not None


def _parse(text):
    from ._config import parse_int_list
    return parse_int_list(text, "list")


def _last(text):
    from ._config import last_of_int_list
    return last_of_int_list(text)


def _parse_perturb(text):
    if not text:
        return None
    name, _, scale = text.rpartition("=")
    return name, float(scale)


def _disturb(torch, tensor, scale, in_place):
    """Test aid: relative noise of scale x mean|t| from a fixed seed, in place or as a new tensor."""
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        noise = torch.randn(tensor.shape, generator=g, dtype=torch.float32).to(tensor.device, tensor.dtype)
        delta = noise * (scale * tensor.detach().abs().float().mean()).to(tensor.dtype)
        if in_place:
            tensor.add_(delta)
            return tensor
    return tensor + delta
