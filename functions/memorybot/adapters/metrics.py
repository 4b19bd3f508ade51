"""The ``Metrics`` port over Powertools Metrics: CloudWatch's embedded metric format (EMF), one
JSON line per dimension set on stdout, which CloudWatch Logs turns into metrics (the local
stack prints the same lines).

What the process adds is kept in memory (counts summed, timings as their values) and written
out by ``flush`` when an invocation ends. Powertools is imported by the first flush that has
something to write, never on import: the interactions function's cold start stays as it was.

Dimensions: ``service`` (Powertools' own), ``function`` (``MEMORYBOT_FUNCTION``, set per
function by the stack: its name in ``infra/function_specs.py``; ``local`` in the local stack),
and for model calls ``purpose`` and ``model``. Nothing else, ever: no person, server or channel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings

# CloudWatch takes at most 100 values of one metric in one line, and Powertools publishes a set by
# itself (to stdout) when a metric reaches 100: rounds of 99 keep every line this module's.
EMF_MAX_VALUES = 99
_SUMMED_UNITS = frozenset({"Count", "None"})


class EmfMetrics:
    """Thread-safe: model calls add from the extraction's threads while the handler's thread flushes."""

    def __init__(
        self, namespace: str, service: str, function: str, *, write: Callable[[str], None] | None = None
    ) -> None:
        self.namespace = namespace
        self.service = service
        self.function = function
        self._write = write
        self._lock = threading.Lock()
        # (purpose, model) -> name -> (unit, values); counts are kept as one running sum.
        self._pending: dict[tuple[str, str], dict[str, tuple[str, list[float]]]] = {}

    def add(self, name: str, value: float = 1.0, *, unit: str = "Count", purpose: str = "", model: str = "") -> None:
        with self._lock:
            metrics = self._pending.setdefault((purpose, model), {})
            kept_unit, values = metrics.setdefault(name, (unit, []))
            if kept_unit in _SUMMED_UNITS and values:
                values[0] += value
            else:
                values.append(float(value))

    def pending(self) -> dict[tuple[str, str], dict[str, tuple[str, list[float]]]]:
        """What a flush would write now (a copy)."""
        with self._lock:
            return {dims: {n: (u, list(v)) for n, (u, v) in m.items()} for dims, m in self._pending.items()}

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        from aws_lambda_powertools.metrics import EphemeralMetrics  # the first flush pays for it

        for (purpose, model), metrics in pending.items():
            rounds = max(-(-len(values) // EMF_MAX_VALUES) for _, values in metrics.values())
            for start in range(0, rounds * EMF_MAX_VALUES, EMF_MAX_VALUES):
                emf = EphemeralMetrics(namespace=self.namespace, service=self.service)
                emf.add_dimension("function", self.function)
                if purpose:
                    emf.add_dimension("purpose", purpose)
                if model:
                    emf.add_dimension("model", model)
                for name, (unit, values) in metrics.items():
                    for value in values[start : start + EMF_MAX_VALUES]:
                        emf.add_metric(name=name, unit=unit, value=value)
                if self._write is None:
                    emf.flush_metrics()
                else:
                    import json

                    self._write(json.dumps(emf.serialize_metric_set(), separators=(",", ":")))
                    emf.clear_metrics()


@cache
def process_metrics(namespace: str, service: str, function: str) -> EmfMetrics:
    """The process's one buffer: every adapter and handler of the process adds to it."""
    return EmfMetrics(namespace, service, function)


def metrics_for(settings: Settings) -> EmfMetrics:
    return process_metrics(settings.metrics_namespace, settings.service_name, settings.function_name)
