"""The packages talk through public names, and no import cycle spans two of them.

Read from the source with ``ast``, imports inside functions included (a lazy import is still a
dependency): a package may use another only through names that package chose to export, so
its private modules can change freely; a cycle across packages means neither can be
understood, tested or installed without the other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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
