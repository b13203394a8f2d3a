"""Refusing cross-site requests to the routes that change state.

A browser attaches the session cookie to a form another site posts here (SameSite=Lax stops
that for cross-site POSTs, but not for a sibling subdomain, and not in a browser that ignores
the attribute), so a route that a cookie, or no authentication at all, lets a browser reach
must see for itself where the request comes from. Browsers say it in two headers no page can
forge: ``Sec-Fetch-Site`` (every current browser) and ``Origin`` (on every POST). The first
is read first: it stays right behind a proxy that rewrites ``Host``, which ``Origin`` is
compared with.

- :data:`SameOriginDep`, for browser forms (login, logout): the request must come from the
  collector's own pages; neither header present is refused as well, since a form that cannot
  show where it comes from cannot show that it comes from here.
- :data:`NotCrossSiteDep`, for API writes: refused only when a header names another site. A
  request with an ``Authorization`` header is an API client's (a browser sends none across
  sites without a CORS preflight, which this server never grants), and so is one with neither
  header (the CLI, in ``--no-auth`` mode where it holds no key).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request

from ..errors import Forbidden
from ..store import shown

_OWN_SITE = ("same-origin", "none")  # "none": the user's own action (a bookmark, the address bar)


def cross_site_reason(request: Request) -> str | None:
    """Why the request comes from another site, or ``None`` if its headers say it does not or say nothing."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        if fetch_site.strip().lower() in _OWN_SITE:
            return None
        return f"the browser says it comes from another site (Sec-Fetch-Site {shown(fetch_site)})"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    host = (request.headers.get("host") or "").lower()
    if origin.strip().lower() == "null" or urlsplit(origin.strip()).netloc.lower() != host:
        return f"it was posted from {shown(origin)}, not from this collector ({shown(host)})"
    return None


# async although they never await: FastAPI runs a plain ``def`` dependency in its thread pool.
async def _same_origin(request: Request) -> None:
    reason = cross_site_reason(request)
    if reason is None and "sec-fetch-site" not in request.headers and "origin" not in request.headers:
        reason = "the request carries neither an Origin nor a Sec-Fetch-Site header"
    if reason is not None:
        raise Forbidden(f"Refused: this form only works from the collector's own pages, and {reason}.")


async def _not_cross_site(request: Request) -> None:
    if "authorization" in request.headers:
        return
    reason = cross_site_reason(request)
    if reason is not None:
        raise Forbidden(f"Refused: a page of another site cannot call this API, and {reason}.")


SameOriginDep = Annotated[None, Depends(_same_origin)]
NotCrossSiteDep = Annotated[None, Depends(_not_cross_site)]
