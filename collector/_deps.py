"""Shared FastAPI dependencies: the store and the settings the app was created with."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ._settings import Settings
from ._store import Store


def _store(request: Request) -> Store:
    return request.app.state.store


def _settings(request: Request) -> Settings:
    return request.app.state.settings


StoreDep = Annotated[Store, Depends(_store)]
SettingsDep = Annotated[Settings, Depends(_settings)]
