"""`crosstrain compare A B --json F` (docs/COMPARE.md, "Output"): the verdict, the counts, the first
divergence, every record's comparison and the loss curves; for two folders of rank dumps, one
such result per rank."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ._document import Source, load_document, number, optional_number
from ._dump import Stats
from ._tables import table


@dataclass(frozen=True)
class Counts:
    """The JSON's `counts`; `passed`, `warned` and `errors` are its `pass`, `warn` and `error`."""
    records: int
    passed: int
    warned: int
    errors: int
    exact: int
    missing_in_a: int
    missing_in_b: int
    shape_mismatch: int
    unreadable: int
    casts_one_side: int

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Counts":
        g = lambda k: int(j.get(k, 0))
        return Counts(g("records"), g("pass"), g("warn"), g("error"), g("exact"), g("missing_in_a"), g("missing_in_b"),
                      g("shape_mismatch"), g("unreadable"), g("casts_one_side"))


@dataclass(frozen=True)
class Origin:
    """Where an operator record came from: the operator and the line of the script that ran it."""
    op: str
    overload: str
    phase: str
    module: str
    source: str
    code: str
    user_source: str
    user_code: str
    random: bool

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["Origin"]:
        if not j:
            return None
        return Origin(j.get("op", ""), j.get("overload", ""), j.get("phase", ""), j.get("module", ""), j.get("source", ""),
                      j.get("code", ""), j.get("user_source", ""), j.get("user_code", ""), bool(j.get("random", False)))


@dataclass(frozen=True)
class Divergence:
    """The first record that erred (or warned): `index` is its position in `tensors`."""
    index: int
    step: int
    name: str
    name_b: Optional[str]
    reason: str
    rel_error: Optional[float]
    threshold: Optional[float]
    origin: Optional[Origin]

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["Divergence"]:
        if not j:
            return None
        return Divergence(int(j["index"]), int(j["step"]), j["name"], j.get("name_b"), j.get("reason", ""),
                          optional_number(j.get("rel_error")), optional_number(j.get("threshold")),
                          Origin.from_json(j.get("origin")))


@dataclass(frozen=True)
class Side:
    dtype: str
    shape: Tuple[int, ...]
    stats: Stats

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["Side"]:
        return None if j is None else Side(j.get("dtype", ""), tuple(j.get("shape", ())), Stats.from_json(j.get("stats", {})))


@dataclass(frozen=True)
class Noise:
    """What a record was judged against: its noise scale (`scale_from` "own" or "inputs") and the
    relative error at which it warns and errs under `rule` ("noise", "table" or "cosine")."""
    scale: float
    scale_from: str
    rel_error: Optional[float]
    warn_at: float
    error_at: float
    rule: str

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["Noise"]:
        if j is None:
            return None
        return Noise(number(j.get("scale")), j.get("scale_from", ""), optional_number(j.get("rel_error")),
                     number(j.get("warn_at")), number(j.get("error_at")), j.get("rule", ""))


@dataclass(frozen=True)
class Metrics:
    """Element-wise metrics, when both sides have tensor files (tensors mode)."""
    cosine: float
    max_abs_error: float
    max_rel_error: float
    rmse: float
    share_rel_err_below_1e_3: float
    share_rel_err_below_5e_3: float
    finite_pairs: int
    nonfinite_matched: int
    nonfinite_mismatched: int

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["Metrics"]:
        if j is None:
            return None
        return Metrics(number(j.get("cosine")), number(j.get("max_abs_error")), number(j.get("max_rel_error")),
                       number(j.get("rmse")), number(j.get("share_rel_err_below_1e-3")),
                       number(j.get("share_rel_err_below_5e-3")), int(j.get("finite_pairs", 0)),
                       int(j.get("nonfinite_matched", 0)), int(j.get("nonfinite_mismatched", 0)))


@dataclass(frozen=True)
class TensorComparison:
    """One record of the comparison, in execution order. `status`: "compared", "missing_in_a",
    "missing_in_b", "shape_mismatch", "unreadable"; `verdict`: "pass", "warn", "error"."""
    step: int
    name: str
    name_b: Optional[str]
    kind: str
    status: str
    method: Optional[str]
    verdict: str
    exact: bool
    reason: str
    effective_dtype: str
    a: Optional[Side]
    b: Optional[Side]
    noise: Optional[Noise]
    metrics: Optional[Metrics]
    stat_rel_error: Optional[float]

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "TensorComparison":
        return TensorComparison(int(j["step"]), j["name"], j.get("name_b"), j.get("kind", ""), j.get("status", ""),
                                j.get("method"), j.get("verdict", ""), bool(j.get("exact", False)), j.get("reason", ""),
                                j.get("effective_dtype", ""), Side.from_json(j.get("a")), Side.from_json(j.get("b")),
                                Noise.from_json(j.get("noise")), Metrics.from_json(j.get("metrics")),
                                optional_number(j.get("stat_rel_error")))


@dataclass(frozen=True)
class LossStep:
    step: int
    a: float
    b: float
    rel_diff: float


