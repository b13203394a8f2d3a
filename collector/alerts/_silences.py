"""Silences and acknowledgements: what stops an alert from being sent without stopping its rule.

A silence is Alertmanager's: label matchers (``name=value``, ``name!=value``, ``name=~regex``,
``name!~regex``, the regex anchored at both ends), a start, an end, who created it and why. It
mutes every alert whose labels (``alertname`` and the rule's labels) all matchers accept, while
``starts_at <= now < ends_at``. An acknowledgement is of one firing of one alert: it stops that
firing's repeats, and ends when the firing resolves.

Matchers come from users, so their regexes run on RE2 (linear time, no backtracking), compiled
once each. Both are stored per project in ``silences`` and ``alert_acks``
(``store/sql/070_silences.sql``), append-only: a silence's latest row is its state.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

import re2

from ..errors import BadRequest
from ..store import Store, clickhouse_time, encode_rows, shown

PENDING, ACTIVE, EXPIRED = "pending", "active", "expired"
MAX_MATCHERS = 16
MAX_VALUE_CHARS = 1024
MAX_TEXT_CHARS = 2000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_OPERATORS = {(True, False): "=", (False, False): "!=", (True, True): "=~", (False, True): "!~"}
_MATCHER = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*")


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise BadRequest(f"The matcher regex {shown(pattern)} is not valid RE2: {exc}.") from None


@dataclass(frozen=True, slots=True)
class Matcher:
    """One condition on one label; a missing label reads as the empty string, as in Alertmanager."""

    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise BadRequest(f"A matcher's name must be a label name (letters, digits, '_'); got {shown(self.name)}.")
        if len(self.value) > MAX_VALUE_CHARS:
            raise BadRequest(f"A matcher's value must be at most {MAX_VALUE_CHARS} characters; got {len(self.value)}.")
        if self.is_regex:
            _regex(self.value)

    def matches(self, labels: dict[str, str]) -> bool:
        actual = labels.get(self.name, "")
        hit = _regex(self.value).fullmatch(actual) is not None if self.is_regex else actual == self.value
        return hit == self.is_equal

    @property
    def operator(self) -> str:
        return _OPERATORS[(self.is_equal, self.is_regex)]

    def text(self) -> str:
        """Alertmanager's text form, ``name="value"``, which :func:`parse_matcher` reads back."""
        return f"{self.name}{self.operator}{json.dumps(self.value, ensure_ascii=False)}"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "isRegex": self.is_regex, "isEqual": self.is_equal}


def parse_matcher(text: str) -> Matcher:
    """``name=value``, ``name!=value``, ``name=~regex`` or ``name!~regex``; the value bare or in
    double quotes (JSON escapes)."""
    found = _MATCHER.fullmatch(text)
    if found is None:
        raise BadRequest(f"A matcher must read name=value, name!=value, name=~regex or name!~regex; got {shown(text)}.")
    name, op, value = found.groups()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            value = json.loads(value)
        except ValueError:
            raise BadRequest(f"The quoted value of matcher {shown(text)} is not a valid string.") from None
    return Matcher(name, value, is_regex="~" in op, is_equal=op[0] == "=")


def matcher_from_json(item: Any) -> Matcher:
    """A matcher from Alertmanager's JSON (``{name, value, isRegex, isEqual}``) or its text form."""
    if isinstance(item, str):
        return parse_matcher(item)
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("value"), str):
        raise BadRequest(f"A matcher must be an object with a string 'name' and 'value'; got {shown(str(item))}.")
    is_regex, is_equal = item.get("isRegex", False), item.get("isEqual", True)
    if not isinstance(is_regex, bool) or not isinstance(is_equal, bool):
        raise BadRequest("A matcher's 'isRegex' and 'isEqual' must be true or false.")
    return Matcher(item["name"], item["value"], is_regex=is_regex, is_equal=is_equal)


def alert_labels(name: str, labels: dict[str, str]) -> dict[str, str]:
    """The labels silences match: the rule's name as ``alertname``, as every channel sends it."""
    return {"alertname": name, **labels}


