"""The application's end users, keyed by (tenant, user): their LLM calls, errors, spend, sessions,
last activity and feedback over a window, the most recently active first.

The figures are the call figures' (``kind = 'llm'`` is a call, money by ``spend_sql``), over the
user's spans in the window, so a user's cost is the one ``call_figures(by=("tenant", "user_id"))``
gives. Spans without a user id are not listed: there is no one to list them under.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ..errors import BadRequest
from ._base import Store
from ._feedback import distinct_feedback
from ._kinds import LLM
from ._money import spend_of, spend_sql
from ._sessions import SESSION_COLUMNS, _conditions, _fingerprint, feedback_summary
from ._trace_search import SEARCH_MAX, _make_cursor, _read_cursor

USER_COLUMNS = SESSION_COLUMNS
_CALLS = f"kind = '{LLM}'"
_AGGREGATES = {
    "last_ns": "toUnixTimestamp64Nano(max(ts))",
    "first_ns": "toUnixTimestamp64Nano(min(ts))",
    "spans": "count()",
    "llm_calls": f"countIf({_CALLS})",
    "llm_errors": f"countIf({_CALLS} AND status = 'error')",
    "traces": "uniqExact(trace_id)",
    "sessions": "uniqExactIf(session_id, session_id != '')",
    **spend_sql(_CALLS),
}
_IN_WINDOW = "ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"


def find_users(
    store: Store, project: str, start_ns: int, end_ns: int, *, columns: Mapping[str, str] | None = None,
    cursor: str | None = None, limit: int = 50,
) -> dict[str, Any]:
    """One page of the (tenant, user) pairs of ``project`` with spans in ``[start_ns, end_ns)`` that
    have every ``columns`` value (from :data:`USER_COLUMNS`), the most recently active first.

    Each user: ``tenant``, ``user_id``, ``first_ns``/``last_ns`` (first and last span's start in the
    window), ``spans``, ``llm_calls``, ``llm_errors``, ``llm_error_rate``, the spend of ``spend_of``
    (unknown never 0), ``traces``, ``sessions`` and ``feedback`` (per name and kind, as on a
    session). Returns ``users``, ``total``, ``next_cursor`` and the window read. Blocks on three
    queries.
    """
    columns = dict(columns or {})
    if not 1 <= limit <= SEARCH_MAX:
        raise BadRequest(f"The 'limit' parameter must be between 1 and {SEARCH_MAX}; got {limit}.")
    fingerprint = _fingerprint("users", columns)
    after = None
    if cursor:
        after, (start_ns, end_ns) = _read_cursor(cursor, fingerprint, ("start_ns",))
    if start_ns >= end_ns:
        raise BadRequest("The 'start' parameter must be before 'end'.")
    params: dict[str, Any] = {"project": project, "start_ns": start_ns, "end_ns": end_ns, "limit": limit + 1}
    matching = ("FROM llm_spans WHERE project = {project:String} AND " + _IN_WINDOW + " AND user_id != ''"
                + _conditions(columns, params, USER_COLUMNS))
    (count,) = store.query(f"SELECT uniqExact(tenant, user_id) AS total {matching}", params)
    having = ""
    if after is not None:
        try:
            tenant, user = (str(part) for part in json.loads(after[1]))
        except ValueError:
            raise BadRequest("The 'cursor' parameter must be a next_cursor of the same search.") from None
        params.update(k_last=int(after[0]), k_tenant=tenant, k_user=user)
        having = " HAVING (last_ns, tenant, user_id) < ({k_last:Int64}, {k_tenant:String}, {k_user:String})"
    aggregates = ", ".join(f"{sql} AS {name}" for name, sql in _AGGREGATES.items())
    rows = store.query(
        f"SELECT tenant, user_id, {aggregates} {matching} GROUP BY tenant, user_id{having}"
        " ORDER BY last_ns DESC, tenant DESC, user_id DESC LIMIT {limit:UInt32}",
        params,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    feedback = _feedback(store, params, matching, rows)
    users = [_shape(row, feedback.get((row["tenant"], row["user_id"]), [])) for row in rows]
    next_cursor = None
    if more:
        last = rows[-1]
        next_cursor = _make_cursor(fingerprint, [int(last["last_ns"]), json.dumps([last["tenant"], last["user_id"]])],
                                   (start_ns, end_ns))
    return {"start_ns": start_ns, "end_ns": end_ns, "total": int(count["total"]), "next_cursor": next_cursor,
            "users": users}


def _feedback(
    store: Store, params: dict[str, Any], matching: str, rows: list[dict[str, Any]]
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Feedback on the traces of the page's users in the window, per (tenant, user)."""
    if not rows:
        return {}
    found = store.query(
        "SELECT s.tenant AS tenant, s.user_id AS user_id, f.name AS name, f.kind AS kind, count() AS n,"
        " countIf(f.value >= 0.5) AS up, sum(f.value) AS total"
        f" FROM {distinct_feedback('project = {project:String}')} AS f INNER JOIN"
        f" (SELECT DISTINCT trace_id, tenant, user_id {matching} AND user_id IN {{users:Array(String)}}) AS s"
        " ON f.trace_id = s.trace_id"
        " GROUP BY tenant, user_id, name, kind",
        {**params, "users": sorted({row["user_id"] for row in rows})},
    )
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in found:
        out[(row["tenant"], row["user_id"])].append(row)
    return out


def _shape(row: dict[str, Any], feedback: list[dict[str, Any]]) -> dict[str, Any]:
    calls, errors = int(row["llm_calls"]), int(row["llm_errors"])
    return {
        "tenant": row["tenant"], "user_id": row["user_id"], "first_ns": int(row["first_ns"]),
        "last_ns": int(row["last_ns"]), "spans": int(row["spans"]), "llm_calls": calls, "llm_errors": errors,
        "llm_error_rate": errors / calls if calls else 0.0, **spend_of(row), "traces": int(row["traces"]),
        "sessions": int(row["sessions"]), "feedback": feedback_summary(feedback),
    }
