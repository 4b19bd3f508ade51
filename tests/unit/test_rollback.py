"""Rollback with fakes of the ports: every branch of the reverse replay, the lease, the endpoint."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from fakes import Clock, FakeMemoryStore, FakeRunStore, memory, owner
from memorybot.admin_api import ROLLBACK, BadRequest, json_object, rollback_answer, rollback_request
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import Action, Actor, Memory
from memorybot.core.record.ports import RollbackClaim
from memorybot.core.rights.rollback import ROLLBACK_LEASE, Outcome, Rollback


def handle(rollback, authorization, body, admin_secret):
    return ROLLBACK.answer(rollback, authorization, body, admin_secret)


def parse_request(body, *, base64_encoded=False):
    return rollback_request(json_object(body, ROLLBACK.fields, base64_encoded=base64_encoded))


T = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
SECRET = "s3cret-admin"


def finished(runs, run, at):
    done = dataclasses.replace(run, finished_at=at)
    runs.finish(done)
    return done


class World:
    """Run 1 (nightly, user a and a decayed record of user z) plus the means to change things after it."""

    def __init__(self) -> None:
        self.clock = Clock(T)
        self.memories = FakeMemoryStore(self.clock)
        self.runs = FakeRunStore()
        self.rollback = Rollback(self.memories, self.runs, clock=self.clock)
        self.memories.seed(
            memory("a", "upd00", "lives in Osaka", at=T - timedelta(days=3)),
            memory("a", "del00", "works at Acme", at=T - timedelta(days=3)),
            memory("z", "dec00", "had a cold", at=T - timedelta(days=40)),
        )
        self.run = self.runs.claim("2026-11-29", T)
        self.original = dict(self.memories.rows)
        rid = self.run.run_id
        self.memories.read_profile(owner("a"), actor=Actor.NIGHTLY, reason="nightly", limit=10, run_id=rid)
        self.added = self.nightly(Change(Action.ADD, None, memory("a", "add00", "plays go", at=T), "jev: add"))
        self.updated = self.nightly(
            Change(Action.UPDATE, self.get("a", "upd00"), self.rewrite(self.get("a", "upd00"), "lives in Kyoto"), "jev")
        )
        self.nightly(Change(Action.DELETE, self.get("a", "del00"), None, "jev verdict: delete"))
        self.nightly(Change(Action.DELETE, self.get("z", "dec00"), None, "nightly decay: jev review delete"))
        self.run = finished(self.runs, self.run, self.clock())

    def nightly(self, change: Change) -> Memory | None:
        self.memories.apply(change, actor=Actor.NIGHTLY, run_id=self.run.run_id)
        return change.after

    def later(self, change: Change, actor: Actor = Actor.EXTRACTION) -> None:
        self.memories.apply(change, actor=actor)

    def get(self, user_id: str, memory_id: str, scope: str = "global") -> Memory | None:
        return self.memories.get(owner(user_id, scope), memory_id)

    def rewrite(self, m: Memory, text: str) -> Memory:
        return dataclasses.replace(m, text=text, updated_at=self.clock())

    def rollback_rows(self):
        return [e for e in self.memories.ledger if e.action is Action.ROLLBACK]


# ---- every branch of the reverse replay -------------------------------------------


def test_an_untouched_run_is_undone_completely():
    w = World()
    result = w.rollback.run()
    assert result.outcome is Outcome.DONE and result.run_id == w.run.run_id
    assert sorted(result.reverted) == ["add00", "dec00", "del00", "upd00"] and result.skipped == []
    assert w.memories.rows == w.original  # the add gone, the update and both deletes undone
    assert w.runs.get(w.run.run_id).rolled_back


def test_each_revert_gets_a_rollback_row_by_nightly_with_the_run_id_and_swapped_states():
    w = World()
    w.rollback.run(w.run.run_id)
    rows = w.rollback_rows()
    assert len(rows) == 4
    assert all(r.actor is Actor.NIGHTLY and r.run_id == w.run.run_id for r in rows)
    by_id = {r.memory_ids[0]: r for r in rows}
    assert by_id["add00"].before == w.added and by_id["add00"].after is None
    assert by_id["upd00"].before == w.updated and by_id["upd00"].after == w.original[(owner("a"), "upd00")]
    assert by_id["del00"].before is None and by_id["del00"].after == w.original[(owner("a"), "del00")]
    assert by_id["dec00"].after == w.original[(owner("z"), "dec00")]


def test_rows_are_replayed_newest_first():
    w = World()
    w.rollback.run()
    assert [r.memory_ids[0] for r in w.rollback_rows()] == ["dec00", "del00", "upd00", "add00"]


def test_an_add_changed_after_the_run_is_not_deleted():
    w = World()
    w.later(Change(Action.UPDATE, w.added, w.rewrite(w.added, "plays go and chess"), "later extraction"))
    result = w.rollback.run()
    assert "add00" in result.skipped and "add00" not in result.reverted
    assert w.get("a", "add00").text == "plays go and chess"


def test_an_add_forgotten_after_the_run_stays_forgotten_and_is_skipped():
    w = World()
    w.later(Change(Action.DELETE, w.added, None, "user asked to forget"), actor=Actor.COMMAND)
    result = w.rollback.run()
    assert result.skipped == ["add00"] and w.get("a", "add00") is None


def test_an_update_changed_after_the_run_is_not_restored():
    w = World()
    w.later(Change(Action.UPDATE, w.updated, w.rewrite(w.updated, "lives in Nara"), "later extraction"))
    result = w.rollback.run()
    assert result.skipped == ["upd00"] and w.get("a", "upd00").text == "lives in Nara"
    assert sorted(result.reverted) == ["add00", "dec00", "del00"]


def test_an_update_forgotten_after_the_run_is_not_resurrected():
    w = World()
    w.later(Change(Action.DELETE, w.updated, None, "user asked to forget"), actor=Actor.COMMAND)
    result = w.rollback.run()
    assert result.skipped == ["upd00"] and w.get("a", "upd00") is None


def test_a_delete_whose_id_is_taken_again_is_not_reinserted():
    w = World()
    w.later(
        Change(Action.ADD, None, memory("a", "del00", "a new fact under the old id", at=T + timedelta(hours=1)), "add")
    )
    w.later(Change(Action.ADD, None, memory("z", "dec00", "z re-learned", at=T + timedelta(hours=1)), "add"))
    result = w.rollback.run()
    assert sorted(result.skipped) == ["dec00", "del00"]
    assert w.get("a", "del00").text == "a new fact under the old id" and w.get("z", "dec00").text == "z re-learned"


def test_a_record_touched_twice_by_the_run_is_walked_back_step_by_step():
    w = World()
    second = w.nightly(Change(Action.UPDATE, w.added, w.rewrite(w.added, "plays go weekly"), "jev"))
    assert second is not None
    result = w.rollback.run()
    assert result.reverted.count("add00") == 1 and result.skipped == []
    assert w.get("a", "add00") is None and w.memories.rows == w.original


def test_reads_are_not_replayed_and_other_runs_are_untouched():
    w = World()
    other = finished(w.runs, w.runs.claim("2026-11-30", T + timedelta(days=1)), w.clock())
    w.memories.apply(
        Change(Action.ADD, None, memory("b", "bbbbb", "b's fact", at=T), "jev: add"),
        actor=Actor.NIGHTLY,
        run_id=other.run_id,
    )
    result = w.rollback.run(w.run.run_id)
    assert result.run_id == w.run.run_id and w.get("b", "bbbbb") is not None
    assert not w.runs.get(other.run_id).rolled_back


# ---- which run, and the answers -------------------------------------------------------


def test_no_run_id_means_the_latest_run():
    w = World()
    latest = finished(w.runs, w.runs.claim("2026-11-30", T + timedelta(days=1)), w.clock())
    w.memories.apply(
        Change(Action.ADD, None, memory("b", "bbbbb", "b's fact", at=T), "jev: add"),
        actor=Actor.NIGHTLY,
        run_id=latest.run_id,
    )
    result = w.rollback.run()
    assert result.run_id == latest.run_id and result.reverted == ["bbbbb"]
    assert w.get("a", "add00") is not None  # the older run is left alone


def test_unknown_run_and_no_run_at_all_are_not_found():
    w = World()
    assert w.rollback.run(99).outcome is Outcome.NOT_FOUND
    assert rollback_answer(w.rollback.run(99))[0] == 404
    empty = Rollback(FakeMemoryStore(), FakeRunStore())
    assert rollback_answer(empty.run())[0] == 404
    assert rollback_answer(empty.run(dry_run=True))[0] == 404


def test_repeating_a_rollback_answers_409_already_rolled_back_and_changes_nothing():
    w = World()
    assert rollback_answer(w.rollback.run())[0] == 200
    ledger = list(w.memories.ledger)
    status, body = rollback_answer(w.rollback.run(w.run.run_id))
    assert (status, body["alreadyRolledBack"]) == (409, True)
    assert w.memories.ledger == ledger
    assert rollback_answer(w.rollback.run(w.run.run_id, dry_run=True))[0] == 409


def test_the_answer_carries_ids_only_never_memory_text():
    w = World()
    status, body = rollback_answer(w.rollback.run())
    assert status == 200 and set(body) == {"runId", "dryRun", "reverted", "skipped", "erased"}
    text = json.dumps(body)
    for m in list(w.original.values()) + [w.added, w.updated]:
        assert m.text not in text


# ---- dry run ------------------------------------------------------------------------------


def test_a_dry_run_previews_exactly_what_the_rollback_then_does_and_changes_nothing():
    w = World()
    w.later(Change(Action.UPDATE, w.updated, w.rewrite(w.updated, "lives in Nara"), "later extraction"))
    second = w.nightly(Change(Action.UPDATE, w.added, w.rewrite(w.added, "plays go weekly"), "jev"))
    assert second is not None
    rows, ledger = dict(w.memories.rows), list(w.memories.ledger)

    preview = w.rollback.run(dry_run=True)
    assert preview.outcome is Outcome.PREVIEW
    assert w.memories.rows == rows and w.memories.ledger == ledger
    assert not w.runs.get(w.run.run_id).rolled_back and w.runs.leases == {}
    status, body = rollback_answer(preview)
    assert status == 200 and body["dryRun"] is True

    done = w.rollback.run()
    assert (sorted(done.reverted), sorted(done.skipped)) == (sorted(preview.reverted), sorted(preview.skipped))
    assert preview.skipped == ["upd00"]


# ---- exactly once: the lease, interruption and retry ------------------------------------------


def test_an_interrupted_rollback_can_be_retried_and_finishes_without_reverting_twice():
    w = World()
    calls = {"n": 0}

    def die_on_the_third(change):
        calls["n"] += 1
        return calls["n"] == 3

    w.memories.fail_apply = die_on_the_third
    with pytest.raises(RuntimeError):
        w.rollback.run()
    assert len(w.rollback_rows()) == 2  # two reverts committed before the failure
    assert not w.runs.get(w.run.run_id).rolled_back and w.runs.leases == {}  # lease given back

    w.memories.fail_apply = lambda change: False
    result = w.rollback.run()
    assert result.outcome is Outcome.DONE
    assert sorted(result.reverted) == ["add00", "dec00", "del00", "upd00"] and result.skipped == []
    assert len(w.rollback_rows()) == 4  # one per original change: the rollback rows themselves were not reverted
    assert w.memories.rows == w.original and w.runs.get(w.run.run_id).rolled_back


def test_a_crashed_rollbacks_lease_expires_and_a_retry_then_finishes():
    w = World()
    now = w.clock()
    assert w.runs.claim_rollback(w.run.run_id, "crashed-owner", now, ROLLBACK_LEASE) is RollbackClaim.CLAIMED
    status, body = rollback_answer(w.rollback.run())
    assert (status, body.get("inProgress")) == (409, True)
    assert w.rollback_rows() == []

    w.clock.now = now + ROLLBACK_LEASE + timedelta(seconds=1)
    assert w.rollback.run().outcome is Outcome.DONE
    assert w.memories.rows == w.original


def test_a_second_rollback_while_the_first_is_applying_is_refused():
    w = World()
    answers = []

    def second_arrives(change):
        if not answers:
            answers.append(rollback_answer(w.rollback.run(w.run.run_id)))
        return False

    w.memories.fail_apply = second_arrives
    first = w.rollback.run(w.run.run_id)
    assert first.outcome is Outcome.DONE
    assert answers[0][0] == 409 and answers[0][1]["alreadyRolledBack"] is False
    assert len(w.rollback_rows()) == 4


# ---- the endpoint -----------------------------------------------------------------------------


class CountingRuns(FakeRunStore):
    def __init__(self) -> None:
        super().__init__()
        self.touched = 0

    def __getattribute__(self, name):
        if name in ("get", "latest", "claim_rollback", "mark_rolled_back", "release_rollback"):
            object.__setattr__(self, "touched", object.__getattribute__(self, "touched") + 1)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer wrong",
        f"Basic {SECRET}",
        SECRET,
        f"Bearer {SECRET}x",
        "Bearer ｓ３ｃｒｅｔ",
    ],
)
def test_a_missing_or_wrong_secret_is_401_and_nothing_is_read(authorization):
    memories, runs = FakeMemoryStore(), CountingRuns()
    runs.claim("2026-11-29", T)
    runs.touched = 0
    status, body = handle(Rollback(memories, runs), authorization, None, lambda: SECRET)
    assert status == 401 and runs.touched == 0 and memories.ledger == []
    assert SECRET not in json.dumps(body)


def test_no_admin_secret_configured_lets_nobody_in():
    runs = CountingRuns()
    runs.claim("2026-11-29", T)
    runs.touched = 0
    assert handle(Rollback(FakeMemoryStore(), runs), "Bearer ", None, lambda: "")[0] == 401
    assert handle(Rollback(FakeMemoryStore(), runs), "Bearer x", None, lambda: "")[0] == 401
    assert runs.touched == 0


def test_the_right_secret_rolls_back_and_the_scheme_is_case_insensitive():
    w = World()
    status, body = handle(w.rollback, f"bearer {SECRET}", b"", lambda: SECRET)
    assert status == 200 and body["runId"] == w.run.run_id and len(body["reverted"]) == 4


@pytest.mark.parametrize(
    "body",
    [
        '{"runId": "1"}',
        '{"runId": true}',
        '{"runId": 0}',
        '{"runId": -3}',
        '{"runId": 1.5}',
        '{"runId": null}',
        '{"runId": [1]}',
        '{"runId": 9007199254740992}',
        '{"dryRun": "yes"}',
        '{"dryRun": 1}',
        '{"runid": 1}',
        "[1]",
        '"1"',
        "12",
        "not json",
        '{"runId": 1',
        "{" * 5000,
        b"\xff\xfe",
    ],
)
def test_a_malformed_body_or_run_id_is_400_and_changes_nothing(body):
    w = World()
    ledger = list(w.memories.ledger)
    status, answer = handle(w.rollback, f"Bearer {SECRET}", body, lambda: SECRET)
    assert status == 400 and "error" in answer
    assert w.memories.ledger == ledger and not w.runs.get(w.run.run_id).rolled_back


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, (None, False)),
        ("", (None, False)),
        ("  ", (None, False)),
        ("{}", (None, False)),
        ('{"runId": 12}', (12, False)),
        ('{"dryRun": true}', (None, True)),
        ('{"runId": 3, "dryRun": false}', (3, False)),
    ],
)
def test_accepted_bodies(body, expected):
    request = parse_request(body)
    assert (request.run_id, request.dry_run) == expected


def test_base64_bodies_are_decoded_and_bad_base64_is_400():
    assert parse_request("eyJydW5JZCI6IDd9", base64_encoded=True).run_id == 7  # {"runId": 7}
    with pytest.raises(BadRequest):
        parse_request("%%%not base64", base64_encoded=True)


def test_run_id_through_the_endpoint_targets_that_run_and_unknown_is_404():
    w = World()
    assert handle(w.rollback, f"Bearer {SECRET}", '{"runId": 42}', lambda: SECRET)[0] == 404
    status, body = handle(
        w.rollback, f"Bearer {SECRET}", json.dumps({"runId": w.run.run_id, "dryRun": True}), lambda: SECRET
    )
    assert status == 200 and body["dryRun"] is True and w.rollback_rows() == []


# ---- a run still being written ----------------------------------------------------------------


def test_a_run_still_being_written_is_not_rolled_back_yet_but_a_dead_one_is():
    w = World()
    live = w.runs.claim("2026-11-30", w.clock())
    w.memories.apply(
        Change(Action.ADD, None, memory("b", "bbbbb", "b's fact", at=T), "jev: add"),
        actor=Actor.NIGHTLY,
        run_id=live.run_id,
    )
    status, body = rollback_answer(w.rollback.run(live.run_id))
    assert (status, body["inProgress"]) == (409, True) and w.get("b", "bbbbb") is not None
    assert rollback_answer(w.rollback.run(live.run_id, dry_run=True))[0] == 409
    w.clock.now += timedelta(minutes=16)  # longer than a nightly function can live: it died
    assert w.rollback.run(live.run_id).reverted == ["bbbbb"]


def test_a_run_that_deleted_then_re_added_an_id_does_not_resurrect_it_over_a_later_forget():
    w = World()
    reborn = memory("a", "del00", "a new fact under the same id", at=T + timedelta(minutes=5))
    w.nightly(Change(Action.ADD, None, reborn, "jev: add"))  # the run deleted del00 earlier, then re-added the id
    w.later(Change(Action.DELETE, reborn, None, "user asked to forget"), actor=Actor.COMMAND)
    result = w.rollback.run()
    assert "del00" in result.skipped and "del00" not in result.reverted
    assert w.get("a", "del00") is None  # the forget stands: the old record is not put back either


def test_a_rollback_reverts_the_runs_record_and_not_the_same_id_in_another_scope():
    w = World()
    # the same person, the same id, in another server: not the run's record
    w.later(Change(Action.ADD, None, memory("a", "add00", "learned elsewhere", at=T, scope="guild:2"), "add"))
    result = w.rollback.run()
    assert "add00" in result.reverted and w.get("a", "add00") is None
    assert w.get("a", "add00", scope="guild:2").text == "learned elsewhere"
