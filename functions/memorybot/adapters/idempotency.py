"""``ports.Idempotency`` on the dedup table: Powertools' idempotency, the one recipe for the
workers (a job once per interaction id) and the interactions function's once-only answers
(``/memory show``, export, forget-all). Records expire after ``DEDUP_TTL_SECONDS``.

A record's key is ``memorybot.<name>#<hash of the key>``: the same for a given name and key
whichever caller asks, so a retry anywhere finds the first attempt's record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tables import DEDUP, DEDUP_TTL_SECONDS


class DynamoIdempotency:
    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name
        self._stores: dict[str, Any] = {}  # one Powertools persistence layer per name: it keeps per-function state

    def _store(self, name: str) -> Any:
        if name not in self._stores:
            from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

            self._stores[name] = DynamoDBPersistenceLayer(
                table_name=self._table,
                key_attr=DEDUP.partition.name,
                expiry_attr=DEDUP.ttl_attribute or "expiration",
                boto3_client=self._client,
            )
        return self._stores[name]

    def run(self, name: str, key: str, work: Callable[[], dict[str, Any]], *, invocation: Any = None) -> dict[str, Any]:
        """``work()``'s answer once per key; a repeat gets the stored answer. Raises Powertools'
        ``IdempotencyAlreadyInProgressError`` while another copy is still running it."""
        from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

        config = IdempotencyConfig(
            event_key_jmespath="key", raise_on_no_idempotency_key=True, expires_after_seconds=DEDUP_TTL_SECONDS
        )
        if invocation is not None:  # an in-progress record lapses with the invocation
            config.register_lambda_context(invocation)

        def guarded(job: dict[str, str]) -> dict[str, Any]:
            return work()

        return idempotent_function(
            data_keyword_argument="job",
            persistence_store=self._store(name),
            config=config,
            key_prefix=f"memorybot.{name}",
        )(guarded)(job={"key": key})

    def once(
        self, name: str, key: str, work: Callable[[], dict[str, Any]], *, invocation: Any = None
    ) -> dict[str, Any] | None:
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

        try:
            return self.run(name, key, work, invocation=invocation)
        except IdempotencyAlreadyInProgressError:
            return None
