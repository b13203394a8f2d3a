"""HTTP calls of the tests, with a timeout that only ends a test that would fail anyway.

httpx's default (5 s) is a verdict on the machine's speed: on a busy host a collector's answer
took longer and the test failed though nothing was wrong. Use these instead of ``httpx.get`` etc.
"""

from __future__ import annotations

from typing import Any

import httpx

TIMEOUT_S = 60.0


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    kwargs.setdefault("timeout", TIMEOUT_S)
    return httpx.request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return request("POST", url, **kwargs)


def put(url: str, **kwargs: Any) -> httpx.Response:
    return request("PUT", url, **kwargs)


def delete(url: str, **kwargs: Any) -> httpx.Response:
    return request("DELETE", url, **kwargs)
