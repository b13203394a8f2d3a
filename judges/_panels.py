"""Panels: a frozen set of inputs of one route, so app versions are compared on the same inputs.

A panel stores inputs, not outputs: each item is the conversation (system prompt, user and
assistant turns, tool messages holding retrieved context) of one span of the route, keyed by
:func:`~._content.input_key` (a hash of the user and assistant turns only). A comparison then
looks for spans of each app version (``service.version``) that answered the same input, i.e.
whose input has the same key, and judges their stored outputs. The panel does not run the app:
to compare a version that has not served those inputs, replay the panel's inputs through it
(``Panel.items[i].messages``) with the SDK on, then compare.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from infersight.collector.store import Store, encode_rows
from infersight.detectors import row_time_text

from ._content import input_key, messages_from_json, messages_to_json
from ._errors import PanelError
from ._sampler import load_content
from ._types import JUDGE_ROUTE, Message, SampledSpan

# A panel is built from at most this many recent spans of the route, and a comparison looks at
# most at this many recent spans of each version: enough for any panel, bounded for busy routes.
MAX_SCANNED_SPANS = 50_000
_PANEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")

_ROUTE_SPANS_SQL = """
SELECT toUnixTimestamp64Nano(ts) AS ts_ns, trace_id, span_id, tenant, route, service_version, model
FROM llm_spans
WHERE project = {project:String} AND route = {route:String}
  AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})
  AND status = 'ok'
  AND kind = 'llm'
  AND (empty({versions:Array(String)}) OR has({versions:Array(String)}, service_version))
ORDER BY ts DESC
LIMIT {limit:UInt32}
"""


@dataclass(frozen=True, slots=True)
class PanelItem:
    """One frozen input: its key, its conversation and where it was taken from."""

    input_key: str
    messages: tuple[Message, ...]
    source_trace_id: str = ""
    source_span_id: str = ""
    source_version: str = ""

    @property
    def context(self) -> tuple[str, ...]:
        return tuple(m.content for m in self.messages if m.role == "tool" and m.content)

    def to_json(self) -> dict[str, Any]:
        return {
            "input_key": self.input_key,
            "messages": messages_to_json(self.messages),
            "context": list(self.context),
            "source": {"trace_id": self.source_trace_id, "span_id": self.source_span_id,
                       "service_version": self.source_version},
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> PanelItem:
        source = item.get("source") or {}
        return cls(
            input_key=str(item["input_key"]), messages=messages_from_json(item.get("messages")),
            source_trace_id=str(source.get("trace_id", "")), source_span_id=str(source.get("span_id", "")),
            source_version=str(source.get("service_version", "")),
        )


@dataclass(frozen=True, slots=True)
class Panel:
    """A frozen evaluation panel of one route."""

    panel_id: str
    project: str
    route: str
    created_ns: int
    items: tuple[PanelItem, ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(item.input_key for item in self.items)


def route_spans(store: Store, project: str, route: str, since_ns: int,
                versions: tuple[str, ...] = ()) -> list[SampledSpan]:
    """The newest successful LLM spans of ``route`` (of ``versions``, if given), with content."""
    if route == JUDGE_ROUTE:
        raise PanelError(f"the route {JUDGE_ROUTE!r} holds the judge's own calls; pick an application route")
    rows = store.query(_ROUTE_SPANS_SQL, {
        "project": project, "route": route, "since_ns": since_ns,
        "versions": list(versions), "limit": MAX_SCANNED_SPANS,
    })
    spans = [
        SampledSpan(project=project, ts_ns=int(r["ts_ns"]), trace_id=r["trace_id"], span_id=r["span_id"],
                    tenant=r["tenant"], route=r["route"], service_version=r["service_version"], model=r["model"])
        for r in rows
    ]
    return [s for s in load_content(store, spans) if s.has_content]


def create_panel(store: Store, project: str, route: str, size: int, *, since_ns: int,
                 panel_id: str | None = None, now_ns: int | None = None) -> Panel:
    """Freeze up to ``size`` distinct inputs of ``route`` seen since ``since_ns`` into a new panel.

    Inputs are distinct by :func:`~._content.input_key`; the newest span of each is the item's
    source. Which inputs are chosen is deterministic (ordered by their key, a hash), so the
    same data always gives the same panel. Raises :class:`PanelError` when the route has no
    span with captured content or ``panel_id`` is taken. Blocking.
    """
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"The 'size' parameter of create_panel must be a positive integer; got {size!r}.")
    if panel_id is not None and not _PANEL_ID.match(panel_id):
        raise ValueError(f"The 'panel_id' parameter of create_panel must be letters, digits, '_.:-'; got {panel_id!r}.")
    newest: dict[str, SampledSpan] = {}
    for span in route_spans(store, project, route, since_ns):  # newest first
        newest.setdefault(input_key(span.messages), span)
    if not newest:
        raise PanelError(
            f"route {route!r} of project {project!r} has no successful LLM span with captured content since then"
        )
    chosen = sorted(newest)[:size]
    items = tuple(
        PanelItem(input_key=key, messages=newest[key].messages, source_trace_id=newest[key].trace_id,
                  source_span_id=newest[key].span_id, source_version=newest[key].service_version)
        for key in chosen
    )
    # Stored as DateTime64(3): keep the returned panel equal to the one load_panel reads back.
    created_ns = (time.time_ns() if now_ns is None else now_ns) // 1_000_000 * 1_000_000
    if panel_id is None:
        digest = hashlib.sha256("\n".join(chosen).encode()).hexdigest()[:8]
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", route).strip("-")[:48] or "route"
        panel_id = f"{slug}-{time.strftime('%Y%m%d', time.gmtime(created_ns / 1e9))}-{digest}"
    if _panel_exists(store, project, panel_id):
        raise PanelError(f"panel {panel_id!r} already exists in project {project!r}; panels are never changed")
    store.insert("judge_panels", encode_rows([{
        "project": project, "panel_id": panel_id, "route": route, "created": row_time_text(created_ns),
        "size": len(items), "items": json.dumps([i.to_json() for i in items], ensure_ascii=False),
    }]))
    return Panel(panel_id, project, route, created_ns, items)


def _panel_exists(store: Store, project: str, panel_id: str) -> bool:
    rows = store.query(
        "SELECT count() AS n FROM judge_panels WHERE project = {project:String} AND panel_id = {panel_id:String}",
        {"project": project, "panel_id": panel_id},
    )
    return bool(int(rows[0]["n"]))


def load_panel(store: Store, project: str, panel_id: str) -> Panel:
    """The panel ``panel_id`` of ``project``; :class:`PanelError` when there is none."""
    rows = store.query(
        "SELECT panel_id, route, toUnixTimestamp64Nano(created) AS created_ns, items FROM judge_panels"
        " WHERE project = {project:String} AND panel_id = {panel_id:String} ORDER BY created LIMIT 1",
        {"project": project, "panel_id": panel_id},
    )
    if not rows:
        raise PanelError(f"no panel {panel_id!r} in project {project!r}; see 'infersight judge panel list'")
    row = rows[0]
    items = tuple(PanelItem.from_json(i) for i in json.loads(row["items"]))
    return Panel(row["panel_id"], project, row["route"], int(row["created_ns"]), items)


def list_panels(store: Store, project: str) -> list[dict[str, Any]]:
    """Every panel of ``project``: id, route, created (UTC text) and size, newest first."""
    return store.query(
        "SELECT panel_id, route, toString(created) AS created, size FROM judge_panels"
        " WHERE project = {project:String} ORDER BY created DESC, panel_id",
        {"project": project},
    )
