"""What a key may do: its role, and the one table of which role reaches which routes.

- ``ingest``: what applications hold. Sends telemetry (``/v1/traces``, ``/v1/logs``,
  ``/v1/metrics``) and feedback; reads nothing, so a key copied out of an app's config shows
  no prompt and cannot open the dashboards.
- ``read``: the dashboards and the read API of its project.
- ``admin``: everything the other two do, and what changes the project's setup: silences and
  acknowledgements, dead-letter replays, judge runs and panels. Keys made before roles existed
  are admin keys, since they were used for ingest and the dashboards alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["ingest", "read", "admin"]
ROLES: tuple[Role, ...] = ("ingest", "read", "admin")
LEGACY_ROLE: Role = "admin"

# The roles whose keys reach routes that need each role.
_GRANTED_BY: dict[Role, frozenset[Role]] = {
    "ingest": frozenset({"ingest", "admin"}),
    "read": frozenset({"read", "admin"}),
    "admin": frozenset({"admin"}),
}


def validate_role(role: str) -> Role:
    for known in ROLES:
        if role == known:
            return known
    raise ValueError(f"The role of a key must be one of {', '.join(ROLES)}; got {role!r}.")


@dataclass(frozen=True, slots=True)
class Grant:
    """Who a valid key (or a session made from one) speaks for, and with which role."""

    project: str
    role: Role

    def allows(self, needed: Role) -> bool:
        return self.role in _GRANTED_BY[needed]


def refusal(role: Role, needed: Role) -> str:
    """Why a ``role`` key is refused where ``needed`` is required, and what to use instead."""
    kinds = " or ".join(f"an {r} key" if r[0] in "aeiou" else f"a {r} key" for r in ROLES if r in _GRANTED_BY[needed])
    return (
        f"this needs {kinds}; this is {'an' if role[0] in 'aeiou' else 'a'} {role} key "
        f"(create one with 'infersight keys create --project NAME --role {needed}')"
    )
