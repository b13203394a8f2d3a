"""What users install is what runs: the wheel, in a venv of its own, serves and stores a span.

An editable install maps the package folders onto ``infersight.*`` whatever the wheel would hold,
so a package the build leaves out (``collector/ingest`` once was) breaks only real installs.
This test builds the wheel from a copy of the sources, installs it with pip into a fresh venv
and drives the installed ``infersight`` command: ``keys create``, ``collector``, and the SDK
sending one span that the read API then counts.

The fresh venv has no pip and downloads nothing: the wheel is installed by this venv's pip
(``--python``) without dependencies, and a ``.pth`` line lends it this venv's site-packages for
the third-party ones. A ``.pth`` line adds a plain path, whose own ``.pth`` files (the editable
install's finder among them) are not run, so ``infersight`` resolves to the wheel only.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import httpx
import pytest

from tests import http
from tests.conftest import ROOT, free_port, wait_for

PACKAGES = ("sdk", "collector", "detectors", "judges", "dashboards", "demo")
SOURCES = (*PACKAGES, "pyproject.toml", "setup.py", "README.md")


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(path, source / name)
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, source)
    (wheel,) = dist.glob("infersight-*.whl")
    return wheel


def _install(wheel: Path, tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel)
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("wheel")
    return _install(_build_wheel(tmp_path), tmp_path)


def test_the_wheel_holds_every_package_of_the_tree(installed):
    python = installed / "bin" / "python"
    listing = _run(python, "-c", textwrap.dedent("""
        import pkgutil, infersight
        for module in pkgutil.walk_packages(infersight.__path__, "infersight."):
            print(module.name, module.ispkg)
        import infersight.collector
        print(infersight.collector.__file__)
    """))
    *modules, collector_file = listing.split("\n")[:-1]
    assert collector_file.startswith(str(installed)), "infersight was imported from the checkout, not the wheel"
    packages = {line.split()[0] for line in modules if line.endswith("True")}
    in_tree = {
        "infersight." + ".".join(init.parent.relative_to(ROOT).parts)
        for folder in PACKAGES for init in (ROOT / folder).rglob("__init__.py")
    }
    assert in_tree <= packages


def test_the_installed_command_serves_a_span_sent_by_the_installed_sdk(installed, tmp_path):
    command = installed / "bin" / "infersight"
    data_dir = tmp_path / "data"
    key = _run(command, "keys", "create", "--project", "wheel", "--role", "admin", "--data-dir", data_dir).strip()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([command, "collector", "--port", str(port), "--data-dir", data_dir,
                               "--decode-workers", "1", "--no-alerts"])
    try:
        assert wait_for(lambda: _answers(url), timeout_s=60), "the installed collector did not start"
        _run(installed / "bin" / "python", "-c", textwrap.dedent(f"""
            from infersight.sdk import init, shutdown, traced_llm
            init(service_name="wheel-app", endpoint="{url}", api_key="{key}")

            @traced_llm(provider="openai", model="gpt-4o-mini")
            def answer(question):
                return {{"choices": [{{"message": {{"role": "assistant", "content": "ok"}}}}],
                         "usage": {{"prompt_tokens": 7, "completion_tokens": 1}}}}

            answer("hello")
            shutdown(10)
        """))
        headers = {"authorization": f"Bearer {key}"}

        def calls() -> int:
            return http.get(f"{url}/api/v1/summary", params={"since": "1h"}, headers=headers).json()["spans"]

        assert wait_for(lambda: calls() == 1, timeout_s=60)
    finally:
        server.terminate()
        server.wait(30)


def _answers(url: str) -> bool:
    try:
        return http.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
