"""Nsight Compute's CSV (``ncu --csv --metrics ...``) read into one dict per profiled launch."""
from __future__ import annotations

import csv
import io
from typing import Dict, List, Mapping


def launches(text: str, metrics: Mapping[str, str]) -> List[Dict]:
    """``ncu --csv`` output -> one ``{"kernel": name, key: value, ...}`` per profiled launch, in launch
    order, for each metric named in ``metrics`` (ncu's metric name -> the key it is stored under; the
    value a float, thousands separators removed).  Lines before the CSV header (ncu's ``==PROF==``
    log) are skipped; other metrics are ignored.

    Raises:
        ValueError: no CSV header (a line with "Metric Name") in ``text``.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if '"Metric Name"' in ln), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line with \"Metric Name\") in the output")
    found: Dict[str, Dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        key = metrics.get(row.get("Metric Name", ""))
        if key is None:
            continue
        rec = found.setdefault(row["ID"], {"kernel": row.get("Kernel Name", "").split("(")[0]})
        rec[key] = float(row["Metric Value"].replace(",", ""))
    return [found[k] for k in sorted(found, key=int)]
