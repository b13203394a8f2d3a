"""Collector settings: one frozen object built by the CLI (or a test) and passed to ``create_app``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Settings:
    """How a collector runs.

    Attributes:
        data_dir: where the embedded store (chDB) keeps its files.
        host, port: where HTTP is served (OTLP, API and dashboards on one port).
        max_body_bytes: largest accepted OTLP body after decompression (413 above it).
        project: the project every span is written to. Until API keys land this is the only
            project, the embedded single-user mode.
    """

    data_dir: Path = Path(".infersight")
    host: str = "127.0.0.1"
    port: int = 4318
    max_body_bytes: int = 64 * 1024 * 1024
    project: str = "default"

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"The 'port' setting must be between 0 and 65535; got {self.port}.")
        if self.max_body_bytes <= 0:
            raise ValueError(
                f"The 'max_body_bytes' setting must be positive; got {self.max_body_bytes}."
            )
