"""The alerts' own routes, each for the caller's project: the digest and the alert history as
JSON; silences and acknowledgements as JSON (``/api/v1``, and Alertmanager's ``/api/v2`` silence
paths and shapes, so amtool-style clients work) and as the Alerts page's forms.

The page itself and the digest page are the dashboards'; the forms here answer with a redirect
back to ``/alerts``. API writes refuse cross-site browsers (``NotCrossSiteDep``), forms anything
not posted from the collector's own pages (``SameOriginDep``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from ..errors import BadRequest, PayloadTooLarge
from ..store import Store, check_choice, day_or_yesterday, since_ns
from ..web import (
    SESSION_COOKIE,
    AdminPageProjectDep,
    AdminProjectDep,
    NotCrossSiteDep,
    ReadProjectDep,
    SameOriginDep,
    StoreDep,
)
from ._digest import build_digest
from ._evaluator import history
from ._marks import silencing
from ._silences import (
    MAX_MATCHERS,
    Ack,
    Silence,
    expire_silence,
    matcher_from_json,
    new_silence,
    parse_matcher,
    parse_time,
    project_silences,
    save_ack,
    save_silence,
    silence_by_id,
)

router = APIRouter()
_BODY_MAX_BYTES = 64 * 1024
_KEY_SHOWN = 12  # characters of a key that `infersight keys list` shows, and so names it
KEEP_EXPIRED = timedelta(days=5)  # expired silences listed as long as Alertmanager keeps them
DURATIONS = {"1h": "1 hour", "2h": "2 hours", "4h": "4 hours", "8h": "8 hours", "1d": "1 day", "3d": "3 days",
             "7d": "1 week"}
_DURATION = {"h": 3600, "d": 86400}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _today_or(date: str | None) -> Any:
    # an explicit day is checked as every other date parameter; none means today so far
    return day_or_yesterday(date) if date is not None else _now().date()


# -- the digest and the history ---------------------------------------------------------------


@router.get("/api/v1/digest")
async def digest(store: StoreDep, project: ReadProjectDep, date: str | None = None) -> dict[str, Any]:
    """The daily digest of ``date`` (``YYYY-MM-DD``, UTC; default today so far) as JSON."""
    result = await run_in_threadpool(build_digest, store, project, _today_or(date), _now())
    return {**asdict(result), "day": result.day.isoformat(), "lines": result.lines()}


def alert_history(store: Store, project: str, since: datetime, now: datetime) -> dict[str, Any]:
    """:func:`history`, each firing alert with the silence muting it and its firing's
    acknowledgement, each event with the id of the silence that held it back (``held_by``)."""
    result = history(store, project, since)
    marks = silencing(store, project, result["firing"], now, result["history"])
    for alert in result["firing"]:
        mark = marks["marks"][alert["fingerprint"]]
        alert["silenced_by"], alert["ack"] = mark["silence"], mark["ack"]
    for event, held in zip(result["history"], marks["held"], strict=True):
        event["held_by"] = held["silence"] if held else None
    return result


@router.get("/api/v1/alerts")
async def alerts(store: StoreDep, project: ReadProjectDep, since: str = "7d") -> dict[str, Any]:
    """Alerts firing now (each with ``silenced_by`` and ``ack``) and every firing/repeat/resolved
    event since ``since``, newest first."""
    start = datetime.fromtimestamp(since_ns(since) / 1e9, tz=timezone.utc)
    result = await run_in_threadpool(alert_history, store, project, start, _now())
    return {"since": since, **result}


# -- who is asking ----------------------------------------------------------------------------


def caller(request: Request) -> str:
    """Who to record as the author when the request names nobody: its key, as `infersight keys
    list` shows it (the Bearer key, or the key the dashboard session logged in with)."""
    scheme, _, key = (request.headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return f"key {key.strip()[:_KEY_SHOWN]}"
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie and request.app.state.authenticator is not None:
        return f"key {cookie.split('.', 1)[0][:_KEY_SHOWN]}"  # the session was checked: its first field is the key's
    return "anonymous (no keys)"


async def _body(request: Request) -> bytes:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _BODY_MAX_BYTES:
            raise PayloadTooLarge(f"The body must be at most {_BODY_MAX_BYTES} bytes.")
    return body


async def _json_object(request: Request, *, optional: bool = False) -> dict[str, Any]:
    body = await _body(request)
    if optional and not body.strip():
        return {}
    try:
        payload = json.loads(body)
    except ValueError:
        raise BadRequest("The body must be a JSON object.") from None
    if not isinstance(payload, dict):
        raise BadRequest("The body must be a JSON object.")
    return payload


async def _form(request: Request) -> dict[str, str]:
    try:
        fields = parse_qs((await _body(request)).decode("utf-8", "replace"), max_num_fields=20)
    except ValueError:
        raise BadRequest("The form has more fields than this form has.") from None
    return {name: values[0] for name, values in fields.items()}


# -- silences ---------------------------------------------------------------------------------


def _silence_from(store: Store, project: str, payload: dict[str, Any], who: str, now: datetime) -> Silence:
    """A silence from Alertmanager's ``postableSilence`` (an ``id`` of this project's edits that silence)."""
    matchers = payload.get("matchers")
    if not isinstance(matchers, list):
        raise BadRequest("The 'matchers' field must be a list of {name, value, isRegex, isEqual} or 'name=value'.")
    silence_id = payload.get("id") or None
    known = isinstance(silence_id, str) and silence_by_id(store, project, silence_id) is not None
    if silence_id is not None and not known:
        raise HTTPException(404, f"This project has no silence {silence_id!r} to update.")
    starts = parse_time("startsAt", payload["startsAt"]) if payload.get("startsAt") else now
    if "endsAt" not in payload:
        raise BadRequest("The 'endsAt' field is required: a silence always ends.")
    return new_silence(
        project, [matcher_from_json(m) for m in matchers[:MAX_MATCHERS + 1]], starts_at=max(starts, now),
        ends_at=parse_time("endsAt", payload["endsAt"]), created_by=payload.get("createdBy") or who,
        comment=payload.get("comment") or "", now=now, silence_id=silence_id,
    )


async def _post_silence(request: Request, store: Store, project: str) -> Silence:
    payload = await _json_object(request)
    now = _now()

    def create() -> Silence:
        return save_silence(store, _silence_from(store, project, payload, caller(request), now))

    return await run_in_threadpool(create)


def _listed(store: Store, project: str) -> list[dict[str, Any]]:
    now = _now()
    return [s.as_json(now) for s in project_silences(store, project, now, expired_for=KEEP_EXPIRED)]


async def _expire(store: Store, project: str, silence_id: str) -> Silence:
    ended = await run_in_threadpool(expire_silence, store, project, silence_id, _now())
    if ended is None:
        raise HTTPException(404, f"This project has no silence {silence_id!r}.")
    return ended


@router.get("/api/v1/silences")
async def list_silences(store: StoreDep, project: ReadProjectDep) -> dict[str, Any]:
    """The project's pending and active silences, and those expired in the last 5 days, latest end first."""
    return {"silences": await run_in_threadpool(_listed, store, project)}


