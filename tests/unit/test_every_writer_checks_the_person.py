"""Every writer of a person's data carries the person-record check (person.PersonCheck), so that
nothing in flight, and nothing fetched later, stores or learns for a person after their erasure.

The writers are found, not listed: every call in the package of a store method that takes a
``check`` (read off the ports), wherever it is. A new writer that leaves the check out fails here
unless it only removes (a delete), and says so below.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import memorybot
from memorybot.core.record import ports

PACKAGE = Path(next(iter(memorybot.__path__)))
# The stores' own modules implement the methods; every other module is a caller.
IMPLEMENTATIONS = ("adapters/dynamodb_",)

# (module, enclosing function): why this write needs no check. Each only deletes.
DELETES = {
    ("core/rights/erasure.py", "_delete"): "the erasure's own deletes",
    ("core/night/consolidation.py", "_decay"): "a decay removes a stale memory, it stores nothing",
    ("core/rights/commands.py", "forget"): "the person's own forget removes one of their memories",
    ("core/rights/commands.py", "_forget_read"): "a forget-all's job removes each of the person's memories",
}


def checked_methods() -> set[str]:
    """The write methods of the stores that take the person's check."""
    names = set()
    for store in (ports.MemoryStore, ports.MessageStore):
        for name, method in inspect.getmembers(store, inspect.isfunction):
            if "check" in inspect.signature(method).parameters:
                names.add(name)
    return names


def writer_calls() -> list[tuple[str, str, ast.Call, str]]:
    """(module, enclosing function, call, the function's source) for every call of a checked method."""
    methods = checked_methods()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith(IMPLEMENTATIONS):
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in methods
                    and _on_a_store(node.func.value)
                ):
                    found.append((module, function.name, node, ast.get_source_segment(source, function) or ""))
    # A call inside a nested function is also seen from its enclosing one: keep the innermost.
    innermost: dict[int, tuple[str, str, ast.Call, str]] = {}
    for entry in found:
        current = innermost.get(id(entry[2]))
        if current is None or len(entry[3]) < len(current[3]):
            innermost[id(entry[2])] = entry
    return list(innermost.values())


def _on_a_store(receiver: ast.expr) -> bool:
    text = ast.unparse(receiver)
    return any(word in text for word in ("memories", "memory_store", "messages", "message_store"))


def test_the_writers_are_found_and_the_channel_history_writer_is_among_them():
    assert checked_methods() >= {"apply", "add_once", "put"}
    places = {(module, function) for module, function, _, _ in writer_calls()}
    assert ("core/turn/conversation.py", "_fetch_history") in places
    assert ("core/turn/hearing.py", "hear") in places and ("core/rights/importing.py", "_add") in places
    assert set(DELETES) <= places, set(DELETES) - places  # no stale exception


def test_every_writer_passes_the_persons_check_or_only_deletes():
    unchecked = []
    for module, function, call, body in writer_calls():
        if any(k.arg == "check" for k in call.keywords):
            continue
        if (module, function) in DELETES and "Action.DELETE" in body:
            continue
        unchecked.append(f"{module}:{call.lineno} in {function}: {ast.unparse(call)[:80]}")
    assert unchecked == []
