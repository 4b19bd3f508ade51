"""The ports say what they are: no Protocol wider than ten methods, the memory store as roles
that each use case names, and the store's two implementations (DynamoDB, the unit tests' fake)
keeping every role's signatures."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Protocol

import pytest

import memorybot
from fakes import FakeMemoryStore
from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
from memorybot.core.record import ports

MAX_PROTOCOL_METHODS = 10
ROLES = (
    ports.ProfileReader,
    ports.ReadLog,
    ports.MemoryWriter,
    ports.ImportWriter,
    ports.RememberedMessages,
    ports.ReviewQueue,
    ports.VectorWriter,
    ports.VectorIndex,
    ports.Ledger,
    ports.History,
    ports.RunLedger,
    ports.ForgottenSources,
    ports.Erasing,
    ports.OvernightNotes,
)


def _modules():
    for info in pkgutil.walk_packages(memorybot.__path__, "memorybot."):
        yield importlib.import_module(info.name)


def _protocols():
    seen = {}
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if getattr(cls, "_is_protocol", False) and cls.__module__.startswith("memorybot."):
                seen[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return seen


def _members(cls) -> set[str]:
    """What a class offers of its own and its bases' (methods and properties), as a Protocol counts them."""
    names = set()
    for base in cls.__mro__:
        if base in (object, Protocol) or base.__module__ in ("typing", "typing_extensions", "abc"):
            continue
        names |= {
            name
            for name, value in vars(base).items()
            if not name.startswith("_") and (callable(value) or isinstance(value, property))
        }
    return names


def test_no_protocol_is_wider_than_ten_methods():
    protocols = _protocols()
    assert len(protocols) > 20  # the walk found the ports, the composites and the handlers' dependencies
    wide = {name: len(_members(cls)) for name, cls in protocols.items() if len(_members(cls)) > MAX_PROTOCOL_METHODS}
    assert wide == {}


def test_the_memory_store_is_every_role_and_no_protocol():
    assert not getattr(ports.MemoryStore, "_is_protocol", False)
    assert all(role in ports.MemoryStore.__mro__ for role in ROLES)
    # Each of its methods is in exactly one role: the roles split it, they do not repeat it.
    owned = [name for role in ROLES for name in _members(role)]
    assert sorted(owned) == sorted(set(owned)) == sorted(_members(ports.MemoryStore))


@pytest.mark.parametrize("implementation", [DynamoMemoryStore, FakeMemoryStore], ids=["dynamodb", "fake"])
@pytest.mark.parametrize("role", ROLES, ids=[r.__name__ for r in ROLES])
def test_each_implementation_keeps_each_roles_signatures(implementation, role):
    assert ports.MemoryStore in implementation.__mro__
    for name in _members(role):
        port = inspect.signature(getattr(role, name))
        implemented = inspect.signature(getattr(implementation, name))
        assert implemented.parameters.keys() == port.parameters.keys(), f"{implementation.__name__}.{name}"
        for parameter in port.parameters.values():
            mine = implemented.parameters[parameter.name]
            assert (mine.kind, mine.default) == (parameter.kind, parameter.default), f"{implementation.__name__}.{name}"


def test_no_use_case_takes_the_whole_store():
    """Only the composition root wires ``MemoryStore``; each use case names its roles."""
    for module in _modules():
        if module.__name__ in ("memorybot.bootstrap", "memorybot.core.record.ports") or ".adapters." in module.__name__:
            continue
        for _, obj in inspect.getmembers(module, lambda o: inspect.isfunction(o) or inspect.isclass(o)):
            if getattr(obj, "__module__", "") != module.__name__:
                continue
            init = obj.__init__ if inspect.isclass(obj) else obj
            for parameter in inspect.signature(init).parameters.values():
                assert "MemoryStore" not in str(parameter.annotation), f"{module.__name__}.{obj.__qualname__}"
