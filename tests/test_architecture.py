"""Layering kept honest: the core never imports an edge's framework."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "engram"
EDGES = {"cli", "api", "mcp", "web", "sdk"}
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
        if rel.parts[0] in EDGES:
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
