"""The core's layers: every module sits in one of core's packages, imports only the packages below
its own (and its own), nothing of the edges (boto3, httpx, Discord, the adapters, the handlers),
and stays under 600 lines. Each package's docstring says what it may import; it is checked too.

The order, lowest first: what a flow is built from comes before the flows that use it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import memorybot.core

CORE = Path(next(iter(memorybot.core.__path__)))
LAYERS = ("record", "prompting", "rights", "turn", "night")
MAX_LINES = 600
# Third-party packages of the edges: the core knows nothing of AWS, HTTP or Discord.
EDGE_PACKAGES = {"boto3", "botocore", "httpx", "nacl", "aws_lambda_powertools", "aws_xray_sdk", "moto"}


def imported(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the tree, wherever it is (a function's, a
    TYPE_CHECKING block's); ``from pkg import name`` counts as ``pkg.name`` (name may be a module)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def problems(source: str, relative: str) -> list[str]:
    """What is wrong with one module of core (``relative``: its path under core/, as posix)."""
    parts = relative.removesuffix(".py").split("/")
    is_package = parts[-1] == "__init__"
    module = ".".join(["memorybot", "core", *parts[:-1]] if is_package else ["memorybot", "core", *parts])
    if len(parts) == 1:
        if is_package:
            return []
        return [f"{relative}: a module at core/'s top level; put it in one of {LAYERS}"]
    layer = parts[0]
    if layer not in LAYERS:
        return [f"{relative}: {layer}/ is not one of core's layers {LAYERS}"]
    found = []
    for line, name in imported(ast.parse(source), module, is_package):
        words = name.split(".")
        if words[0] in EDGE_PACKAGES:
            found.append(f"{relative}:{line} imports {name}: the core knows nothing of the edges")
        elif words[0] == "memorybot" and words[1:2] != ["core"]:
            found.append(f"{relative}:{line} imports {name}: the core imports nothing outside it")
        elif words[:2] == ["memorybot", "core"] and len(words) > 2:
            if words[2] not in LAYERS:
                found.append(f"{relative}:{line} imports {name}: not in one of core's layers")
            elif LAYERS.index(words[2]) > LAYERS.index(layer):
                found.append(f"{relative}:{line} imports {name}: {layer} may not import {words[2]} (above it)")
    return found


def core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_every_core_module_imports_only_downward_and_nothing_of_the_edges():
    assert len(core_modules()) > 25
    found = []
    for path in core_modules():
        found += problems(path.read_text(encoding="utf-8"), path.relative_to(CORE).as_posix())
    assert found == []


def test_no_core_module_is_over_600_lines():
    lengths = {path.relative_to(CORE).as_posix(): len(path.read_text().splitlines()) for path in core_modules()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize("layer", LAYERS)
def test_each_package_says_what_it_holds_and_may_import_the_layers_below(layer):
    doc = ast.get_docstring(ast.parse((CORE / layer / "__init__.py").read_text(encoding="utf-8"))) or ""
    said = re.search(r"May import: (.+?)\.?$", doc, re.M)
    assert said, f"{layer}/__init__.py: its docstring says what it may import"
    below = LAYERS[: LAYERS.index(layer)]
    allowed = () if said[1].startswith("the standard library only") else tuple(re.split(r",\s*", said[1]))
    assert allowed == below
    assert len(doc.split("May import:")[0].strip()) > 80  # and what it holds


@pytest.mark.parametrize(
    ("source", "where", "complaint"),
    [
        ("from ..turn import conversation", "record/domain.py", "record may not import turn"),
        ("from ..night.consolidation import Consolidator", "rights/history.py", "rights may not import night"),
        ("from memorybot.core.turn.reply import ReplyWriter", "prompting/prompts.py", "prompting may not import turn"),
        ("def f():\n    from ..rights import history", "prompting/recall.py", "prompting may not import rights"),
        ("import boto3", "turn/reply.py", "the core knows nothing of the edges"),
        ("from botocore.exceptions import ClientError", "rights/erasure.py", "nothing of the edges"),
        ("from ...adapters import offline", "night/consolidation.py", "imports nothing outside it"),
        ("from memorybot.discord import formats", "rights/commands.py", "imports nothing outside it"),
        ("from ... import config", "record/ports.py", "imports nothing outside it"),
        ("x = 1", "settings.py", "at core/'s top level"),
        ("from .. import domain", "rights/x.py", "not in one of core's layers"),
    ],
)
def test_the_check_names_an_import_against_the_order(source, where, complaint):
    found = problems(source, where)
    assert len(found) == 1 and complaint in found[0], found


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("from ..record.domain import Memory\nfrom . import quoting", "prompting/prompts.py"),
        ("from ..prompting import recall\nfrom ..rights.consent import notice_text", "turn/conversation.py"),
        ("from .domain import iso\nimport logging", "record/changes.py"),
        ("from memorybot.core.record import ports", "night/nightly_steps.py"),
    ],
)
def test_the_check_lets_a_downward_or_sideways_import_be(source, where):
    assert problems(source, where) == []