@dataclass(frozen=True)
class LossComparison:
    rtol: float
    steps_compared: int
    only_in_a: int
    only_in_b: int
    first_step_beyond: Optional[int]
    steps_beyond: int
    max_rel_diff: float
    max_rel_step: int
    mean_rel_diff: float
    within_tolerance: bool
    curve: Tuple[LossStep, ...]

    @staticmethod
    def from_json(j: Optional[Dict[str, Any]]) -> Optional["LossComparison"]:
        if j is None:
            return None
        curve = tuple(LossStep(int(s["step"]), number(s.get("a")), number(s.get("b")), number(s.get("rel_diff")))
                      for s in j.get("curve", ()))
        return LossComparison(float(j.get("rtol", 0.0)), int(j.get("steps_compared", 0)), int(j.get("only_in_a", 0)),
                              int(j.get("only_in_b", 0)), j.get("first_step_beyond"), int(j.get("steps_beyond", 0)),
                              number(j.get("max_rel_diff")), int(j.get("max_rel_step", 0)),
                              number(j.get("mean_rel_diff")), bool(j.get("within_tolerance", False)), curve)


TENSOR_COLUMNS = ("rank", "step", "name", "name_b", "kind", "status", "method", "verdict", "exact", "reason",
                  "effective_dtype", "dtype_a", "dtype_b", "shape_a", "shape_b", "max_a", "max_b", "mean_a", "mean_b",
                  "norm_a", "norm_b", "stat_rel_error", "noise_scale", "scale_from", "rel_error", "warn_at", "error_at",
                  "rule", "cosine", "max_abs_error", "max_rel_error", "rmse")
LOSS_COLUMNS = ("rank", "step", "a", "b", "rel_diff")


class CompareResult:
    """One comparison. For two folders of rank dumps (`input == "rank_dumps"`) the records are in
    `ranks[k].result`; the tables then hold every rank's rows with a `rank` column."""

    def __init__(self, doc: Dict[str, Any]):
        self.raw = doc
        self.a: str = doc.get("a", "")
        self.b: str = doc.get("b", "")
        self.input: str = doc.get("input", "")  # "dumps", "loss_logs", "rank_dumps"
        self.agree: bool = bool(doc.get("agree", False))
        self.verdict: str = doc.get("verdict", "")  # "agree", "differ", "nothing_compared"
        self.nothing_compared: bool = bool(doc.get("nothing_compared", False))
        self.counts = Counts.from_json(doc.get("counts", {}))
        self.first_divergence = Divergence.from_json(doc.get("first_divergence"))
        self.first_warning = Divergence.from_json(doc.get("first_warning"))
        self.divergence_window: List[str] = list(doc.get("divergence_window", ()))
        self.tensors = [TensorComparison.from_json(t) for t in doc.get("tensors", ())]
        self.loss = LossComparison.from_json(doc.get("loss"))
        self.thresholds: Dict[str, Any] = doc.get("thresholds") or {}
        self.problems: List[Any] = list(doc.get("problems", ()))
        self.notes: List[Any] = list(doc.get("notes", ()))
        self.seconds = float(doc.get("seconds", 0.0))
        self.bytes_compared = int(doc.get("bytes_compared", 0))
        self.ranks = [RankComparison(int(r["rank"]), bool(r.get("agree", False)), r.get("verdict", ""),
                                     CompareResult(r["report"])) for r in doc.get("ranks", ())]
        self.ranks_only_in_a: List[int] = list(doc.get("ranks_only_in_a", ()))
        self.ranks_only_in_b: List[int] = list(doc.get("ranks_only_in_b", ()))
        self.differing_ranks: List[int] = list(doc.get("differing_ranks", ()))

    def __repr__(self):
        return f"CompareResult({self.a!r} vs {self.b!r}: {self.verdict})"

    def _per_rank(self):
        return [(r.rank, r.result) for r in self.ranks] if self.ranks else [(None, self)]

    def tensors_table(self, frame: Optional[bool] = None):
        """One row per record compared (TENSOR_COLUMNS), in execution order."""
        rows = []
        for rank, result in self._per_rank():
            for t in result.tensors:
                row = {"rank": rank, "step": t.step, "name": t.name, "name_b": t.name_b, "kind": t.kind,
                       "status": t.status, "method": t.method, "verdict": t.verdict, "exact": t.exact,
                       "reason": t.reason, "effective_dtype": t.effective_dtype, "stat_rel_error": t.stat_rel_error}
                for side, s in (("a", t.a), ("b", t.b)):
                    if s is not None:
                        row.update({"dtype_" + side: s.dtype, "shape_" + side: s.shape, "max_" + side: s.stats.max,
                                    "mean_" + side: s.stats.mean, "norm_" + side: s.stats.norm})
                if t.noise is not None:
                    row.update({"noise_scale": t.noise.scale, "scale_from": t.noise.scale_from,
                                "rel_error": t.noise.rel_error, "warn_at": t.noise.warn_at, "error_at": t.noise.error_at,
                                "rule": t.noise.rule})
                if t.metrics is not None:
                    row.update({"cosine": t.metrics.cosine, "max_abs_error": t.metrics.max_abs_error,
                                "max_rel_error": t.metrics.max_rel_error, "rmse": t.metrics.rmse})
                rows.append(row)
        return table(rows, TENSOR_COLUMNS, frame)

    def loss_table(self, frame: Optional[bool] = None):
        """The two loss curves, one row per step both sides hold (LOSS_COLUMNS)."""
        rows = [{"rank": rank, "step": s.step, "a": s.a, "b": s.b, "rel_diff": s.rel_diff}
                for rank, result in self._per_rank() if result.loss is not None for s in result.loss.curve]
        return table(rows, LOSS_COLUMNS, frame)


@dataclass(frozen=True)
class RankComparison:
    rank: int
    agree: bool
    verdict: str
    result: CompareResult


def read_compare(source: Source) -> CompareResult:
    """`source`: the path `crosstrain compare --json` wrote, or that document already parsed."""
    return CompareResult(load_document(source, "compare"))
