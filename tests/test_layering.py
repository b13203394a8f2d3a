"""The layer map of ARCHITECTURE.md holds: units talk downward, through public names, and no import
cycle spans two packages.

Read from the source with ``ast``, imports inside functions included (a lazy import is still a
dependency): a unit may use another only through names that unit chose to export, so its
private modules can change freely; an import that runs upward or sideways ties a stage to one
built on it, which is how a cycle starts (then neither can be understood, tested or installed
without the other).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sdk", "collector", "detectors", "judges", "dashboards", "demo")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in PACKAGES:
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(["infersight", *parts])] = path
    return found


def _imported(module: str, path: Path) -> set[str]:
    """Every module name ``module`` imports (the longest prefix that is one of ours or not)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def ours(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {ours(name) for name in _imported(module, path)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _top(module: str) -> str:
    return module.split(".")[1]


def test_no_package_imports_another_packages_private_modules():
    private = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _top(target) != _top(module) and any(part.startswith("_") for part in target.split(".")[2:])
    )
    assert private == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_spans_two_packages():
    spanning = [c for c in _cycles(_graph()) if len({_top(m) for m in c}) > 1]
    assert spanning == []


def test_the_cycle_finder_finds_a_cycle():
    # The control for the test above: it can fail.
    graph = {"infersight.a.x": {"infersight.b.y"}, "infersight.b.y": {"infersight.a.x"}, "infersight.a.z": set()}
    assert _cycles(graph) == [["infersight.a.x", "infersight.b.y"]]


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(result.stdout.split())


def test_the_sdk_needs_nothing_heavy_of_ours():
    loaded = _loaded_after("import infersight.sdk")
    assert not {"numpy", "sklearn", "scipy", "chdb", "fastapi", "infersight.collector"} & loaded


def test_the_store_imports_no_web_code():
    loaded = _loaded_after("import infersight.collector.store")
    assert not {"fastapi", "starlette", "uvicorn", "infersight.collector._app", "infersight.collector._cli"} & loaded


def test_a_decode_worker_loads_neither_the_web_framework_nor_the_command_line():
    # a spawned decode worker imports the parent's main module (this package's __main__ or the
    # `infersight` script, which imports only it) and decode_request: each module more is paid
    # at every collector start and every replaced worker
    loaded = _loaded_after("import infersight.collector.__main__, infersight.collector.ingest")
    assert not {"fastapi", "uvicorn", "click", "infersight.collector._cli", "infersight.judges",
                "infersight.collector.alerts"} & loaded


def test_the_cli_judges_and_alerts_load_no_web_code_until_a_router_is_asked_for():
    # Their routers are public names resolved on first use (ARCHITECTURE.md, "Layers").
    modules = "infersight.collector._cli, infersight.judges, infersight.collector.alerts"
    assert not {"fastapi", "starlette", "uvicorn"} & _loaded_after(f"import {modules}")
    assert "fastapi" in _loaded_after("from infersight.collector.alerts import router")


# The map drawn in ARCHITECTURE.md ("Layers"), bottom layer first. A unit is a top-level package,
# a stage folder of the collector, or a named set of the collector's root modules. A unit may
# import a unit of a lower layer only, through its public names; units of one layer do not
# import each other.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"detectors"}),
    frozenset({"sdk"}),
    frozenset({"collector.base"}),
    frozenset({"collector.store"}),
    frozenset({"collector.spool"}),
    frozenset({"collector.web"}),
    frozenset({"collector.ingest", "collector.alerts", "collector.jobs", "judges"}),
    frozenset({"dashboards", "demo"}),
    frozenset({"collector.root"}),
)
LAYER_OF = {unit: level for level, units in enumerate(LAYERS) for unit in units}
# The collector's root modules: its bottom layer (leaf modules every stage may use), the job
# scheduler, and the composition root (app factory, server, CLI), the one place that
# wires every stage. A new root module must be placed here, on purpose.
COLLECTOR_MODULES = {
    "errors": "collector.base", "_settings": "collector.base", "_counters": "collector.base",
    "_jobs": "collector.jobs",
    "_app": "collector.root", "_server": "collector.root", "_cli": "collector.root", "_demo": "collector.root",
    "_dead_letters": "collector.root", "_keys_cli": "collector.root", "__main__": "collector.root",
}


@dataclass(frozen=True)
class Import:
    """One name one module takes from another: ``target`` is the longest module of ours it
    names; ``name`` the attribute taken from it (``None`` when the module itself is)."""

    target: str
    name: str | None
    line: int
    type_only: bool


def _unit(module: str) -> str:
    parts = module.split(".")[1:]
    if parts[0] != "collector":
        return parts[0]
    if len(parts) == 1:
        return "collector.root"  # the package's __init__: its public face, wired lazily to _app
    return COLLECTOR_MODULES.get(parts[1], f"collector.{parts[1]}")


def _public_modules(unit: str, modules: dict[str, Path]) -> set[str]:
    """The modules another unit may name: a package's ``__init__``, its modules named without a
    leading underscore (``sdk.semconv``: public by name), or a root unit's modules."""
    if unit == "collector.root":
        return {"infersight.collector"}
    named = [name for name, owner in COLLECTOR_MODULES.items() if owner == unit]
    if named:
        return {f"infersight.collector.{name}" for name in named}
    package = "infersight." + unit
    public = {
        module for module in modules
        if module.startswith(package + ".") and not any(part.startswith("_") for part in module.split("."))
    }
    return {package} | public


