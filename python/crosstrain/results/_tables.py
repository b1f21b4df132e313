"""Rows of a result as a table: a pandas DataFrame where pandas is installed, else the rows
themselves (a list of dicts, one per row, every row with the same keys in the same order)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence


def have_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def table(rows: List[Dict[str, Any]], columns: Sequence[str], frame: Optional[bool] = None):
    """`frame=None`: a DataFrame when pandas imports, else the list; True: a DataFrame (ImportError
    without pandas); False: the list. An empty table keeps its columns."""
    if frame is None:
        frame = have_pandas()
    ordered = [{c: row.get(c) for c in columns} for row in rows]
    if not frame:
        return ordered
    import pandas
    return pandas.DataFrame(ordered, columns=list(columns))
