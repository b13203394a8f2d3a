"""Long lists of ids as query parameters, within what a ClickHouse server takes.

A server refuses a query parameter longer than 128 KiB (``http_max_field_value_size``, its
default), in the URL or in the form clickhouse-connect sends once parameters pass 4 KB: a list of
4,000 trace ids as an ``Array(String)`` literal is 140 KB. ClickHouse also parses such a parameter
at ~1.75 µs an element (8 ms for 4,000 ids), and splitting text in SQL costs next to nothing. So
a long list travels as blank-separated text, over as many parameters as it needs.
"""

from __future__ import annotations

from collections.abc import Sequence

IDS_PER_PARAMETER = 3900
"""Ids of 32 hex digits and a blank: 128,700 bytes, under the server's 131,072."""


def id_array(name: str, ids: Sequence[str]) -> tuple[str, dict[str, str]]:
    """An SQL expression of type ``Array(String)`` holding ``ids`` in order, and its parameters
    ``{name}0``, ``{name}1``, ... to bind with the query's others. Ids must hold no blank (the
    store's hex trace and span ids never do)."""
    if not ids:
        return "emptyArrayString()", {}
    params = {f"{name}{i}": " ".join(ids[at:at + IDS_PER_PARAMETER])
              for i, at in enumerate(range(0, len(ids), IDS_PER_PARAMETER))}
    lists = [f"splitByChar(' ', {{{key}:String}})" for key in params]
    return (lists[0] if len(lists) == 1 else f"arrayConcat({', '.join(lists)})"), params
