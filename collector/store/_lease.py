"""Leases in the store: one collector of a deployment holds each named job at a time.

ClickHouse has no transactions and no compare-and-set, so a lease is an append-only log of
claims (``sql/086_leases.sql``) and its holder is a function of that log, computed by every
reader the same way:

1. Claims are taken in the order the store wrote them (``written_at``, the store's clock; the
   holder's name breaks a tie), never in the order their holders' clocks say.
2. A claim is accepted when no other holder's accepted claim covers its ``claimed_at``: the lease
   was free, expired, or already this claimant's (a renewal, or a release that ends it now).
3. The holder at time ``t`` is the last accepted claim's holder if it expires after ``t``.

A collector claims only when it read the lease free or its own, then reads the log again and
holds the lease only if its claim was accepted. Two claimants that race both write; whichever
insert the store wrote first wins, and the other reads that back and stands down.

The guarantee, and its limits:

- One holder at a time, as long as a reader sees every insert written before its own: true on one
  server, and on a replicated cluster with ``insert_quorum`` (every claim written to a quorum,
  synchronously through the Distributed table) and ``select_sequential_consistency``, which the
  claim and the read ask for. Two inserts under way at the same instant can become visible in the
  opposite order of their ``written_at`` (the window is an insert's commit, milliseconds); then
  both claimants may believe they hold the lease until the next renewal, a third of the TTL
  later, when both read the same log and one stands down. On a multi-shard cluster, the shards'
  clocks order the claims, so their skew widens that window.
- Expiry compares a holder's ``expires_at`` (its clock) with the reader's clock. A holder renews
  every third of the TTL, so a reader whose clock is ahead by less than two thirds of the TTL
  (minus one renewal's latency; 20 s at the default 30 s) never takes a live holder's lease; a
  larger skew lets it take over early, and the two overlap until the old holder's next renewal,
  which is refused, makes it stand down. A holder whose renewals fail (the store is down) gives
  the lease up by itself when its last claim expires on its own clock.
- When the holder dies, its lease is taken by the first other collector to try after its last
  claim expired: within the TTL plus one renewal interval.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ._base import Store

LEASE_TTL_S = 30.0
"""How long a claim lasts unless renewed; holders renew every third of it."""

HISTORY_TTLS = 4
"""How far back the log is read, in TTLs: only a race between claims rejects one, and a claim
older than this has expired and covers nothing a current claim could need."""

# Synchronous to a quorum of replicas through a Distributed table; settings that do not apply
# (one server, chDB) are ignored by ClickHouse.
_CLAIM = (
    "INSERT INTO leases (name, holder, claimed_at, expires_at)"
    " SETTINGS insert_quorum = 'auto', insert_distributed_sync = 1"
    " SELECT {name:String}, {holder:String}, fromUnixTimestamp64Milli({claimed_ms:Int64}),"
    " fromUnixTimestamp64Milli({expires_ms:Int64})"
)
_LOG = (
    "SELECT holder, toUnixTimestamp64Milli(claimed_at) AS claimed_ms, toUnixTimestamp64Milli(expires_at) AS expires_ms"
    " FROM leases WHERE name = {name:String} AND expires_at > fromUnixTimestamp64Milli({since_ms:Int64})"
    " ORDER BY written_at, holder SETTINGS select_sequential_consistency = 1"
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One row of the log: ``holder`` claims the lease from ``claimed_ms`` to ``expires_ms``
    (Unix milliseconds, on the holder's clock)."""

    holder: str
    claimed_ms: int
    expires_ms: int


def lease_holder(claims: list[Claim], now_ms: int) -> Claim | None:
    """The accepted claim that holds the lease at ``now_ms``, from ``claims`` in written order;
    ``None`` when the lease is free."""
    current: Claim | None = None
    for claim in claims:
        if current is None or current.holder == claim.holder or current.expires_ms <= claim.claimed_ms:
            current = claim
    return current if current is not None and current.expires_ms > now_ms else None


def holder_name() -> str:
    """A name for this process's claims: host and pid to read, and a random part so that a
    restarted process with the same pid is not taken for its predecessor."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Lease:
    """The lease ``name`` in ``store``, as ``holder`` tries to hold it.

    Args:
        ttl_s: how long a claim lasts; :meth:`renew` must be called more often than that (every
            third of it) for the holder to keep the lease.
        wall: Unix time in seconds, this process's clock (injectable for tests).

    :meth:`renew` and :meth:`release` block on two store calls and raise
    :class:`~..errors.StoreError`; :meth:`held` never blocks. Thread-safe.
    """

    def __init__(
        self, store: Store, name: str, holder: str, *, ttl_s: float = LEASE_TTL_S, wall: Callable[[], float],
    ) -> None:
        if not ttl_s > 0:
            raise ValueError(f"The 'ttl_s' parameter of Lease must be positive; got {ttl_s!r}.")
        self.store = store
        self.name = name
        self.holder = holder
        self.ttl_s = ttl_s
        self.wall = wall
        self.renewals = 0  # calls of renew() that reached the store, held or not
        self._until_ms = 0  # this holder's own view: it holds the lease until then
        self._lock = threading.Lock()

    def held(self) -> bool:
        """Whether this process holds the lease now, as of its last renewal and its own clock."""
        with self._lock:
            return self._now_ms() < self._until_ms

    def current(self) -> Claim | None:
        """The claim that holds the lease now, as the store's log says; ``None``: free."""
        now_ms = self._now_ms()
        return lease_holder(self._log(now_ms), now_ms)

    def renew(self) -> bool:
        """Take the lease if it is free or expired, renew it if it is ours; whether we hold it.

        Reads the log, writes a claim only when the lease is free or ours, and reads the log
        again to see whether the claim won. A store error leaves :meth:`held` to run out.
        """
        now_ms = self._now_ms()
        winner = lease_holder(self._log(now_ms), now_ms)
        if winner is None or winner.holder == self.holder:
            expires_ms = now_ms + round(self.ttl_s * 1000)
            self._claim(now_ms, expires_ms)
            winner = lease_holder(self._log(now_ms), now_ms)
        ours = winner is not None and winner.holder == self.holder
        with self._lock:
            self._until_ms = winner.expires_ms if ours and winner is not None else 0
            self.renewals += 1
        return ours

    def release(self) -> None:
        """Give the lease up now, if it is ours, so another holder need not wait for its expiry."""
        with self._lock:
            if self._until_ms == 0:
                return
            self._until_ms = 0
        now_ms = self._now_ms()
        self._claim(now_ms, now_ms)

    def _claim(self, claimed_ms: int, expires_ms: int) -> None:
        self.store.query(_CLAIM, {"name": self.name, "holder": self.holder, "claimed_ms": claimed_ms,
                                  "expires_ms": expires_ms})

    def _log(self, now_ms: int) -> list[Claim]:
        since_ms = now_ms - round(HISTORY_TTLS * self.ttl_s * 1000)
        rows = self.store.query(_LOG, {"name": self.name, "since_ms": since_ms})
        return [Claim(row["holder"], int(row["claimed_ms"]), int(row["expires_ms"])) for row in rows]

    def _now_ms(self) -> int:
        return round(self.wall() * 1000)
