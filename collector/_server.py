"""Run the collector under uvicorn: in the foreground, or as a child process for the demo and tests."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType

import uvicorn

from ._app import create_app, open_store
from ._settings import Settings
from .errors import PortTaken
from .store import ChdbStore
from .web import record_collector_url

GRACEFUL_S = 3
"""Seconds requests under way may take to finish after the stop signal."""


def check_port(host: str, port: int) -> None:
    """Raise :class:`PortTaken` unless ``host:port`` can be listened on now.

    Binds and releases a socket with the options uvicorn binds with (``SO_REUSEADDR``, so a port
    in TIME_WAIT after a previous run is free, as it is for uvicorn), before the store and decode
    workers start: a taken port fails in milliseconds instead of after the start-up.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortTaken(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
            probe.listen(1)
        except OSError as exc:
            taken = exc.errno == errno.EADDRINUSE
            reason = "is in use by another process" if taken else f"cannot be listened on ({exc.strerror})"
            hint = "; pick another with --port" if taken else ""
            raise PortTaken(f"port {port} on {host} {reason}{hint}") from exc


class _BoundedServer(uvicorn.Server):
    """uvicorn's server, with the kernel's alarm armed at the first stop signal."""

    def __init__(self, config: uvicorn.Config, stop_bound_s: int) -> None:
        super().__init__(config)
        self._stop_bound_s = stop_bound_s

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            # The default action of SIGALRM ends the process even if no Python code runs again.
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(self._stop_bound_s)
        super().handle_exit(sig, frame)


def serve(settings: Settings) -> None:
    """Serve until SIGINT or SIGTERM, then close the store cleanly, within ``settings.stop_bound_s``
    (see :data:`._settings.STOP_BOUND_S`). Blocks.

    The store opens before uvicorn starts: a locked data directory fails before the port is
    bound, and uvicorn's signal handlers are installed after chDB has set up its own.
    """
    # uvicorn re-raises SIGTERM after its graceful shutdown, so the app's lifespan, not a
    # ``finally`` here, is what closes the store.
    store = open_store(settings)
    if isinstance(store, ChdbStore):  # the CLI finds the owner of the data directory here
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(settings.host, settings.host)
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        record_collector_url(settings.data_dir, f"http://{host}:{settings.port}")
    app = create_app(settings, store=store)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                            timeout_graceful_shutdown=GRACEFUL_S)
    server = _BoundedServer(config, settings.stop_bound_s)
    server.run()
    if not server.started:
        sys.exit(3)  # what uvicorn.run does when startup failed


class CollectorProcess:
    """``infersight collector`` in a child process; :meth:`start` returns once ``/healthz`` answers.

    The embedded store belongs to one process, so the demo and the tests run the collector as
    its own process and talk to it over HTTP, as an application would.
    """

    def __init__(self, data_dir: Path, port: int, *, extra_args: tuple[str, ...] = (),
                 own_session: bool = False) -> None:
        """``own_session``: the child gets a session of its own, so a Ctrl-C at the terminal reaches
        only the parent, which then stops the collector after its last export to it."""
        self.own_session = own_session
        self.data_dir = Path(data_dir)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._args = extra_args
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> CollectorProcess:
        command = [sys.executable, "-m", "infersight.collector", "collector",
                   "--port", str(self.port), "--data-dir", str(self.data_dir), *self._args]
        self.process = subprocess.Popen(command, env=dict(os.environ), start_new_session=self.own_session)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the collector exited with code {self.process.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"the collector did not answer within {timeout_s} s") from None
                time.sleep(0.1)

    def stop(self, timeout_s: float = 20.0) -> None:
        """Ask the collector to shut down cleanly (SIGTERM), killing it if it does not."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
