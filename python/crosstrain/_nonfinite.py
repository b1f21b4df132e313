"""--stop-on-nonfinite: the first NaN, and the first Inf that arithmetic made.

Programs write infinities on purpose: a causal mask (`masked_fill(mask, float('-inf'))`), a
sentinel best score (`-torch.inf`), padding. An Inf is a finding only where an operator made it
from inputs that held none (no input tensor with an Inf and no infinite scalar argument): an
overflow (exp, a float16 product, a division by zero). Infinities the program wrote, and every
operator that carries them on, are counted in the report, never a stop. A NaN always stops. Module
outputs, gradients and losses are judged by their operators (the operator level watches every step
under --stop-on-nonfinite), so on those records only a NaN stops.

The same watch notes the first float32 output beyond float16's range (a warning for a later move to
float16).

A step whose loss a GradScaler scaled is judged by the scaler: its backward (gradients of the loss
times the scale) may overflow, which is what the scaler absorbs by skipping the step and lowering
the scale. There the first non-finite value is held back (`deferred`) and the recorder decides when
the step ends: a skipped step at a scale above 1 is counted (`scaler_skips`), not a stop; a skipped
step at a scale of 1 or less, or an optimizer step taken on it, stops. Scaled records (and the
scaler's own operators) are not float16-range findings either: their range is the scale's.
"""
import math

from . import _stats

FP16_MAX = 65504.0


class NonfiniteWatch:
    def __init__(self, torch, state, on_stop):
        self.torch = torch
        self.state = state          # the agent's report: nonfinite, written_inf, fp16_overflow
        self.on_stop = on_stop      # called with the finding; does not return
        self._fp16_note = None
        self.deferred = None        # the first non-finite value of a scaled step, for the recorder to judge

    def check(self, name, kind, step, tensor, vector, extra, inputs, seen, scaled=False):
        """seen(tensor) -> the statistics row of a tensor this step already recorded, or None.
        scaled: a record of a GradScaler's scaled backward, or of the scaler's own work."""
        row = _stats.resolve([vector])[0]
        where = (extra or {}).get("op", {})
        if _stats.has_nonfinite(row):
            nan = int(row[4])
            if nan or (kind.startswith("op_") and not _inputs_hold_inf(self.torch, inputs, seen)):
                finding = {"record": name, "kind": kind, "step": step, "dtype": _stats.dtype_name(tensor),
                           "shape": list(tensor.shape), "nan_count": nan, "inf_count": int(row[5]),
                           "module": where.get("module", ""), "source": where.get("source"),
                           "user_source": where.get("user_source"), "code": where.get("code", "")}
                if scaled:
                    if self.deferred is None:
                        self.deferred = finding
                    return
                self.stop(finding)  # does not return
            elif kind.startswith("op_") and not scaled:
                self._count_written(name, step, where)
        if not scaled and self._fp16_note is None and tensor.dtype == self.torch.float32 and row[6]:
            peak = max(abs(row[0]), abs(row[1]))
            if peak > FP16_MAX:
                self._fp16_note = {"record": name, "step": step, "max_abs": peak,
                                   "module": where.get("module", ""), "source": where.get("source"),
                                   "code": where.get("code", "")}
                self.state["fp16_overflow"] = self._fp16_note

    def stop(self, finding, note=None):
        if note:
            finding = dict(finding, note=note)
        self.state["nonfinite"] = finding
        self.on_stop(finding)  # does not return

    def judge_scaled_step(self, skipped, scale):
        """The end of a step whose loss was scaled: skipped by the scaler at scale > 1, its overflow is
        counted; skipped at scale <= 1, or stepped on a non-finite gradient, it stops."""
        finding, self.deferred = self.deferred, None
        if finding is None:
            return
        if not skipped:
            self.stop(finding, "the optimizer stepped on it")
        if scale is not None and scale <= 1.0:
            self.stop(finding, f"the loss scaler skipped the step at scale {scale:g}: the gradients are not "
                               "finite without scaling either")
        skips = self.state.get("scaler_skips")
        if skips is None:
            skips = self.state["scaler_skips"] = {"steps": 0, "first_step": finding["step"], "first": finding["record"]}
        skips["steps"] += 1
        skips["last_scale"] = scale

    def _count_written(self, name, step, where):
        """Infinities carried from the program's own constants: counted, the first one named."""
        w = self.state.get("written_inf")
        if w is None:
            w = self.state["written_inf"] = {"records": 0, "first": name, "step": step,
                                             "source": where.get("user_source") or where.get("source"),
                                             "code": where.get("user_code") or where.get("code", "")}
        w["records"] += 1


def _inputs_hold_inf(torch, inputs, seen):
    if inputs is None:
        return False
    args, kwargs = inputs
    for v in list(args) + list(kwargs.values()):
        for x in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(x, float) and math.isinf(x):
                return True
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
                row = seen(x)
                if row is not None:
                    if row[5]:
                        return True
                elif _stats.dumpable(x) and bool(torch.isinf(x).any()):
                    return True
    return False
