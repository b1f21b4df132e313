"""Operator-level recording: every aten operator of a dumped step, through a TorchDispatchMode.

A record per tensor output, named `op_<phase>/<module path>/aten.<op>` (phase forward, backward or
optimizer; "#k" for the k-th repetition in that module and step; "[i]" for the i-th output), with
the operator's schema name and overload, its inputs' dtypes, shapes and devices, the module path it
ran in and the source line that called it. Backward operators carry the module and source line of
the forward operator whose gradient they compute: a forward output's autograd node is tagged when
the next operator starts (the mode runs below autograd, so the node does not exist yet when the
operator itself returns), and torch._C._current_autograd_node() names it during backward.

Views and aliases compute nothing and are not recorded; operators that return uninitialised memory
(empty, new_empty_strided, ...) are not either. In tensors mode the inputs are saved too (once per
tensor version), with the arguments in schema order, so `crosstrain op-check --from-dump` can replay
the operator in C++.
"""
import json
import math
import os
import threading
import weakref

from . import _source, _stats
from ._dumpfile import _escape, encode
from ._stats import dtype_name

_TAG = "crosstrain"
_NO_ORIGIN = ("", None, None)
_UNINITIALISED = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
                  "set_", "resize_as_", "_local_scalar_dense", "lift_fresh", "detach", "detach_"}


def _dispatch_mode_base():
    from torch.utils._python_dispatch import TorchDispatchMode
    return TorchDispatchMode


class _OpInfo:
    __slots__ = ("skip", "name", "overload", "label", "random", "args", "same_memory")

    def __init__(self, skip, name, overload, label, random, args):
        self.skip, self.name, self.overload, self.label, self.random, self.args = \
            skip, name, overload, label, random, args
        # Returns its input's memory under another shape without being a view (matmul's reshapes
        # of its mm and bmm results: an eighth of a small transformer's recorded elements).
        self.same_memory = name == "aten::_unsafe_view"


class _Site:
    """What every call of one operator from one place shares: its fields and their JSON text."""
    __slots__ = ("fields", "text")

    def __init__(self, fields):
        self.fields = fields
        self.text = encode(fields)[1:-1]


class OpFields:
    """The "op" object of an operator record: its call site's fields (encoded once per site) and this
    call's inputs (each already JSON text, see _describe_input), plus the arguments in tensors mode;
    get() reads it like the dict it is written as."""
    __slots__ = ("site", "inputs", "args")

    def __init__(self, site, inputs, args):
        self.site, self.inputs, self.args = site, inputs, args

    def get(self, key, default=None):
        if key == "inputs":
            return json.loads(self._inputs_text())
        if key == "args":
            return self.args if self.args is not None else default
        return self.site.fields.get(key, default)

    def _inputs_text(self):
        return "[" + ",".join(self.inputs) + "]"

    def json(self):
        text = "{" + self.site.text + ',"inputs":' + self._inputs_text()
        if self.args is not None:
            text += ',"args":' + encode(self.args)
        return text + "}"