@dataclass(frozen=True, slots=True)
class Silence:
    """One silence of one project."""

    id: str
    project: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    updated_at: datetime

    def state(self, now: datetime) -> str:
        return PENDING if now < self.starts_at else ACTIVE if now < self.ends_at else EXPIRED

    def mutes(self, labels: dict[str, str], now: datetime) -> bool:
        return self.state(now) == ACTIVE and all(m.matches(labels) for m in self.matchers)

    def as_json(self, now: datetime) -> dict[str, Any]:
        """Alertmanager's ``gettableSilence`` shape."""
        return {
            "id": self.id, "matchers": [m.as_json() for m in self.matchers], "startsAt": _iso(self.starts_at),
            "endsAt": _iso(self.ends_at), "updatedAt": _iso(self.updated_at), "createdBy": self.created_by,
            "comment": self.comment, "status": {"state": self.state(now)},
        }


@dataclass(frozen=True, slots=True)
class Ack:
    """An acknowledgement of the firing of alert ``fingerprint`` that started at ``starts_at``."""

    project: str
    fingerprint: str
    starts_at: datetime
    acked_at: datetime
    acked_by: str
    note: str
    name: str = ""
    summary: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "alertname": self.name, "summary": self.summary,
                "startsAt": _iso(self.starts_at), "ackedAt": _iso(self.acked_at), "ackedBy": self.acked_by,
                "note": self.note}


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(name: str, value: Any) -> datetime:
    """An RFC 3339 time (Alertmanager's ``startsAt``/``endsAt``), as an aware UTC datetime."""
    if not isinstance(value, str):
        raise BadRequest(f"The '{name}' field must be an RFC 3339 time; got {shown(str(value))}.")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadRequest(f"The '{name}' field must be an RFC 3339 time; got {shown(value)}.") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _text(name: str, value: Any, *, required: bool) -> str:
    text = "" if value is None else value
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS or (required and not text.strip()):
        need = "a non-empty" if required else "a"
        raise BadRequest(f"The '{name}' field must be {need} string of at most {MAX_TEXT_CHARS} characters.")
    return text.strip()


def new_silence(
    project: str, matchers: list[Matcher], *, starts_at: datetime, ends_at: datetime, created_by: str,
    comment: str, now: datetime, silence_id: str | None = None,
) -> Silence:
    """A checked silence: 1-16 matchers, at least one that the empty string fails (so a silence
    cannot mute every alert by accident, Alertmanager's rule), an end after its start and after
    ``now``, a creator and a comment."""
    if not 1 <= len(matchers) <= MAX_MATCHERS:
        raise BadRequest(f"A silence needs 1 to {MAX_MATCHERS} matchers; got {len(matchers)}.")
    if all(m.matches({}) for m in matchers):
        raise BadRequest("At least one matcher of a silence must not match the empty string: "
                         "these would mute every alert.")
    if ends_at <= starts_at or ends_at <= now:
        raise BadRequest("A silence's 'endsAt' must be after its 'startsAt' and in the future.")
    return Silence(
        id=silence_id or str(uuid.uuid4()), project=project, matchers=tuple(matchers), starts_at=starts_at,
        ends_at=ends_at, created_by=_text("createdBy", created_by, required=True),
        comment=_text("comment", comment, required=True), updated_at=now,
    )


def _row(s: Silence) -> dict[str, Any]:
    return {"project": s.project, "id": s.id, "matchers": json.dumps([m.as_json() for m in s.matchers]),
            "starts_at": clickhouse_time(s.starts_at), "ends_at": clickhouse_time(s.ends_at),
            "created_by": s.created_by, "comment": s.comment, "updated_at": clickhouse_time(s.updated_at)}


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def save_silence(store: Store, silence: Silence) -> Silence:
    """Store ``silence`` (new, or a new version of the same id). Blocks on one insert."""
    store.insert("silences", encode_rows([_row(silence)]))
    return silence


_LATEST = (
    "SELECT project, id, argMax(matchers, updated_at) AS m, argMax(starts_at, updated_at) AS starts,"
    " argMax(ends_at, updated_at) AS ends, toString(starts) AS s, toString(ends) AS e,"
    " argMax(created_by, updated_at) AS who, argMax(comment, updated_at) AS why, toString(max(updated_at)) AS u"
    " FROM silences WHERE {where} GROUP BY project, id HAVING {having} ORDER BY ends DESC, id"
)


def _silences(store: Store, where: str, having: str, params: dict[str, Any]) -> list[Silence]:
    rows = store.query(_LATEST.format(where=where, having=having), params)
    return [
        Silence(id=r["id"], project=r["project"],
                matchers=tuple(matcher_from_json(m) for m in json.loads(r["m"])), starts_at=_utc(r["s"]),
                ends_at=_utc(r["e"]), created_by=r["who"], comment=r["why"], updated_at=_utc(r["u"]))
        for r in rows
    ]


