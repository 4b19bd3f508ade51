"""The people table (``tables.PEOPLE``): one record per person (``person.Person``). The condition
every writer of a person's data puts in its own transaction is ``person_check_item``, below.

The record's attributes: ``paused_at`` (only while paused), ``resumed_at``, ``noticed`` (a string
set of scopes), ``erased_at``, and per scope ``forgot_all_at:<scope>`` (when the last forget-all
there began) and ``forgot_all_done:<scope>`` (when its deletion job finished, or ``running:<job>``
while it runs) (flat attributes, so that one stamp is one SET whatever else the item holds).
Times are ``domain.iso`` strings, so the conditions compare them as text; ``running:`` sorts after
every time, so a running job's marker is never "before" anything.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.record.person import Basis, Person, PersonCheck
from ..core.record.terms import iso, parse_iso
from .dynamodb_items import (
    REASON_CONDITION_FAILED,
    Item,
    cancellation_code,
    conditional_write,
    get_item,
    optional_time,
    s,
    transact_or_find_committed,
)

if TYPE_CHECKING:
    from ..core.record.changes import LedgerEntry

# ---- the person's check (the people table), in the transaction of every write of their data ----

FORGOT_ALL_PREFIX = "forgot_all_at:"
RECEIPTS_OFF = "receipts_off"  # present only while the person has turned receipts off (default on)
FORGOT_ALL_DONE_PREFIX = "forgot_all_done:"
RUNNING = "running:"  # the done marker's value while the job runs: "running:<its job id>"


def forgot_all_attribute(scope: str) -> str:
    return f"{FORGOT_ALL_PREFIX}{scope}"


def forgot_all_done_attribute(scope: str) -> str:
    return f"{FORGOT_ALL_DONE_PREFIX}{scope}"


def person_key(user_id: str) -> Item:
    return {"user_id": s(user_id)}


def person_check_item(table: str, check: PersonCheck) -> Item:
    """The ConditionCheck of a transaction that writes the person's data: ``PersonCheck.allows``
    as a condition expression (an absent record allows everything)."""
    names = {"#erased": "erased_at"}
    parts = ["(attribute_not_exists(#erased) OR #erased < :since)"]
    forgot_before = "(attribute_not_exists(#forgot) OR #forgot < :since)"
    if check.basis is Basis.LEARN:
        names |= {"#paused": "paused_at", "#resumed": "resumed_at", "#forgot": forgot_all_attribute(check.scope)}
        parts += ["attribute_not_exists(#paused)", "(attribute_not_exists(#resumed) OR #resumed < :since)"]
        parts.append(forgot_before)
    elif check.basis is Basis.IMPORT:
        names["#forgot"] = forgot_all_attribute(check.scope)
        parts.append(forgot_before)
    elif check.basis is Basis.RESTORE:
        # A running job's marker ("running:...") sorts after every time: never before ``since``.
        names |= _forget_all_names(check.scope)
        parts.append(
            "(attribute_not_exists(#forgot) OR (#forgot < :since AND (attribute_not_exists(#done) OR #done < :since)))"
        )
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": person_key(check.user_id),
            "ConditionExpression": " AND ".join(parts),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":since": s(iso(check.since))},
        }
    }


def _forget_all_names(scope: str) -> dict[str, str]:
    return {"#forgot": forgot_all_attribute(scope), "#done": forgot_all_done_attribute(scope)}


def person_from_item(user_id: str, item: Item | None) -> Person:
    if not item:
        return Person(user_id)
    forgot = tuple(
        sorted(
            (name.removeprefix(FORGOT_ALL_PREFIX), t)
            for name in item
            if name.startswith(FORGOT_ALL_PREFIX) and (t := optional_time(item, name)) is not None
        )
    )
    done_marks = {
        name.removeprefix(FORGOT_ALL_DONE_PREFIX): item[name].get("S", "")
        for name in item
        if name.startswith(FORGOT_ALL_DONE_PREFIX)
    }
    running = frozenset(scope for scope, mark in done_marks.items() if mark.startswith(RUNNING))
    done = tuple(
        sorted((scope, parse_iso(mark)) for scope, mark in done_marks.items() if mark and scope not in running)
    )
    return Person(
        user_id,
        paused_at=optional_time(item, "paused_at"),
        resumed_at=optional_time(item, "resumed_at"),
        noticed=frozenset(item.get("noticed", {}).get("SS", [])),
        erased_at=optional_time(item, "erased_at"),
        forgot_all_at=forgot,
        forgot_all_done=done,
        forgetting=running,
        receipts=RECEIPTS_OFF not in item,
    )


class DynamoPeopleStore:
    """``ports.PeopleStore`` on the people table (pause and resume write their memory_log row too)."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._table = settings.table(tables.PEOPLE)
        self._log = settings.table(tables.MEMORY_LOG)

    def get(self, user_id: str) -> Person:
        return person_from_item(user_id, get_item(self._client, self._table, person_key(user_id)))

    def pause(self, user_id: str, entry: LedgerEntry) -> bool:
        return self._switch(
            user_id,
            entry,
            UpdateExpression="SET paused_at = :at",
            ConditionExpression="attribute_not_exists(paused_at)",
        )

    def resume(self, user_id: str, entry: LedgerEntry) -> bool:
        return self._switch(
            user_id,
            entry,
            UpdateExpression="SET resumed_at = :at REMOVE paused_at",
            ConditionExpression="attribute_exists(paused_at)",
        )

    def _switch(self, user_id: str, entry: LedgerEntry, **update: str) -> bool:
        """The switch and its ledger row in one transaction; False when the switch's condition failed."""
        from .dynamodb_ledger import ledger_entry_key, ledger_item  # on first use: a /chat writes no ledger row

        transaction = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": person_key(user_id),
                    "ExpressionAttributeValues": {":at": s(iso(entry.at))},
                    **update,
                }
            },
            {
                "Put": {
                    "TableName": self._log,
                    "Item": ledger_item(entry),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            },
        ]
        key = {"owner": s(entry.owner.key), "entry_key": s(ledger_entry_key(entry))}
        try:
            transact_or_find_committed(
                self._client,
                transaction,
                refused=lambda error: cancellation_code(error, 0) == REASON_CONDITION_FAILED,
                committed=lambda: get_item(self._client, self._log, key) is not None,
            )
        except ClientError as error:
            if cancellation_code(error, 0) == REASON_CONDITION_FAILED:
                return False
            raise
        return True

    def claim_notice(self, user_id: str, scope: str, check: PersonCheck | None = None) -> bool:
        condition: dict[str, Any] = {
            "ConditionExpression": "NOT contains(noticed, :scope)",
            "ExpressionAttributeValues": {":scopes": {"SS": [scope]}, ":scope": s(scope)},
        }
        if check is not None:  # and the person's record allows it (no erasure since the turn began)
            allowed = person_check_item(self._table, check)["ConditionCheck"]
            condition = {
                "ConditionExpression": f"{condition['ConditionExpression']} AND {allowed['ConditionExpression']}",
                "ExpressionAttributeNames": allowed["ExpressionAttributeNames"],
                "ExpressionAttributeValues": condition["ExpressionAttributeValues"]
                | allowed["ExpressionAttributeValues"],
            }
        return conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=person_key(user_id),
            UpdateExpression="ADD noticed :scopes",
            **condition,
        )

    def release_notice(self, user_id: str, scope: str) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=person_key(user_id),
            UpdateExpression="DELETE noticed :scopes",
            ExpressionAttributeValues={":scopes": {"SS": [scope]}},
        )

    def start_forget_all(self, user_id: str, scope: str, at: datetime, job_id: str, stale_before: datetime) -> bool:
        # The job's own id is admitted: a retry of this very call whose first answer was lost.
        return conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=person_key(user_id),
            UpdateExpression="SET #forgot = :at, #done = :job",
            ConditionExpression=(
                "attribute_not_exists(#done) OR NOT begins_with(#done, :running) OR #done = :job OR #forgot < :stale"
            ),
            ExpressionAttributeNames=_forget_all_names(scope),
            ExpressionAttributeValues={
                ":at": s(iso(at)),
                ":job": s(f"{RUNNING}{job_id}"),
                ":running": s(RUNNING),
                ":stale": s(iso(stale_before)),
            },
        )

    def finish_forget_all(self, user_id: str, scope: str, started: datetime, at: datetime) -> bool:
        return conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=person_key(user_id),
            UpdateExpression="SET #done = :at",
            ConditionExpression="#forgot = :started",
            ExpressionAttributeNames=_forget_all_names(scope),
            ExpressionAttributeValues={":at": s(iso(at)), ":started": s(iso(started))},
        )

    def set_receipts(self, user_id: str, enabled: bool) -> bool:
        # A preference, not a memory: no ledger row. The condition makes a repeat say "already so".
        return conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=person_key(user_id),
            UpdateExpression=f"REMOVE {RECEIPTS_OFF}" if enabled else f"SET {RECEIPTS_OFF} = :on",
            ConditionExpression=f"attribute_exists({RECEIPTS_OFF})"
            if enabled
            else f"attribute_not_exists({RECEIPTS_OFF})",
            **({} if enabled else {"ExpressionAttributeValues": {":on": s("1")}}),
        )

    def erased(self, user_id: str, at) -> None:
        self._client.put_item(TableName=self._table, Item={**person_key(user_id), "erased_at": s(iso(at))})
