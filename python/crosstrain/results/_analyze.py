"""`crosstrain analyze TRACE... --json F` (docs/ANALYZE.md): per trace the operators, the step
breakdown and the advisor's findings, each with the script's lines behind it; `--diff A B --json F`:
the rows that changed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ._document import Source, load_document, number
from ._tables import table


@dataclass(frozen=True)
class SourceLine:
    """A line of the script behind an operator or a finding (from `run --profile`'s side file)."""
    where: str        # "train.py:26"
    code: str
    count: int
    per_step: float
    time_us: float
    via: str

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "SourceLine":
        return SourceLine(j.get("where", ""), j.get("code", ""), int(j.get("count", 0)), number(j.get("per_step", 0)),
                          number(j.get("time_us", 0)), j.get("via", ""))


def _lines(v) -> Tuple[SourceLine, ...]:
    return tuple(SourceLine.from_json(x) for x in v or ())


@dataclass(frozen=True)
class Operator:
    name: str
    type: str         # "matmul", "conv", "elementwise", ... (analyze's operator types)
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    shapes: str
    sources: Tuple[SourceLine, ...]

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Operator":
        return Operator(j["name"], j.get("type", ""), int(j.get("calls", 0)), number(j.get("host_self_us")),
                        number(j.get("host_total_us")), number(j.get("device_self_us")),
                        number(j.get("device_total_us")), j.get("shapes", ""), _lines(j.get("sources")))


@dataclass(frozen=True)
class Step:
    """One step (`ProfilerStep#N`) or the whole trace (`total`): time by category (kernel, memcpy,
    communication, ...) and, on the host, by phase (forward, backward, optimizer, data wait, ...)."""
    label: str
    start_us: float
    duration_us: float
    device_busy_us: float
    data_wait_us: float
    comm_us: float
    comm_overlapped_us: float
    kernels: int
    host_syncs: int
    h2d_us: float
    categories_us: Dict[str, float]
    phases_us: Dict[str, float]
    device_idle_by_phase_us: Dict[str, float]

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Step":
        d = lambda k: {name: number(v) for name, v in (j.get(k) or {}).items()}
        return Step(j.get("label", ""), number(j.get("start_us")), number(j.get("duration_us")),
                    number(j.get("device_busy_us")), number(j.get("data_wait_us")), number(j.get("comm_us")),
                    number(j.get("comm_overlapped_us")), int(j.get("kernels", 0)), int(j.get("host_syncs", 0)),
                    number(j.get("h2d_us")), d("categories_us"), d("phases_us"), d("device_idle_by_phase_us"))


@dataclass(frozen=True)
class Finding:
    """An advisor finding: `rule` (its id in docs/ANALYZE.md), what it measured against which
    threshold, the evidence, what to do, and the script's lines."""
    rule: str
    title: str
    measured: str
    value: float
    threshold: str
    suggestion: str
    evidence: str
    sources: Tuple[SourceLine, ...]

    @staticmethod
    def from_json(j: Dict[str, Any]) -> "Finding":
        return Finding(j["rule"], j.get("title", ""), j.get("measured", ""), number(j.get("value")),
                       j.get("threshold", ""), j.get("suggestion", ""), j.get("evidence", ""), _lines(j.get("sources")))


class TraceAnalysis:
    """The analysis of one trace (one rank of one profiling cycle). Fields the classes do not name
    are in `raw` (device views, memory curves, the script's DataLoaders, Ascend side files, ...)."""

    def __init__(self, j: Dict[str, Any]):
        self.raw = j
        self.path: str = j.get("path", "")
        self.format: str = j.get("format", "")
        self.rank: int = int(j.get("rank", -1))  # -1: the trace names none
        self.device_name: str = j.get("device_name", "")
        self.has_device: bool = bool(j.get("has_device", False))
        self.spans = int(j.get("spans", 0))
        self.operators = [Operator.from_json(o) for o in j.get("operators", ())]
        self.steps = [Step.from_json(s) for s in j.get("steps", ())]
        self.total = Step.from_json(j["total"]) if j.get("total") else None
        self.findings = [Finding.from_json(f) for f in j.get("findings", ())]
        self.compute_us_per_step = number(j.get("compute_us_per_step", 0))

    def __repr__(self):
        return f"TraceAnalysis({self.path!r}: {len(self.steps)} steps, {len(self.findings)} findings)"


@dataclass(frozen=True)
class DiffRow:
    kind: str
    name: str
    a_us: float
    b_us: float
    delta_us: float
    status: str


@dataclass(frozen=True)
class TraceDiff:
    a: str
    b: str
    per_step: bool
    time_basis: str
    a_step_us: float
    b_step_us: float
    warning: str
    rows: Tuple[DiffRow, ...]


OPERATOR_COLUMNS = ("path", "rank", "name", "type", "calls", "host_self_us", "host_total_us", "device_self_us",
                    "device_total_us", "shapes", "where")
STEP_COLUMNS = ("path", "rank", "label", "start_us", "duration_us", "device_busy_us", "data_wait_us", "comm_us",
                "kernels", "host_syncs", "h2d_us")
FINDING_COLUMNS = ("path", "rank", "rule", "title", "measured", "value", "threshold", "where")
DIFF_COLUMNS = ("kind", "name", "a_us", "b_us", "delta_us", "status")


class AnalyzeResult:
    """What `analyze --json` wrote: `traces` (one TraceAnalysis each) and, for several traces,
    `rank_findings` (findings across ranks); or, for `--diff`, `diff`."""

    def __init__(self, doc: Dict[str, Any]):
        self.raw = doc
        self.traces = [TraceAnalysis(t) for t in doc.get("traces", ())]
        self.rank_findings = [Finding.from_json(f) for f in doc.get("rank_findings", ())]
        self.diff: Optional[TraceDiff] = None
        if "rows" in doc:
            rows = tuple(DiffRow(r.get("kind", ""), r.get("name", ""), number(r.get("a_us")), number(r.get("b_us")),
                                 number(r.get("delta_us")), r.get("status", "")) for r in doc["rows"])
            self.diff = TraceDiff(doc.get("a", ""), doc.get("b", ""), bool(doc.get("per_step", False)),
                                  doc.get("time_basis", ""), number(doc.get("a_step_us")), number(doc.get("b_step_us")),
                                  doc.get("warning", ""), rows)

    def __repr__(self):
        return f"AnalyzeResult({len(self.traces)} traces" + (", diff)" if self.diff else ")")

    def operators_table(self, frame: Optional[bool] = None):
        """Every trace's operators (OPERATOR_COLUMNS; `where`: the first script line behind one)."""
        rows = [{"path": t.path, "rank": t.rank, "name": o.name, "type": o.type, "calls": o.calls,
                 "host_self_us": o.host_self_us, "host_total_us": o.host_total_us, "device_self_us": o.device_self_us,
                 "device_total_us": o.device_total_us, "shapes": o.shapes,
                 "where": o.sources[0].where if o.sources else None} for t in self.traces for o in t.operators]
        return table(rows, OPERATOR_COLUMNS, frame)

    def steps_table(self, frame: Optional[bool] = None):
        """Every trace's steps, with one column per phase (`phase:forward`, ...) and category
        (`category:kernel`, ...) found in any of them."""
        extra: List[str] = []
        for t in self.traces:
            for s in t.steps:
                for k in ["phase:" + p for p in s.phases_us] + ["category:" + c for c in s.categories_us]:
                    if k not in extra:
                        extra.append(k)
        rows = []
        for t in self.traces:
            for s in t.steps:
                row = {"path": t.path, "rank": t.rank, "label": s.label, "start_us": s.start_us,
                       "duration_us": s.duration_us, "device_busy_us": s.device_busy_us,
                       "data_wait_us": s.data_wait_us, "comm_us": s.comm_us, "kernels": s.kernels,
                       "host_syncs": s.host_syncs, "h2d_us": s.h2d_us}
                row.update({"phase:" + k: v for k, v in s.phases_us.items()})
                row.update({"category:" + k: v for k, v in s.categories_us.items()})
                rows.append(row)
        return table(rows, STEP_COLUMNS + tuple(extra), frame)

    def findings_table(self, frame: Optional[bool] = None):
        """Every trace's findings, then those across ranks (path "", rank -1)."""
        pairs = [(t.path, t.rank, f) for t in self.traces for f in t.findings] + [("", -1, f) for f in self.rank_findings]
        rows = [{"path": p, "rank": r, "rule": f.rule, "title": f.title, "measured": f.measured, "value": f.value,
                 "threshold": f.threshold, "where": f.sources[0].where if f.sources else None} for p, r, f in pairs]
        return table(rows, FINDING_COLUMNS, frame)

    def diff_table(self, frame: Optional[bool] = None):
        if self.diff is None:
            raise ValueError("not an analyze --diff document")
        rows = [r.__dict__ for r in self.diff.rows]
        return table(rows, DIFF_COLUMNS, frame)


def read_analyze(source: Source) -> AnalyzeResult:
    """`source`: the path `crosstrain analyze --json` wrote, or that document already parsed."""
    return AnalyzeResult(load_document(source, "analyze"))