def project_silences(
    store: Store, project: str, now: datetime, *, expired_for: timedelta | None = None,
) -> list[Silence]:
    """``project``'s silences that are pending or active at ``now`` and, with ``expired_for``,
    those that expired within that long; latest end first."""
    since = now - (expired_for or timedelta(0))
    return _silences(store, "project = {p:String}", "ends > {since:DateTime64(3)}",
                     {"p": project, "since": clickhouse_time(since)})


def silences_between(store: Store, project: str, start: datetime, end: datetime) -> list[Silence]:
    """``project``'s silences in force at some time in [``start``, ``end``)."""
    return _silences(store, "project = {p:String}",
                     "ends > {start:DateTime64(3)} AND starts < {end:DateTime64(3)}",
                     {"p": project, "start": clickhouse_time(start), "end": clickhouse_time(end)})


def silence_by_id(store: Store, project: str, silence_id: str) -> Silence | None:
    found = _silences(store, "project = {p:String} AND id = {id:String}", "1", {"p": project, "id": silence_id})
    return found[0] if found else None


def active_silences(store: Store, now: datetime) -> dict[str, list[Silence]]:
    """Every project's silences active at ``now``, by project (the evaluator's one read a minute)."""
    out: dict[str, list[Silence]] = {}
    for s in _silences(store, "1", "starts <= {now:DateTime64(3)} AND ends > {now:DateTime64(3)}",
                       {"now": clickhouse_time(now)}):
        out.setdefault(s.project, []).append(s)
    return out


def expire_silence(store: Store, project: str, silence_id: str, now: datetime) -> Silence | None:
    """End the silence now (a pending one never starts); ``None`` if the project has no such id."""
    found = silence_by_id(store, project, silence_id)
    if found is None or found.state(now) == EXPIRED:
        return found
    # a later version than every earlier one, even within the same millisecond
    version = max(now, found.updated_at + timedelta(milliseconds=1))
    ended = replace(found, starts_at=min(found.starts_at, now), ends_at=now, updated_at=version)
    return save_silence(store, ended)


def save_ack(store: Store, ack: Ack) -> Ack:
    store.insert("alert_acks", encode_rows([{
        "project": ack.project, "fingerprint": ack.fingerprint, "starts_at": clickhouse_time(ack.starts_at),
        "acked_at": clickhouse_time(ack.acked_at), "acked_by": _text("by", ack.acked_by, required=True),
        "note": _text("note", ack.note, required=False), "name": ack.name, "summary": ack.summary,
    }]))
    return ack


def acks(
    store: Store, project: str | None = None, *, since: datetime | None = None, fingerprints: list[str] | None = None,
) -> list[Ack]:
    """The first acknowledgement of each firing (of ``project`` or every project; made since
    ``since``; of ``fingerprints``), oldest first."""
    where = ["1"]
    params: dict[str, Any] = {}
    if fingerprints is not None:
        where.append("fingerprint IN {fps:Array(String)}")
        params["fps"] = fingerprints
    if project is not None:
        where.append("project = {p:String}")
        params["p"] = project
    if since is not None:
        where.append("acked_at >= {since:DateTime64(3)}")
        params["since"] = clickhouse_time(since)
    rows = store.query(
        "SELECT project, fingerprint, toString(starts_at) AS s, toString(min(acked_at)) AS at,"
        " argMin(acked_by, acked_at) AS who, argMin(note, acked_at) AS note, any(name) AS name,"
        " any(summary) AS summary FROM alert_acks"
        f" WHERE {' AND '.join(where)} GROUP BY project, fingerprint, starts_at ORDER BY at",
        params,
    )
    return [Ack(r["project"], r["fingerprint"], _utc(r["s"]), _utc(r["at"]), r["who"], r["note"], r["name"],
                r["summary"]) for r in rows]


def ack_key(project: str, fingerprint: str, starts_at: datetime) -> tuple[str, str, str]:
    """What identifies one firing: the alert's fingerprint and its start, to the stored millisecond."""
    return project, fingerprint, clickhouse_time(starts_at)


def silenced_by(silences: list[Silence], name: str, labels: dict[str, str], now: datetime) -> Silence | None:
    """The silence muting an alert, the one ending last if several do."""
    muting = [s for s in silences if s.mutes(alert_labels(name, labels), now)]
    return max(muting, key=lambda s: s.ends_at) if muting else None

