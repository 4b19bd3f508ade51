"""What each model request costs, measured where the request is made: one ``ModelMeter`` per
process counts, per purpose and model id, the requests that answered, the provider's own token
counts (Bedrock Converse ``usage.inputTokens``/``outputTokens``, OpenAI-compatible
``usage.prompt_tokens``/``completion_tokens``), the latency (the whole call, its retries
included: what the turn waited), an estimated cost (tokens x the model's price in the settings),
and the throttled and repeated attempts the retry policy (``retry.py``) reports for the call in
progress on its thread. Each call is also an X-Ray subsegment when tracing is on (``tracing.py``).

Lazy and light: no Powertools, no AWS; the ``Metrics`` port takes the numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ..config import estimated_cost, price_in
from ..core.record import metrics as names
from ..core.record.metrics import NO_METRICS
from ..core.record.ports import Metrics
from . import tracing

if TYPE_CHECKING:
    from ..config import Settings

Price = tuple[float, float]  # USD per million input and output tokens (config.DEFAULT_MODEL_PRICES)


@dataclass
class MeteredCall:
    """One model request in progress: the adapter sets the usage it read from the answer."""

    purpose: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0

    def usage(self, input_tokens: object, output_tokens: object) -> None:
        self.input_tokens = _count(input_tokens)
        self.output_tokens = _count(output_tokens)


def _count(value: object) -> int:
    # A provider's field that is missing or not a whole number counts nothing (never a crash).
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class ModelMeter:
    def __init__(self, metrics: Metrics = NO_METRICS, prices: Mapping[str, Price] | None = None) -> None:
        self.metrics = metrics
        self.prices = dict(prices or {})
        self._current = threading.local()

    @contextmanager
    def call(self, purpose: str, model: str) -> Iterator[MeteredCall]:
        """Measures the request made inside; counted only when it answered (a failed call is
        seen in its throttles, retries and the functions' errors)."""
        metered = MeteredCall(purpose, model)
        outer = getattr(self._current, "call", None)
        self._current.call = metered
        started = time.perf_counter()
        try:
            with tracing.subsegment(f"## model {purpose or 'call'}", purpose=purpose, model=model):
                yield metered
        finally:
            self._current.call = outer
        self.answered(metered, time.perf_counter() - started)

    def answered(self, call: MeteredCall, seconds: float) -> None:
        labels = {"purpose": call.purpose, "model": call.model}
        add = self.metrics.add
        add(names.MODEL_REQUESTS, 1, **labels)
        add(names.MODEL_LATENCY, round(seconds * 1000, 3), unit="Milliseconds", **labels)
        add(names.INPUT_TOKENS, call.input_tokens, **labels)
        add(names.OUTPUT_TOKENS, call.output_tokens, **labels)
        price = self.price_of(call.model)
        if price is not None:
            cost = estimated_cost(price, call.input_tokens, call.output_tokens)
            add(names.ESTIMATED_COST, cost, unit="None", **labels)

    def price_of(self, model: str) -> Price | None:
        return price_in(self.prices, model)

    def throttled(self) -> None:
        """The provider throttled an attempt of the call in progress on this thread."""
        self._attempt(names.MODEL_THROTTLES)

    def retried(self) -> None:
        """The call in progress on this thread makes another attempt."""
        self._attempt(names.MODEL_RETRIES)

    def _attempt(self, name: str) -> None:
        call = getattr(self._current, "call", None)
        labels = {"purpose": call.purpose, "model": call.model} if call is not None else {}
        self.metrics.add(name, 1, **labels)


NO_METER = ModelMeter()


@cache
def _process_meter(namespace: str, service: str, function: str, prices: tuple) -> ModelMeter:
    from .metrics import process_metrics

    return ModelMeter(process_metrics(namespace, service, function), dict(prices))


def meter_for(settings: Settings) -> ModelMeter:
    """The process's meter over the process's metrics (adapters/metrics.py)."""
    return _process_meter(
        settings.metrics_namespace,
        settings.service_name,
        settings.function_name,
        tuple(sorted(settings.model_prices.items())),
    )
