"""Layering kept honest (ARCHITECTURE.md draws the map these tests enforce):

- the core never imports an edge's framework, and only the store speaks SQL;
- the core (models, store, retrieval, lifecycle, soul, extraction, embeddings and the
  top-level data modules) never imports the service layer or an edge;
- the edges (api, mcp, oauth, cli, sdk, web) never import each other; ``engram.servers``, the
  composition root of the long-running processes, joins them;
- no import cycle among modules. Every import counts: at the top of a module, inside a function
  (a lazy import still ties the two modules together) and under ``TYPE_CHECKING`` (the types
  depend on each other just the same). Importing ``a.b.c`` also runs ``a/__init__`` and
  ``a/b/__init__``, so those are edges too;
- ``import engram.sdk`` loads neither numpy nor the server stack.
- every public service method takes what it acts on, then ``actor``, then its options, and no
  positional ``bool`` (ARCHITECTURE.md, Service signatures); no SDK method takes a positional
  ``bool`` either.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import typing
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "engram"
EDGES = {"cli", "api", "mcp", "web", "sdk", "oauth"}
SERVICE = "service"
ROOTS = {"servers", "__init__", "__main__"}
"""Composition roots (engram.servers) and the package itself (its ``Engram`` loads lazily)."""
KNOWN_CYCLES: set[frozenset[str]] = set()
FRAMEWORKS = {"typer", "click", "rich", "fastapi", "starlette", "uvicorn", "mcp", "httpx"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_core_does_not_import_edge_frameworks() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] in EDGES or rel == Path("servers.py"):
            continue
        bad = imports(path) & FRAMEWORKS
        # outbound HTTP clients of model providers (embeddings, LLM extraction) may use httpx
        http_client = rel.parts[0] == "embeddings" or rel == Path("extraction/providers.py")
        if bad and not (http_client and bad == {"httpx"}):
            offenders.append(f"{rel}: {sorted(bad)}")
    assert offenders == []


def test_only_the_store_package_speaks_sql_dialects() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "store":
            continue
        assert "sqlite3" not in imports(path), rel
        assert "psycopg" not in imports(path), rel


def test_modules_stay_small() -> None:
    big = [
        f"{p.relative_to(SRC)} ({n})"
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    ]
    assert big == []


# -- the module graph --------------------------------------------------------------------------
def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def engram_imports(module: str) -> set[str]:
    """The engram modules that importing ``module`` may run: every import in it, wherever it
    stands, with the packages on the way (a name imported from a package that is a module
    counts as that module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                # a module's own parent packages are already being imported when it runs
                if candidate in MODULES and not (module + ".").startswith(candidate + "."):
                    out.add(candidate)
    out.discard(module)
    return out


GRAPH = {m: engram_imports(m) for m in MODULES}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_core_never_imports_the_service_layer_or_an_edge() -> None:
    offenders = [
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if layer(m) not in EDGES | ROOTS | {SERVICE}
        for t in targets
        if layer(t) in EDGES | {SERVICE, "servers"}
    ]
    assert offenders == []


def test_edges_never_import_each_other() -> None:
    offenders = [
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if layer(m) in EDGES
        for t in targets
        if layer(t) in EDGES and layer(t) != layer(m)
    ]
    assert offenders == []


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_package() -> None:
    graph = {"a": {"a.b"}, "a.b": {"c"}, "c": {"a"}, "d": {"c"}}
    assert cycles(graph) == {frozenset({"a", "a.b", "c"})}


def test_no_import_cycles() -> None:
    assert cycles(GRAPH) == KNOWN_CYCLES  # fix one, then drop it from KNOWN_CYCLES


def test_the_sdk_loads_neither_numpy_nor_the_server_stack() -> None:
    code = "import json, sys, engram.sdk; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    heavy = {"numpy", "argon2", "fastapi", "starlette", "uvicorn", "mcp", "typer", "psycopg"}
    assert loaded & heavy == set()
    assert {m for m in loaded if m.startswith(("engram.service", "engram.store"))} == set()
    assert "httpx" in loaded and "engram.sdk.client" in loaded  # the check itself is live


SIGNATURE_EXEMPT = {"AuditLog"}
"""Classes whose ``actor`` is data (the one an audit entry records), not the caller."""


def signature_problems(source: str, where: str) -> list[str]:
    """The service-signature rules broken in ``source``: in a public method taking ``actor``,
    the required arguments (what it acts on) come first, then ``actor``, then the optional
    ones; a ``bool`` is never positional (``resolve_review(id, True, actor)`` reads as
    nothing)."""
    problems = []
    for cls in ast.parse(source).body:
        if not isinstance(cls, ast.ClassDef) or cls.name in SIGNATURE_EXEMPT:
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                continue
            positional = (fn.args.posonlyargs + fn.args.args)[1:]  # after self
            name = f"{where}:{cls.name}.{fn.name}"
            for arg in positional:
                if arg.annotation is not None and ast.unparse(arg.annotation) == "bool":
                    problems.append(f"{name}: positional bool {arg.arg!r}")
            names = [a.arg for a in positional]
            if "actor" not in names:
                continue
            at = names.index("actor")
            first_default = len(positional) - len(fn.args.defaults)
            if at > first_default:
                problems.append(f"{name}: an optional argument before actor")
            if at < first_default - 1:
                problems.append(f"{name}: a required argument after actor")
    return problems


def test_service_methods_put_actor_after_what_they_act_on() -> None:
    problems = []
    for path in sorted((SRC / SERVICE).glob("*.py")):
        problems += signature_problems(path.read_text(), path.name)
    assert problems == []


def test_the_signature_rules_find_what_they_forbid() -> None:
    bad = (
        "class S:\n"
        "    def resolve(self, id: str, accept: bool, actor: Actor) -> None: ...\n"
        "    def get(self, actor: Actor, id: str) -> None: ...\n"
        "    def find(self, q: str = '', actor: Actor = LOCAL) -> None: ...\n"
        "    def fine(self, id: str, actor: Actor, env: str = '', *, flag: bool = False): ...\n"
    )
    assert signature_problems(bad, "m") == [
        "m:S.resolve: positional bool 'accept'",
        "m:S.get: a required argument after actor",
        "m:S.find: an optional argument before actor",
    ]


def positional_flags(classes: Iterable[type]) -> list[str]:
    """Every public method of ``classes`` (and every SDK method a ``_Sync``/``_Async``
    descriptor builds its call with) that takes a ``bool`` positionally."""
    problems = []
    for cls in classes:
        for attr, value in vars(cls).items():
            fn = getattr(value, "_build", value)  # the SDK's sync and async resource methods
            if attr.startswith("_") or not inspect.isfunction(fn):
                continue
            params = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
            for p in params:
                flag = p.annotation is bool or bool in typing.get_args(p.annotation)
                if flag and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    problems.append(f"{cls.__module__}.{cls.__qualname__}.{attr}: {p.name}")
    return problems


def sdk_classes() -> list[type]:
    import engram.sdk

    out: list[type] = []
    for info in pkgutil.iter_modules(engram.sdk.__path__, "engram.sdk."):
        module = importlib.import_module(info.name)
        out += [
            c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == info.name
        ]
    return out


def test_the_sdk_takes_no_positional_flag() -> None:
    """``resolve_review(id, True, note)`` reads as nothing: every bool of the SDK (sync and
    async) is keyword-only, as in the service (``resolve_review(id, accept=True)``)."""
    classes = sdk_classes()
    assert {"Client", "AsyncClient", "Lifecycle", "AsyncLifecycle"} <= {c.__name__ for c in classes}
    assert positional_flags(classes) == []


def test_the_sdk_flag_rule_finds_what_it_forbids() -> None:
    from engram.sdk.client import _Async, _Sync

    class Calls:
        def resolve(self, review_id: str, accept: bool, note: str = "") -> None: ...
        def fine(self, review_id: str, *, accept: bool | None = None) -> None: ...

    class Resource:
        resolve = _Sync(Calls.resolve)
        resolve_later = _Async(Calls.resolve)
        fine = _Sync(Calls.fine)

    assert positional_flags([Calls, Resource]) == [
        f"{__name__}.{Calls.__qualname__}.resolve: accept",
        f"{__name__}.{Resource.__qualname__}.resolve: accept",
        f"{__name__}.{Resource.__qualname__}.resolve_later: accept",
    ]
