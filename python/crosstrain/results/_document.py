"""Opening a `--json` document of crosstrain: a path, or the document already parsed (what
`--json -` printed). Every document carries `schema_version` and `kind` (report::with_envelope)."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, Union

SCHEMA_VERSION = 1  # the newest schema this reader knows

Source = Union[str, "os.PathLike[str]", Dict[str, Any]]


def load_document(source: Source, kind: str) -> Dict[str, Any]:
    if isinstance(source, dict):
        doc, where = source, "the document"
    else:
        where = os.fspath(source)
        with open(where, encoding="utf-8") as f:
            doc = json.load(f)
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: not a crosstrain JSON document (top level is not an object)")
    if doc.get("kind") != kind:
        raise ValueError(f"{where}: a {doc.get('kind')!r} document, not {kind!r} (crosstrain {kind} --json)")
    version = doc.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"{where}: schema_version {version!r}; this reader knows up to {SCHEMA_VERSION}")
    return doc


def number(value: Any) -> float:
    """A JSON number; null (how crosstrain writes a non-finite value) is NaN."""
    return math.nan if value is None else float(value)


def optional_number(value: Any):
    return None if value is None else float(value)
