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
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from .. import tables
from ..config import Settings
from ..core.record.changes import LedgerEntry, NightlyRun, RunSummary
from ..core.record.domain import NIGHTLY_MAX_DURATION, iso, parse_iso
from ..core.record.ports import M, RollbackClaim
from .dynamodb_items import (
    TRANSACTION_CANCELED,
    TRANSACTION_CONFLICT,
    Item,
    bool_of,
    conditional_write,
    error_code,
    flag,
    get_item,
    int_of,
    n,
    optional_time,
    s,
    str_of,
    transact,
    transact_or_find_committed,
)
from .dynamodb_ledger import ledger_item

CLAIM_ATTEMPTS = 5  # another claim for a different day moved the counter: read it again
COUNTER_KEY = "counter"


def _run_key(run_id: int) -> dict[str, dict[str, str]]:
    return {"run_key": s(f"run#{int(run_id)}")}


def _mark_key(run_id: int, name: str) -> dict[str, dict[str, str]]:
    return {"run_key": s(f"run#{int(run_id)}#{name}")}


def _day_key(day_label: str) -> dict[str, dict[str, str]]:
    return {"run_key": s(f"day#{day_label}")}


def _claim_refused(error: ClientError) -> bool:
    """The claim was turned down (the day was claimed meanwhile, or the counter moved on):
    nothing committed, and the next attempt reads the table again."""
    return error_code(error) in (TRANSACTION_CANCELED, TRANSACTION_CONFLICT)


