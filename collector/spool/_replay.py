"""Put dead letters back: once the cause is fixed, re-insert what the store refused.

A dead letter holds one acknowledged request whole (its ``otel_traces`` rows and detections).
Replaying inserts them again with a token derived from the dead letter itself, so a replay
repeated after a crash is dropped by ClickHouse's deduplication (within the tables' window of
1,000 inserts), then records the dead letter in ``dead_letter_replays``: append-only, no
mutation, the same on a cluster. A request the store refuses again stays a dead letter, and the
new reason is reported.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError
from ..store import PENDING_DEAD_LETTERS, Store, encode_rows
from ._spool import MAX_DAYS

logger = logging.getLogger("infersight.collector.spool")




@dataclass
class ReplayOutcome:
    """What a replay did: requests and spans stored again, and the reasons of those refused again."""

    requests: int = 0
    spans: int = 0
    refused: list[str] = field(default_factory=list)


def pending_dead_letters(store: Store, project: str) -> list[dict[str, Any]]:
    """The project's dead letters not replayed yet, oldest first (without their rows)."""
    return store.query(
        "SELECT toString(received) AS received, toString(stored) AS stored, spans, reason FROM dead_letters"
        f" WHERE {PENDING_DEAD_LETTERS} ORDER BY received, stored",
        {"project": project},
    )


def replay_dead_letters(
    store: Store, project: str, detect: Callable[[bytes], tuple[bytes, int]] | None = None
) -> ReplayOutcome:
    """Re-insert every pending dead letter of ``project``, with the inline detectors' findings
    (``detect``, as the writer runs them) when the letter has none. Blocks; a store that is down
    raises :class:`~infersight.collector.errors.StoreError` (nothing is lost: run it again)."""
    outcome = ReplayOutcome()
    letters = store.query(
        "SELECT toString(received) AS received, toString(stored) AS stored, spans, rows, detections"
        f" FROM dead_letters WHERE {PENDING_DEAD_LETTERS} ORDER BY received, stored",
        {"project": project},
    )
    for letter in letters:
        identity = f"{project}\n{letter['received']}\n{letter['stored']}"
        token = hashlib.sha256(identity.encode()).hexdigest()[:40]
        try:
            for i, chunk in enumerate(_by_partition_limit(letter["rows"])):
                store.insert("otel_traces", chunk, dedup_token=f"{token}{i:04x}")
            found = letter["detections"].encode()
            if not found and detect is not None:
                found = _detections(detect, letter["rows"].encode())
            if found:
                store.insert("detections", found, dedup_token=token + "de")
        except StoreError as exc:
            if exc.transient:
                raise
            outcome.refused.append(str(exc)[:4000])
            logger.error("a dead letter of project %r was refused again: %s", project, exc)
            continue
        marker = {"project": project, "received": letter["received"], "stored": letter["stored"]}
        store.insert("dead_letter_replays", encode_rows([marker]), dedup_token=token + "ff")
        outcome.requests += 1
        outcome.spans += int(letter["spans"])
    return outcome


def _by_partition_limit(rows: str) -> list[bytes]:
    """JSONEachRow ``otel_traces`` rows in inserts of at most :data:`MAX_DAYS` days each (a
    request set aside before the writer split batches by day may hold more)."""
    by_day: dict[int, list[str]] = defaultdict(list)
    for line in rows.splitlines():
        if not line.strip():
            continue
        try:  # Unix seconds with nanoseconds, as the decoder writes Timestamp
            day = int(str(json.loads(line)["Timestamp"]).split(".")[0]) // 86_400
        except (ValueError, KeyError, TypeError, AttributeError):
            day = -1  # left for the store to judge, and to refuse with its reason
        by_day[day].append(line)
    days = sorted(by_day)
    return [
        "".join(line + "\n" for day in days[i: i + MAX_DAYS] for line in by_day[day]).encode()
        for i in range(0, len(days), MAX_DAYS)
    ]


def _detections(detect: Callable[[bytes], tuple[bytes, int]], rows: bytes) -> bytes:
    try:
        return detect(rows)[0]
    except Exception:
        logger.exception("the inline detectors failed on a dead letter; replaying its spans without them")
        return b""