class OpMode(_dispatch_mode_base()):
    @classmethod
    def _should_skip_dynamo(cls):
        """No dynamo wrapper around __torch_dispatch__ (it costs every operator a frame-callback swap):
        while this mode is pushed, torch.compile'd code runs eagerly and dynamo traces nothing."""
        return False

    def __init__(self, recorder):
        super().__init__()
        import torch
        self.torch = torch
        self.rec = recorder
        self.pid = os.getpid()
        self._thread = threading.local()  # dispatch modes are per thread: pushed where a window opens
        self._pending = []            # forward outputs whose autograd node is not tagged yet
        self._made = {}               # id(tensor) -> (weakref, version, record name, saved file)
        self._ops = {}                # OpOverload -> _OpInfo
        self._sites = {}              # (op, phase, module, source, user) -> _Site
        self._random = torch.Tag.nondeterministic_seeded
        self._last_output = None      # (weakref, version, call) of the latest recorded output, see _shares
        self._calls = 0               # operators this mode has seen

    def push(self):
        if not getattr(self._thread, "pushed", False):
            self.__enter__()
            self._thread.pushed = True

    def pop(self):
        self._thread.suspended = False
        self._last_output = None
        if getattr(self._thread, "pushed", False):
            from torch.utils._python_dispatch import _get_current_dispatch_mode
            if _get_current_dispatch_mode() is self:
                self.__exit__(None, None, None)
            self._thread.pushed = False
        self._tag_pending()
        self._made.clear()

    def suspend(self):
        """Takes the mode off this thread's stack while nothing it would see is recorded (an
        optimizer's own operators without --dump-optimizer-ops): those operators then cost nothing.
        What the window has seen stays (pending autograd tags, "from" links); resume() puts it back."""
        self._last_output = None  # the optimizer writes in place, some of it through .data
        if getattr(self._thread, "pushed", False):
            from torch.utils._python_dispatch import _get_current_dispatch_mode
            if _get_current_dispatch_mode() is self:
                self.__exit__(None, None, None)
                self._thread.pushed = False
                self._thread.suspended = True

    def resume(self):
        if getattr(self._thread, "suspended", False):
            self._thread.suspended = False
            self.push()

    def _info(self, func):
        """What the mode needs of an operator, worked out once per overload."""
        info = self._ops.get(func)
        if info is None:
            schema = func._schema
            short = schema.name.split("::")[-1]
            info = _OpInfo(
                skip=func.is_view or short in _UNINITIALISED or not schema.returns,
                name=schema.name, overload=func._overloadname, label=schema.name.replace("::", "."),
                random=self._random in func.tags,
                args=[(a.name, a.kwarg_only) for a in schema.arguments])
            self._ops[func] = info
        return info

    def _untagged(self, node):
        """A backward node no forward operator made: a parameter's AccumulateGrad (gradient
        accumulation adds into .grad) belongs to the parameter's module and to the line that ran
        backward()."""
        origin = _NO_ORIGIN
        variable = getattr(node, "variable", None)
        if isinstance(variable, self.torch.Tensor):
            name = self.rec.names.param_name(variable, "")
            source, user = self.rec.backward_site  # the line that ran backward()
            origin = (name.rpartition(".")[0] if name else "", source, user)
        node.metadata[_TAG] = origin
        return origin

    def _tag_pending(self):
        for t, info in self._pending:
            node = t.grad_fn
            if node is not None and _TAG not in node.metadata:
                node.metadata[_TAG] = info
        self._pending = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        self._calls += 1
        recomputed = None
        try:
            if self._pending:
                self._tag_pending()
            if not rec.open and rec.armed and not rec.busy and self.torch.is_grad_enabled() \
                    and _any_requires_grad(self.torch, args, kwargs):
                rec.open_at_operator()
            if rec.busy or not rec.open or os.getpid() != self.pid:
                return func(*args, **kwargs)
            info = self._info(func)
            node = self.torch._C._current_autograd_node()
            if node is not None and rec.recompute.running(node):
                # checkpointing's forward again: not recorded, but its nodes are tagged as the forward's,
                # for the backward that reentrant checkpointing runs over them
                recomputed = (rec.names.current_label(),) + _source.where(2)
            elif node is not None:
                phase = "backward"
                origin = node.metadata.get(_TAG)
                module, source, user = origin if origin is not None else self._untagged(node)
            else:
                phase = "optimizer" if rec.in_optimizer else "forward"
                if phase == "optimizer" and not rec.cfg.dump_optimizer_ops:
                    return func(*args, **kwargs)
                module = rec.names.current_label()
                source, user = _source.where(2)
            saved_args = self._save_args(func, info, args, kwargs) \
                if rec.tensors and not info.skip and recomputed is None else None
        except Exception as e:  # the agent's failure is never the script's
            rec.fail(e)
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        if recomputed is not None:
            self._pending.extend((t, recomputed) for t in _tensors_of(self.torch, out))
            return out
        try:
            self._record(info, phase, module, source, user, saved_args, args, kwargs, out)
        except Exception as e:
            rec.fail(e)
        return out

    def _record(self, info, phase, module, source, user, saved_args, args, kwargs, out):
        rec = self.rec
        if info.skip:
            if phase == "forward":  # a view's autograd node still belongs to this module and line
                for _, t in _tensor_outputs(self.rec, out):
                    self._pending.append((t, (module, source, user)))
            return
        site = self._site(info, phase, module, source, user)
        op = OpFields(site, self._inputs(info, args, kwargs), saved_args)
        base = f"op_{phase}/{module}/{info.label}" if module else f"op_{phase}/{info.label}"
        outs = _tensor_outputs(self.rec, out)
        f = rec.dump_file() if rec.selected_step(rec.step) else None
        name = f.unique(rec.step, base) if f is not None else base
        kind = "op_" + phase
        if info.same_memory and len(outs) == 1 and args:
            self._shares(args[0], outs[0][1])
        self._last_output = None
        for i, t in outs:
            record = name if len(outs) == 1 else f"{name}[{i}]"
            rec.emit(record, kind, t, extra={"op": op}, unique=False, inputs=(args, kwargs))
            if phase == "forward":
                self._pending.append((t, (module, source, user)))
            self._made_by(t, record, rec.last_file if rec.tensors else None)
            self._last_output = (weakref.ref(t), _stats.version(t), self._calls)

    def _shares(self, x, t):
        """t holds x's memory (same first element, count, dtype, both contiguous on the CPU) and x is
        the output of the operator just before, unchanged: t's statistics are x's, the same elements
        read in the same order, so they are not read again. (Between two operators only the script
        can write x without a version change, through numpy or .data; an _unsafe_view comes from
        inside composite operators, matmul's and reshape's, right after the operator that made x.)"""
        last = self._last_output
        if last is None or last[1] is None or last[2] != self._calls - 1 or last[0]() is not x \
                or _stats.version(x) != last[1]:
            return
        if not (t.is_cpu and x.is_cpu and t.dtype == x.dtype and t.numel() == x.numel()
                and t.data_ptr() == x.data_ptr() and t.is_contiguous() and x.is_contiguous()):
            return
        self.rec.share_statistics(x, t)

    def _site(self, info, phase, module, source, user):
        """The fields of an operator record that repeat at every call from one place, made and
        encoded once."""
        key = (info, phase, module, source, user)
        site = self._sites.get(key)
        if site is None:
            fields = {"name": info.name, "overload": info.overload, "phase": phase, "module": module}
            if source:
                fields["source"] = source
                fields["code"] = _source.code_line(source)
            if user:
                fields["user_source"] = user
                fields["user_code"] = _source.code_line(user)
            if info.random:
                fields["random"] = True
            site = self._sites[key] = _Site(fields)
        return site

    def _made_by(self, t, record, rel):
        """Remembers that record is t (for the next operators' "from" and, in tensors mode, their
        saved inputs), until t changes in place."""
        version = _stats.version(t)
        if version is None:
            return
        try:
            self._made[id(t)] = (weakref.ref(t), version, record, rel)
        except TypeError:
            pass

    def _maker(self, t):
        entry = self._made.get(id(t))
        if entry is not None and entry[0]() is t and entry[1] == _stats.version(t):
            return entry
        return None

    def forget(self):
        """Drops what the window has seen (its records were dropped)."""
        self._last_output = None
        self._pending = []
        self._made.clear()

    def _inputs(self, info, args, kwargs):
        """Each tensor argument's dtype, shape, device and name (a list argument: its tensors), and
        the record of this step that made it, if one did ("from"), as the JSON text of its object."""
        out = []
        tensor = self.torch.Tensor
        for (name, _), v in zip(info.args, args):
            if isinstance(v, tensor):
                out.append(self._describe_input(v, name))
            elif isinstance(v, (list, tuple)) and v and isinstance(v[0], tensor):
                out.append(self._describe_list(name, v))
        if kwargs:
            for name, v in kwargs.items():
                if isinstance(v, tensor):
                    out.append(self._describe_input(v, name))
                elif isinstance(v, (list, tuple)) and v and isinstance(v[0], tensor):
                    out.append(self._describe_list(name, v))
        return out

    def _describe_list(self, name, v):
        parts = [self._describe_input(x) for x in v if isinstance(x, self.torch.Tensor)]
        return '{"arg":' + _escape(name) + ',"tensors":[' + ",".join(parts) + "]}"

    def _describe_input(self, t, arg=None):
        """{"dtype", "shape", "device", "from" (when a record of this step made t), "arg"} as text,
        the first three looked up once per dtype, shape and device."""
        text = _described(t)
        made = self._maker(t)
        if made is not None and made[2]:
            text += ',"from":' + _escape(made[2])
        if arg is not None:
            text += ',"arg":' + _escape(arg)
        return "{" + text + "}"

    # -- tensors mode: the inputs of a replay -------------------------------------------------------
    def _save_input(self, t, label):
        entry = self._maker(t)
        if entry is not None and entry[3]:
            return entry[3]
        f = self.rec.dump_file()
        rel, _ = f.save_input(self.rec.step, label, t)
        if rel:
            self._made_by(t, entry[2] if entry else None, rel)
        return rel

    def _save_args(self, func, info, args, kwargs):
        saved = []
        short = info.label.split(".", 1)[-1]
        for i, (name, kwarg_only) in enumerate(info.args):
            if i < len(args) and not kwarg_only:
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            else:
                continue  # the schema's default
            saved.append({"name": name, "value": self._encode(value, f"{short}.{name}")})
        return saved

    def _encode(self, v, label):
        torch = self.torch
        if isinstance(v, torch.Tensor):
            from ._stats import skip_reason
            reason = "complex" if v.is_complex() else skip_reason(v)
            if reason:
                return {"unsupported": reason}
            rel = self._save_input(v, label)
            return {"tensor": rel, "dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                    "device": str(v.device)} if rel else {"unsupported": "dump byte limit reached"}
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
        if isinstance(v, (list, tuple)):
            return [self._encode(x, f"{label}{i}") for i, x in enumerate(v)]
        if isinstance(v, torch.dtype):
            return {"dtype": str(v).replace("torch.", "")}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, torch.memory_format):
            return {"memory_format": str(v).replace("torch.", "")}
        if isinstance(v, torch.layout):
            return {"layout": str(v).replace("torch.", "")}
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return {"unsupported": "symbolic value"}
        return {"unsupported": type(v).__name__}


