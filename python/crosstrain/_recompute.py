"""Activation checkpointing's recompute: the forward run again inside backward, never a record.

torch.utils.checkpoint (and the libraries built on it: transformers' gradient_checkpointing,
Lightning's and accelerate's) runs a segment's forward a second time during backward, from inside
an autograd node and with gradients turned back on: non-reentrant from the node that unpacks a
saved tensor, reentrant from CheckpointFunctionBackward, which then runs a backward of its own over
what it recomputed. Those operators and module calls repeat the step's forward. They are named
(their autograd nodes are tagged with their module and line, so the reentrant backward that runs
them is recorded under the right module) but never recorded, and a recomputed module call hooks
its output's gradient under the name of the forward call it repeats, where that call's own output
had no graph to hook (reentrant checkpointing runs the first forward without gradients).

A recompute is recognised by a module called while an autograd node runs with gradients on (a
backward runs its nodes with gradients off unless create_graph asks for them, and then calls no
module), and, for operators outside every module of the segment, by the node being a checkpoint
Function's (reentrant) or by saved-tensor hooks being in force inside a node with gradients on
(non-reentrant recomputes under its own hooks).

Which forward call a recomputed module call repeats: segments are recomputed last first, and each
repeats its module calls in the order of the forward, so a segment begins at the latest call of its
first module that no recompute began at, and its k-th call is the k-th after that one.
"""
import threading


class _Call:
    """A module call of the step's forward: its output's record names and whether its output's
    gradient was hooked then."""
    __slots__ = ("module", "names", "hooked")

    def __init__(self, module):
        self.module, self.names, self.hooked = module, None, False


class Recompute:
    def __init__(self, torch):
        self.torch = torch
        self._node = torch._C._current_autograd_node
        self._grad_enabled = torch.is_grad_enabled
        self._local = threading.local()   # depth, segment start, calls seen, positions (per thread)
        self._calls = []                  # this step's forward module calls, in call order
        self._positions = {}              # id(module) -> its positions in _calls
        self._running = {}                # id(module) -> positions of its calls not returned yet
        self._starts = set()              # positions a recompute began at
        self._saved_tensor_hooks = _saved_tensor_hooks(torch)

    def clear(self):
        """A new window: nothing of the last step's forward is repeated."""
        self._calls, self._positions, self._running, self._starts = [], {}, {}, set()
        self._local.depth = 0

    def depth(self):
        return getattr(self._local, "depth", 0)

    # -- the forward ------------------------------------------------------------------------------
    def called(self, module):
        """A module call of the forward begins (recorded at module level)."""
        key = id(module)
        self._positions.setdefault(key, []).append(len(self._calls))
        self._running.setdefault(key, []).append(len(self._calls))
        self._calls.append(_Call(key))

    def returned(self, module, names, hooked):
        """It returned: its output's record names (without their kind) and whether they were hooked."""
        running = self._running.get(id(module))
        if running:
            call = self._calls[running.pop()]
            call.names, call.hooked = names, hooked

    # -- the recompute ----------------------------------------------------------------------------
    def enter(self, module):
        """True when this module call is part of a recompute (then exit() must follow it)."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            if self._node() is None or not self._grad_enabled():
                return False
            local.start, local.seen, local.stack = self._segment_start(id(module)), 0, []
        else:
            local.seen += 1
        local.depth = depth + 1
        position = None
        if local.start is not None:
            p = local.start + local.seen
            if p < len(self._calls) and self._calls[p].module == id(module):
                position = p
        local.stack.append(position)
        return True

    def exit(self):
        """The recomputed call returned: the forward call it repeats, or None."""
        local = self._local
        local.depth -= 1
        position = local.stack.pop() if local.stack else None
        return self._calls[position] if position is not None else None

    def running(self, node):
        """True for an operator of a recompute (called with the autograd node that runs it)."""
        if getattr(self._local, "depth", 0):
            return True
        if not self._grad_enabled():
            return False
        if "checkpoint" in type(node).__name__.lower():
            return True
        return self._saved_tensor_hooks() is not None

    def _segment_start(self, key):
        for p in reversed(self._positions.get(key, ())):
            if p not in self._starts:
                self._starts.add(p)
                return p
        return None


def _saved_tensor_hooks(torch):
    """() -> the saved-tensor hooks in force (None when none are), on every torch the agent supports."""
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
    if top is None:
        return lambda: None
    try:
        top(False)  # ignore_is_tracing, since torch 2.4
        return lambda: top(False)
    except TypeError:
        return top