def run_from_item(item: Item) -> NightlyRun:
    return NightlyRun(
        run_id=int_of(item["run_id"]),
        day_label=item["day_label"]["S"],
        started_at=parse_iso(item["started_at"]["S"]),
        finished_at=optional_time(item, "finished_at"),
        diary=str_of(item, "diary"),
        summary=RunSummary.saved(json.loads(str_of(item, "summary", "{}"))),
        rolled_back=bool_of(item, "rolled_back"),
        rolled_back_at=optional_time(item, "rolled_back_at"),
        rollback_counts=json.loads(str_of(item, "rollback_counts", "{}")),
        worked_until=optional_time(item, "worked_until"),
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
                return self._take_over(int_of(day["run_id"]), started_at, until)
            last = self._last_run_id()
            run = NightlyRun(last + 1, day_label, started_at, worked_until=until)
            counter_update = {
                "Update": {
                    "TableName": self._table,
                    "Key": {"run_key": s(COUNTER_KEY)},
                    "UpdateExpression": "SET last_run_id = :next",
                    # The first run creates the counter; later ones move it on from what was read.
                    "ConditionExpression": "attribute_not_exists(last_run_id) OR last_run_id = :last",
                    "ExpressionAttributeValues": {":next": n(run.run_id), ":last": n(last)},
                }
            }
            claim = [
                self._put_new({**_day_key(day_label), "run_id": n(run.run_id)}),
                counter_update,
                self._put_new(
                    {
                        **_run_key(run.run_id),
                        "run_id": n(run.run_id),
                        "day_label": s(day_label),
                        "started_at": s(iso(started_at)),
                        "worked_until": s(iso(until)),
                        "rolled_back": flag(False),
                    }
                ),
            ]
            try:
                # botocore may resend after a lost answer: the same token makes that a no-op
                # instead of a "day already claimed" that would orphan this run. Any other
                # failure, or no answer at all, may hide a commit: if it did commit, the run
                # is ours; otherwise every retry would find the day taken.
                transact_or_find_committed(
                    self._client, claim, refused=_claim_refused, committed=partial(self._claimed_by, run)
                )
                return run
            except ClientError as error:
                if _claim_refused(error):
                    continue  # the day was claimed meanwhile (checked at the top) or the counter moved on
                raise
        raise RuntimeError("could not claim the nightly day: the run counter kept moving")

    def _claimed_by(self, run: NightlyRun) -> bool:
        """Whether the claim of ``run`` committed (its day names it, with this worker's start time)."""
        day = self._get(_day_key(run.day_label))
        stored = self._get(_run_key(run.run_id))
        return (
            day is not None
            and int_of(day["run_id"]) == run.run_id
            and stored is not None
            and stored["started_at"]["S"] == iso(run.started_at)
        )

    def _take_over(self, run_id: int, now: datetime, until: datetime) -> NightlyRun | None:
        """The day's unfinished run whose worker is gone, now held until ``until``; else None."""
        run = self.get(run_id)
        if run is None or run.finished_at or run.rolled_back or run.in_progress(now):
            return None
        seen = (
            ("worked_until = :seen", {":seen": s(iso(run.worked_until))})
            if run.worked_until
            else ("attribute_not_exists(worked_until)", {})
        )
        taken = conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=_run_key(run_id),
            UpdateExpression="SET worked_until = :until",
            # Exactly one of several retries takes it over: the state read must still hold.
            ConditionExpression=f"attribute_not_exists(finished_at) AND rolled_back = :false AND {seen[0]}",
            ExpressionAttributeValues={":until": s(iso(until)), ":false": flag(False), **seen[1]},
        )
        return replace(run, worked_until=until) if taken else None

    def release(self, run_id: int) -> None:
        # A failed condition means no such run, or finished already: nothing to give back.
        conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=_run_key(run_id),
            UpdateExpression="REMOVE worked_until",
            ConditionExpression="attribute_exists(run_key) AND attribute_not_exists(finished_at)",
        )

    def finish(self, run: NightlyRun) -> None:
        values = {
            ":diary": s(run.diary),
            ":summary": s(json.dumps(run.summary.to_dict(), ensure_ascii=False, sort_keys=True)),
        }
        expression = "SET diary = :diary, summary = :summary"
        if run.finished_at is not None:
            values[":finished"] = s(iso(run.finished_at))
            expression += ", finished_at = :finished REMOVE worked_until"
        self._client.update_item(
            TableName=self._table,
            Key=_run_key(run.run_id),
            UpdateExpression=expression,
            ConditionExpression="attribute_exists(run_key)",
            ExpressionAttributeValues=values,
        )

    def step_mark(self, run_id: int, name: str, kind: type[M]) -> M | None:
        item = self._get(_mark_key(run_id, name))
        return kind.from_json(json.loads(item["result"]["S"])) if item else None

    def mark_step(self, run_id: int, name: str, mark: M) -> M:
        result = json.dumps(mark.to_json(), ensure_ascii=False, sort_keys=True)
        if not conditional_write(
            self._client.put_item,
            TableName=self._table,
            Item={**_mark_key(run_id, name), "result": s(result)},
            ConditionExpression="attribute_not_exists(run_key)",
        ):
            # Marked already (an earlier attempt, or this one's answer lost): the first mark stands.
            return self.step_mark(run_id, name, type(mark)) or mark
        return mark

    def get(self, run_id: int) -> NightlyRun | None:
        item = self._get(_run_key(run_id))
        return run_from_item(item) if item else None

    def latest(self) -> NightlyRun | None:
        last = self._last_run_id()
        return self.get(last) if last else None

    # -- the rollback lease

    def claim_rollback(self, run_id: int, owner: str, now: datetime, lease: timedelta) -> RollbackClaim:
        if conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=_run_key(run_id),
            UpdateExpression="SET lease_owner = :owner, lease_until = :until",
            ConditionExpression=(
                "attribute_exists(run_key) AND rolled_back = :false"
                " AND (attribute_not_exists(lease_until) OR lease_until < :now OR lease_owner = :owner)"
            ),
            ExpressionAttributeValues={
                ":owner": s(owner),
                ":until": s(iso(now + lease)),
                ":now": s(iso(now)),
                ":false": flag(False),
            },
        ):
            return RollbackClaim.CLAIMED
        # Not taken: say why.
        run = self.get(run_id)
        if run is None:
            return RollbackClaim.MISSING
        return RollbackClaim.DONE if run.rolled_back else RollbackClaim.BUSY

    def mark_rolled_back(
        self, run_id: int, owner: str, entry: LedgerEntry | None = None, counts: dict | None = None
    ) -> bool:
        if entry is None:
            return self._if_owner(
                run_id, owner, "SET rolled_back = :true REMOVE lease_owner, lease_until", {":true": flag(True)}
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
                    ":true": flag(True),
                    ":false": flag(False),
                    ":owner": s(owner),
                    ":at": s(iso(entry.at)),
                    ":counts": s(json.dumps(counts or {}, sort_keys=True)),
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
            # (A failure without an answer raises: the operator's retry finds the run marked, or not.)
            transact(self._client, [mark, row])
            return True
        except ClientError as error:
            if error_code(error) != TRANSACTION_CANCELED:
                raise
            run = self.get(run_id)  # marked by this very request (an answer lost, then retried)?
            return bool(run and run.rolled_back and run.rolled_back_at == entry.at)

    def release_rollback(self, run_id: int, owner: str) -> None:
        self._if_owner(run_id, owner, "REMOVE lease_owner, lease_until", {})

    # -- helpers

    def _if_owner(self, run_id: int, owner: str, expression: str, values: dict) -> bool:
        return conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key=_run_key(run_id),
            UpdateExpression=expression,
            ConditionExpression="lease_owner = :owner AND rolled_back = :false",
            ExpressionAttributeValues={**values, ":owner": s(owner), ":false": flag(False)},
        )

    def _put_new(self, item: Item) -> Item:
        return {"Put": {"TableName": self._table, "Item": item, "ConditionExpression": "attribute_not_exists(run_key)"}}

    def _get(self, key: Item) -> Item | None:
        return get_item(self._client, self._table, key)

    def _last_run_id(self) -> int:
        item = self._get({"run_key": s(COUNTER_KEY)})
        return int_of(item["last_run_id"]) if item else 0
