"""Reading what crosstrain wrote, from Python: dumps (docs/DUMP_FORMAT.md), `compare --json`
(docs/COMPARE.md) and `analyze --json` (docs/ANALYZE.md), as typed objects; their tables as pandas
DataFrames where pandas is installed, lists of dicts otherwise (`frame=False` asks for the list,
`frame=True` for a DataFrame).

    from crosstrain import results
    dump = results.read_dump("dump_cpu")              # Dump: header, records, losses, run
    dump.records_table()                              # one row per record: stats, operator, line
    cmp = results.read_compare("cmp.json")            # crosstrain compare A B --json cmp.json
    cmp.verdict, cmp.first_divergence.name, cmp.first_divergence.origin.source
    cmp.tensors_table()[lambda t: t.verdict == "error"]
    prof = results.read_analyze("prof.json")          # crosstrain analyze prof --json prof.json
    prof.operators_table().sort_values("host_self_us", ascending=False)
    [f.rule for t in prof.traces for f in t.findings]

Only the standard library is needed (numpy for Dump.tensor, pandas for DataFrames). A document
of a newer schema, or a dump of a newer format version, is refused with ValueError.
"""
from ._analyze import AnalyzeResult, Finding, Operator, SourceLine, Step, TraceAnalysis, TraceDiff, read_analyze
from ._compare import (CompareResult, Counts, Divergence, LossComparison, Metrics, Noise, Origin, RankComparison,
                       TensorComparison, read_compare)
from ._dump import Dump, Header, LossPoint, OpInfo, OpInput, Record, Stats, read_dump, read_rank_dumps
from ._tables import have_pandas

__all__ = ["read_dump", "read_rank_dumps", "read_compare", "read_analyze", "have_pandas",
           "Dump", "Header", "Record", "Stats", "OpInfo", "OpInput", "LossPoint",
           "CompareResult", "Counts", "Divergence", "Origin", "TensorComparison", "Noise", "Metrics",
           "LossComparison", "RankComparison",
           "AnalyzeResult", "TraceAnalysis", "Operator", "Step", "Finding", "SourceLine", "TraceDiff"]
