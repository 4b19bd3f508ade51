"""A module imported on first use, for the interactions function's cold start: the handler imports
what every answer needs, and each command's own modules load when that command first arrives.

A plain proxy rather than ``importlib.util.LazyLoader``: the first attribute read imports the
module through ``importlib.import_module`` (under the import lock, so threads answering at once, as
in the local stack, share one import), and the type checker sees the real module (each user names it
under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


def lazy(name: str) -> Any:
    return LazyModule(name)
