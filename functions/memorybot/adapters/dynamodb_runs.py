"""``ports.RunStore`` on the nightly_runs table.

Three kinds of item share the table (``run_key``):
- ``counter``: the last run id handed out;
- ``day#<YYYY-MM-DD>``: the claim of one JST day (its run id);
- ``run#<id>#<step>``: a step's mark (``speaker#<owner key>``, ``review``): its result as
  JSON, written once (the first stands), so each step is idempotent on (run id, speaker);
- ``run#<id>``: the run itself (day label, times, diary, JSON summary, rolled-back
  state, ``worked_until`` while a worker holds the unfinished run, and while a rollback
  is under way its lease: owner and expiry).

A claim writes all three in one transaction, conditioned on the day being unclaimed
and the counter unchanged since read: a day is claimed once, and ids increase with
no gaps.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.domain import NIGHTLY_MAX_DURATION, LedgerEntry, NightlyRun, iso, parse_iso
from ..core.ports import RollbackClaim
from .dynamodb import ledger_item

CLAIM_ATTEMPTS = 5  # another claim for a different day moved the counter: read it again
COUNTER_KEY = "counter"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(int(value))}


def _run_key(run_id: int) -> dict[str, dict[str, str]]:
    return {"run_key": _s(f"run#{int(run_id)}")}


def _mark_key(run_id: int, name: str) -> dict[str, dict[str, str]]:
    return {"run_key": _s(f"run#{int(run_id)}#{name}")}


def _day_key(day_label: str) -> dict[str, dict[str, str]]:
    return {"run_key": _s(f"day#{day_label}")}


def _code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def run_from_item(item: dict[str, Any]) -> NightlyRun:
    finished = item.get("finished_at", {}).get("S")
    worked_until = item.get("worked_until", {}).get("S")
    rolled_back_at = item.get("rolled_back_at", {}).get("S")
    return NightlyRun(
        run_id=int(item["run_id"]["N"]),
        day_label=item["day_label"]["S"],
        started_at=parse_iso(item["started_at"]["S"]),
        finished_at=parse_iso(finished) if finished else None,
        diary=item.get("diary", {}).get("S", ""),
        summary=json.loads(item.get("summary", {}).get("S", "{}")),
        rolled_back=item.get("rolled_back", {}).get("BOOL", False),
        rolled_back_at=parse_iso(rolled_back_at) if rolled_back_at else None,
        rollback_counts=json.loads(item.get("rollback_counts", {}).get("S", "{}")),
        worked_until=parse_iso(worked_until) if worked_until else None,
    )


class DynamoRunStore:
    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._table = settings.table(tables.NIGHTLY_RUNS)
        self._log = settings.table(tables.MEMORY_LOG)  # a rollback's own ledger row commits with its mark

    # -- the runs

    def claim(self, day_label: str, started_at: datetime, hold: timedelta = NIGHTLY_MAX_DURATION) -> NightlyRun | None:
        until = started_at + hold
        for _ in range(CLAIM_ATTEMPTS):
            day = self._get(_day_key(day_label))
            if day is not None:
                return self._take_over(int(day["run_id"]["N"]), started_at, until)
            last = self._last_run_id()
            run = NightlyRun(last + 1, day_label, started_at, worked_until=until)
            counter_update = {
                "Update": {
                    "TableName": self._table,
                    "Key": {"run_key": _s(COUNTER_KEY)},
                    "UpdateExpression": "SET last_run_id = :next",
                    # The first run creates the counter; later ones move it on from what was read.
                    "ConditionExpression": "attribute_not_exists(last_run_id) OR last_run_id = :last",
                    "ExpressionAttributeValues": {":next": _n(run.run_id), ":last": _n(last)},
                }
            }
            try:
                self._client.transact_write_items(
                    TransactItems=[
                        self._put_new({**_day_key(day_label), "run_id": _n(run.run_id)}),
                        counter_update,
                        self._put_new(
                            {
                                **_run_key(run.run_id),
                                "run_id": _n(run.run_id),
                                "day_label": _s(day_label),
                                "started_at": _s(iso(started_at)),
                                "worked_until": _s(iso(until)),
                                "rolled_back": {"BOOL": False},
                            }
                        ),
                    ],
                    # botocore may resend after a lost answer: the same token makes that a no-op
                    # instead of a "day already claimed" that would orphan this run.
                    ClientRequestToken=secrets.token_hex(16),
                )
                return run
            except ClientError as error:
                if _code(error) in ("TransactionCanceledException", "TransactionConflictException"):
                    continue  # the day was claimed meanwhile (checked at the top) or the counter moved on
                if self._claimed_by(run):
                    return run
                raise
            except Exception:
                # No answer (a timeout, a dropped connection): the claim may have committed.
                # If it did, the run is ours; otherwise every retry would find the day taken.
                if self._claimed_by(run):
                    return run
                raise
        raise RuntimeError("could not claim the nightly day: the run counter kept moving")

    def _claimed_by(self, run: NightlyRun) -> bool:
        """Whether the claim of ``run`` committed (its day names it, with this worker's start time)."""
        day = self._get(_day_key(run.day_label))
        stored = self._get(_run_key(run.run_id))
        return (
            day is not None
            and int(day["run_id"]["N"]) == run.run_id
            and stored is not None
            and stored["started_at"]["S"] == iso(run.started_at)
        )

    def _take_over(self, run_id: int, now: datetime, until: datetime) -> NightlyRun | None:
        """The day's unfinished run whose worker is gone, now held until ``until``; else None."""
        run = self.get(run_id)
        if run is None or run.finished_at or run.rolled_back or run.in_progress(now):
            return None
        seen = (
            ("worked_until = :seen", {":seen": _s(iso(run.worked_until))})
            if run.worked_until
            else ("attribute_not_exists(worked_until)", {})
        )
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_run_key(run_id),
                UpdateExpression="SET worked_until = :until",
                # Exactly one of several retries takes it over: the state read must still hold.
                ConditionExpression=f"attribute_not_exists(finished_at) AND rolled_back = :false AND {seen[0]}",
                ExpressionAttributeValues={":until": _s(iso(until)), ":false": {"BOOL": False}, **seen[1]},
            )
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            return None
        return replace(run, worked_until=until)

    def release(self, run_id: int) -> None:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_run_key(run_id),
                UpdateExpression="REMOVE worked_until",
                ConditionExpression="attribute_exists(run_key) AND attribute_not_exists(finished_at)",
            )
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise

    def finish(self, run: NightlyRun) -> None:
        values = {
            ":diary": _s(run.diary),
            ":summary": _s(json.dumps(run.summary, ensure_ascii=False, sort_keys=True)),
        }
        expression = "SET diary = :diary, summary = :summary"
        if run.finished_at is not None:
            values[":finished"] = _s(iso(run.finished_at))
            expression += ", finished_at = :finished REMOVE worked_until"
        self._client.update_item(
            TableName=self._table,
            Key=_run_key(run.run_id),
            UpdateExpression=expression,
            ConditionExpression="attribute_exists(run_key)",
            ExpressionAttributeValues=values,
        )

    def step_mark(self, run_id: int, name: str) -> dict | None:
        item = self._get(_mark_key(run_id, name))
        return json.loads(item["result"]["S"]) if item else None

    def mark_step(self, run_id: int, name: str, result: dict) -> dict:
        try:
            self._client.put_item(
                TableName=self._table,
                Item={**_mark_key(run_id, name), "result": _s(json.dumps(result, ensure_ascii=False, sort_keys=True))},
                ConditionExpression="attribute_not_exists(run_key)",
            )
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            # Marked already (an earlier attempt, or this one's answer lost): the first mark stands.
            return self.step_mark(run_id, name) or result
        return json.loads(json.dumps(result))

    def get(self, run_id: int) -> NightlyRun | None:
        item = self._get(_run_key(run_id))
        return run_from_item(item) if item else None

    def latest(self) -> NightlyRun | None:
        last = self._last_run_id()
        return self.get(last) if last else None

    # -- the rollback lease

    def claim_rollback(self, run_id: int, owner: str, now: datetime, lease: timedelta) -> RollbackClaim:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_run_key(run_id),
                UpdateExpression="SET lease_owner = :owner, lease_until = :until",
                ConditionExpression=(
                    "attribute_exists(run_key) AND rolled_back = :false"
                    " AND (attribute_not_exists(lease_until) OR lease_until < :now OR lease_owner = :owner)"
                ),
                ExpressionAttributeValues={
                    ":owner": _s(owner),
                    ":until": _s(iso(now + lease)),
                    ":now": _s(iso(now)),
                    ":false": {"BOOL": False},
                },
            )
            return RollbackClaim.CLAIMED
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
        run = self.get(run_id)
        if run is None:
            return RollbackClaim.MISSING
        return RollbackClaim.DONE if run.rolled_back else RollbackClaim.BUSY

    def mark_rolled_back(
        self, run_id: int, owner: str, entry: LedgerEntry | None = None, counts: dict | None = None
    ) -> bool:
        if entry is None:
            return self._if_owner(
                run_id, owner, "SET rolled_back = :true REMOVE lease_owner, lease_until", {":true": {"BOOL": True}}
            )
        mark = {
            "Update": {
                "TableName": self._table,
                "Key": _run_key(run_id),
                "UpdateExpression": (
                    "SET rolled_back = :true, rolled_back_at = :at, rollback_counts = :counts "
                    "REMOVE lease_owner, lease_until"
                ),
                "ConditionExpression": "lease_owner = :owner AND rolled_back = :false",
                "ExpressionAttributeValues": {
                    ":true": {"BOOL": True},
                    ":false": {"BOOL": False},
                    ":owner": _s(owner),
                    ":at": _s(iso(entry.at)),
                    ":counts": _s(json.dumps(counts or {}, sort_keys=True)),
                },
            }
        }
        row = {
            "Put": {
                "TableName": self._log,
                "Item": ledger_item(entry),
                "ConditionExpression": "attribute_not_exists(entry_key)",
            }
        }
        try:
            # The same token on botocore's own retries: a lost answer is not a second mark.
            self._client.transact_write_items(TransactItems=[mark, row], ClientRequestToken=secrets.token_hex(16))
            return True
        except ClientError as error:
            if _code(error) != "TransactionCanceledException":
                raise
            run = self.get(run_id)  # marked by this very request (an answer lost, then retried)?
            return bool(run and run.rolled_back and run.rolled_back_at == entry.at)

    def release_rollback(self, run_id: int, owner: str) -> None:
        self._if_owner(run_id, owner, "REMOVE lease_owner, lease_until", {})

    # -- helpers

    def _if_owner(self, run_id: int, owner: str, expression: str, values: dict) -> bool:
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_run_key(run_id),
                UpdateExpression=expression,
                ConditionExpression="lease_owner = :owner AND rolled_back = :false",
                ExpressionAttributeValues={**values, ":owner": _s(owner), ":false": {"BOOL": False}},
            )
            return True
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise
            return False

    def _put_new(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"Put": {"TableName": self._table, "Item": item, "ConditionExpression": "attribute_not_exists(run_key)"}}

    def _get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        return self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")

    def _last_run_id(self) -> int:
        item = self._get({"run_key": _s(COUNTER_KEY)})
        return int(item["last_run_id"]["N"]) if item else 0