def _imports(module: str, source: str, *, package: bool, modules: dict[str, Path]) -> list[Import]:
    """Every import of ours in ``source`` (the text of ``module``), lazy ones included."""

    def ours(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    anchor = module if package else module.rpartition(".")[0]
    tree = ast.parse(source, module)
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pairs = [(ours(alias.name), None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = anchor.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            pairs = []
            for alias in node.names:
                whole = ours(f"{base}.{alias.name}")
                pairs.append((whole, None) if whole == f"{base}.{alias.name}" else (ours(base), alias.name))
        else:
            continue
        found.extend(
            Import(target, name, node.lineno, id(node) in typing_only) for target, name in pairs if target is not None
        )
    return found


def _breaches(module: str, imports: list[Import], modules: dict[str, Path]) -> list[str]:
    """What ``module``'s imports do against the map: each as "module:line -> target (why)"."""
    unit = _unit(module)
    if unit not in LAYER_OF:
        return [f"{module}: its unit {unit} is not on the map (add it to LAYERS and ARCHITECTURE.md)"]
    found = []
    for imp in imports:
        target_unit = _unit(imp.target)
        if target_unit == unit:
            continue
        where = f"{module}:{imp.line} -> {imp.target}" + (f".{imp.name}" if imp.name else "")
        if target_unit not in LAYER_OF:
            found.append(f"{where} (unit {target_unit} is not on the map)")
            continue
        if not imp.type_only and LAYER_OF[target_unit] >= LAYER_OF[unit]:
            found.append(f"{where} (not a lower layer: {unit} may not use {target_unit})")
        outside = _top(module) != "collector" and not imp.target.endswith(".errors")
        private = imp.target not in _public_modules(target_unit, modules) or (imp.name or "").startswith("_")
        if private or (outside and imp.target.startswith("infersight.collector._")):
            found.append(f"{where} (a private name of {target_unit})")
    return found


def _map_breaches() -> list[str]:
    modules = _modules()
    found = []
    for module, path in sorted(modules.items()):
        imports = _imports(module, path.read_text(), package=path.name == "__init__.py", modules=modules)
        found += _breaches(module, imports, modules)
    return found


def test_every_import_follows_the_layer_map():
    assert _map_breaches() == []


def test_every_stage_folder_of_the_collector_is_on_the_map():
    stages = {path.parent.name for path in (ROOT / "collector").glob("*/__init__.py")}
    assert {f"collector.{stage}" for stage in stages} <= set(LAYER_OF)
    root_modules = {path.stem for path in (ROOT / "collector").glob("*.py")} - {"__init__"}
    assert root_modules == set(COLLECTOR_MODULES)


@pytest.mark.parametrize(
    ("module", "source", "why"),
    [
        ("infersight.collector.store._bad", "from ..web import StoreDep", "not a lower layer"),
        ("infersight.collector.web._bad", "def f():\n    from ..alerts import history", "not a lower layer"),
        ("infersight.collector.ingest._bad", "from infersight.collector.alerts import history", "not a lower layer"),
        ("infersight.collector.alerts._bad", "from infersight.collector import create_app", "not a lower layer"),
        ("infersight.collector.spool._bad", "from .._jobs import Scheduler", "not a lower layer"),
        ("infersight.dashboards._bad", "from infersight.collector.alerts._digest import build_digest", "private name"),
        ("infersight.collector.ingest._bad", "from ..web._deps import key_project", "a private name"),
        ("infersight.collector.alerts._bad", "from ..web._deps import StoreDep", "a private name"),
        ("infersight.collector.alerts._bad", "from ..store import _kinds", "a private name"),
        ("infersight.collector.alerts._bad", "from .._counters import _LOCK", "a private name"),
        ("infersight.collector._app", "from .web._api import router", "a private name"),
        ("infersight.dashboards._bad", "from infersight.collector._settings import Settings", "a private name"),
    ],
)
def test_the_layer_check_fails_on_a_bad_import(module, source, why):
    # The control for the test above: each of these lines alone breaks the map.
    modules = _modules()
    breaches = _breaches(module, _imports(module, source, package=False, modules=modules), modules)
    assert len(breaches) == 1
    assert why in breaches[0]


def test_the_layer_check_lets_a_lower_layer_through():
    modules = _modules()
    source = "from ..web import StoreDep\nfrom ..store import Store\nfrom .._settings import Settings\n"
    module = "infersight.collector.alerts._good"
    assert _breaches(module, _imports(module, source, package=False, modules=modules), modules) == []


def test_an_annotation_only_import_is_no_arrow_but_still_public():
    # ``if TYPE_CHECKING:`` imports never run, so they cannot make a cycle (``_settings`` names
    # judges' settings type this way); they still may name only what the other unit exports.
    modules = _modules()
    module = "infersight.collector._settings"
    source = "if TYPE_CHECKING:\n    from infersight.judges import JudgeSettings\n"
    assert _breaches(module, _imports(module, source, package=False, modules=modules), modules) == []
    source = "if TYPE_CHECKING:\n    from infersight.judges._background import JudgeSettings\n"
    assert "a private name" in _breaches(module, _imports(module, source, package=False, modules=modules), modules)[0]
