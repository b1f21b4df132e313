"""Where the gradient flowing into a module's output (its grad_output record) is hooked.

A tensor hook sits on the tensor's autograd node as it is when the module returns. Changed in place
later, a tensor keeps that node in the graph (the in-place operator's node leads to it), so the hook
still fires, with the gradient of the tensor as the module returned it. A view does not: an
in-place change of a view (`h += x`, ReLU(inplace=True) on a Linear's output of a 3-d input, which
is a view of the addmm's result) moves the view's history onto its base, and the view's old node,
with the hook, never runs. So a view's gradient is also hooked on its base's node, which runs in
both cases and always after the view's: when the view's own hook has not fired by then, the base's
gradient at the view's elements is the view's (the in-place operator's backward wrote it there).
That holds when nothing but the view used those elements of the base: true of a base made inside
the module (the addmm's result), not of the module's input (nn.Unflatten's output is a view of it,
and the input may be used elsewhere too); that case is counted by reason, not recorded.
"""
import weakref

INPUT_VIEW_CHANGED = "grad_output of a view of the module's input changed in place"


def hook_gradient(t, hook_for, args, count_skipped):
    """Hooks the gradient of module output t: hook_for(region) makes the hook, region a function
    from the base's gradient to t's (None: the gradient is t's own); args are the module's
    positional inputs; count_skipped(reason) counts what cannot be recorded."""
    own = hook_for(None)
    base = t._base if t._is_view() else None
    if base is None or not base.requires_grad or base.grad_fn is None:
        t.register_hook(own)  # not a view, or a view of a leaf (which cannot be changed in place)
        return
    fired = [False]
    view, version = weakref.ref(t), t._version
    from_input = any(a is base or getattr(a, "_base", None) is base for a in _tensors(args))
    from_base = None if from_input else hook_for(_Region(t, base))

    def on_view(grad):
        v = view()
        if v is not None and v._version != version and from_base is not None:
            return  # used, then changed in place: this is part of its gradient, the base's has all of it
        fired[0] = True
        own(grad)

    t.register_hook(on_view)

    def on_base(grad):
        if fired[0]:
            return
        v = view()
        if v is not None and v._version == version:
            return  # unchanged: the view's gradient did not reach it (the caller did not use it)
        if from_base is None:
            count_skipped(INPUT_VIEW_CHANGED)
        else:
            from_base(grad)

    base.register_hook(on_base)


class _Region:
    """A view's place in its base, kept as numbers (the tensors may be gone when backward runs)."""
    __slots__ = ("base_size", "base_stride", "size", "stride", "offset")

    def __init__(self, t, base):
        self.base_size, self.base_stride = tuple(base.shape), tuple(base.stride())
        self.size, self.stride = tuple(t.shape), tuple(t.stride())
        self.offset = t.storage_offset() - base.storage_offset()

    def __call__(self, grad):
        """The view's elements of the base's gradient (laid out as the base, where it is not)."""
        import torch
        if tuple(grad.shape) != self.base_size or tuple(grad.stride()) != self.base_stride:
            laid_out = torch.empty_strided(self.base_size, self.base_stride, dtype=grad.dtype, device=grad.device)
            laid_out.copy_(grad)
            grad = laid_out
        return grad.as_strided(self.size, self.stride, grad.storage_offset() + self.offset)


def _tensors(value):
    import torch
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