@router.post("/api/v1/silences")
async def create_silence(request: Request, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> Any:
    """Create (or, with the ``id`` of one, replace) a silence: Alertmanager's JSON, with matchers
    as objects or as ``name=value`` text; ``createdBy`` defaults to the caller's key."""
    silence = await _post_silence(request, store, project)
    return {"silenceID": silence.id, "silence": silence.as_json(_now())}


@router.delete("/api/v1/silences/{silence_id}")
async def delete_silence(silence_id: str, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> Any:
    """Expire a silence now (it stays listed as expired); 404 for an id the project does not have."""
    return {"silence": (await _expire(store, project, silence_id)).as_json(_now())}


@router.get("/api/v2/silences")
async def am_list_silences(store: StoreDep, project: ReadProjectDep) -> list[dict[str, Any]]:
    """Alertmanager's ``GET /api/v2/silences``."""
    return await run_in_threadpool(_listed, store, project)


@router.post("/api/v2/silences")
async def am_create_silence(request: Request, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> Any:
    """Alertmanager's ``POST /api/v2/silences``: answers ``{"silenceID": ...}``."""
    return {"silenceID": (await _post_silence(request, store, project)).id}


@router.get("/api/v2/silence/{silence_id}")
async def am_get_silence(silence_id: str, store: StoreDep, project: ReadProjectDep) -> dict[str, Any]:
    """Alertmanager's ``GET /api/v2/silence/{id}``."""
    found = await run_in_threadpool(silence_by_id, store, project, silence_id)
    if found is None:
        raise HTTPException(404, f"This project has no silence {silence_id!r}.")
    return found.as_json(_now())


@router.delete("/api/v2/silence/{silence_id}")
async def am_delete_silence(silence_id: str, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> Response:
    """Alertmanager's ``DELETE /api/v2/silence/{id}``: expires it, answers an empty 200."""
    await _expire(store, project, silence_id)
    return Response(status_code=200)


# -- acknowledgements -------------------------------------------------------------------------


def _ack(store: Store, project: str, fingerprint: str, by: str, note: str) -> Ack:
    now = _now()
    firing = [a for a in history(store, project, now)["firing"] if a["fingerprint"] == fingerprint]
    if not firing:
        raise HTTPException(404, f"No alert {fingerprint!r} of this project is firing.")
    starts = datetime.fromisoformat(firing[0]["since"]).replace(tzinfo=timezone.utc)
    return save_ack(store, Ack(project, fingerprint, starts, now, by, note, firing[0]["name"], firing[0]["summary"]))


@router.post("/api/v1/alerts/{fingerprint}/ack")
async def ack_alert(
    fingerprint: str, request: Request, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep,
) -> dict[str, Any]:
    """Acknowledge the firing alert ``fingerprint``: its repeats stop until it resolves. Body
    (optional): ``{"by": ..., "note": ...}``; ``by`` defaults to the caller's key. 404 if it is
    not firing."""
    payload = await _json_object(request, optional=True)
    by, note = payload.get("by") or caller(request), payload.get("note") or ""
    return {"ack": (await run_in_threadpool(_ack, store, project, fingerprint, by, note)).as_json()}


# -- the Alerts page's forms ------------------------------------------------------------------


def _back() -> RedirectResponse:
    return RedirectResponse("/alerts", 303)


@router.post("/alerts/silences")
async def silence_form(request: Request, store: StoreDep, project: AdminPageProjectDep, _: SameOriginDep) -> Response:
    """The Alerts page's silence form: matchers one per line, a duration, who (default: the
    session's key) and why."""
    form = await _form(request)
    duration = check_choice("duration", form.get("duration"), DURATIONS, "2h")
    now = _now()
    ends = now + timedelta(seconds=int(duration[:-1]) * _DURATION[duration[-1]])
    lines = [line for line in form.get("matchers", "").splitlines() if line.strip()]

    def create() -> None:
        save_silence(store, new_silence(
            project, [parse_matcher(line) for line in lines[:MAX_MATCHERS + 1]], starts_at=now, ends_at=ends,
            created_by=form.get("created_by", "").strip() or caller(request), comment=form.get("comment", ""),
            now=now,
        ))

    await run_in_threadpool(create)
    return _back()


@router.post("/alerts/silences/{silence_id}/expire")
async def expire_form(
    silence_id: str, request: Request, store: StoreDep, project: AdminPageProjectDep, _: SameOriginDep,
) -> Response:
    """The Alerts page's expire button."""
    await _expire(store, project, silence_id)
    return _back()


@router.post("/alerts/{fingerprint}/ack")
async def ack_form(
    fingerprint: str, request: Request, store: StoreDep, project: AdminPageProjectDep, _: SameOriginDep,
) -> Response:
    """The Alerts page's acknowledge form: who (default: the session's key) and a note."""
    form = await _form(request)
    by = form.get("by", "").strip() or caller(request)
    await run_in_threadpool(_ack, store, project, fingerprint, by, form.get("note", ""))
    return _back()