def _any_requires_grad(torch, args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, torch.Tensor) and v.requires_grad:
            return True
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) and x.requires_grad for x in v):
            return True
    return False


def _tensors_of(torch, out):
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return ()


def _tensor_outputs(rec, out):
    """(index, tensor) of an operator's outputs that can be recorded (the others are counted)."""
    torch = rec.torch
    if isinstance(out, torch.Tensor):
        return [(0, out)] if rec.recordable(out) else []
    if isinstance(out, (tuple, list)):
        return [(i, t) for i, t in enumerate(out) if isinstance(t, torch.Tensor) and rec.recordable(t)]
    return []





_DEVICE_NAMES = {}  # torch.device -> "cpu", "cuda:0"
_DESCRIBED = {}     # (dtype, shape, device) -> '"dtype":...,"shape":[...],"device":...'


def _describe(t):
    try:
        shape = list(t.shape)
    except RuntimeError:  # a nested tensor has no single shape
        shape = None
    if shape is not None and not all(type(d) is int for d in shape):
        shape = None  # nor has a jagged one (its ragged dimension is symbolic)
    device = t.device
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = _DEVICE_NAMES[device] = str(device)
    return {"dtype": dtype_name(t), "shape": shape, "device": name}


def _described(t):
    """The text of _describe(t)'s fields, as the encoder writes them."""
    try:
        key = (t.dtype, t.shape, t.device)
        text = _DESCRIBED.get(key)
    except (RuntimeError, TypeError):  # a nested tensor (no single shape, or a symbolic one): not cached
        return encode(_describe(t))[1:-1]
    if text is None:
        if len(_DESCRIBED) >= 4096:  # shapes that change every step (variable lengths) stay bounded
            _DESCRIBED.clear()
        text = _DESCRIBED[key] = encode(_describe(t))[1:-1]
    return text
