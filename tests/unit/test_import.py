"""Operator import (POST /memory/import) through the admin Lambda handler, fakes behind: the
contract's happy path, every bad input, idempotency, the ledger rows and the dry run."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
from datetime import timedelta

import pytest

from fakes import FakeMemoryStore, FakePeopleStore, FakeRunStore, memory, owner
from memorybot import bootstrap
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import (
    MEMORY_TEXT_MAX_CHARS,
    Action,
    Actor,
    Owner,
    ScopeMode,
    SourceRef,
    is_memory_id,
    iso,
    parse_iso,
    utcnow,
)
from memorybot.core.rights import commands
from memorybot.core.rights.importing import MAX_IMPORT_BODY_BYTES, MAX_IMPORT_ROWS, Importer, parse_import
from memorybot.handlers import admin

SECRET = "import-admin-secret"
ALICE, BOB = "111111111111111111", "222222222222222222"
GUILD = "guild:900000000000000001"
CREATED = "2026-03-01T10:00:00Z"
UPDATED = "2026-04-01T10:00:00+09:00"


def row(**overrides) -> dict:
    base = {"userId": ALICE, "scope": GUILD, "text": "Plays the cello", "createdAt": CREATED, "updatedAt": UPDATED}
    return {k: v for k, v in (base | overrides).items() if v is not ...}


def wire(monkeypatch, mode: str = "guild", memories: FakeMemoryStore | None = None) -> FakeMemoryStore:
    memories = memories or FakeMemoryStore()
    settings = Settings.from_env({"MEMORYBOT_ADMIN_SECRET": SECRET, "MEMORYBOT_MEMORY_SCOPE": mode})
    container = Container(settings, memory_store=memories, run_store=FakeRunStore(), people_store=FakePeopleStore())
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    return memories


@pytest.fixture
def memories(monkeypatch) -> FakeMemoryStore:
    return wire(monkeypatch)


def event(body: object, *, auth: str | None = f"Bearer {SECRET}", raw: str | None = None) -> dict:
    """API Gateway's REST (v1) proxy event for the import route."""
    return {
        "resource": "/memory/import",
        "path": "/memory/import",
        "httpMethod": "POST",
        "headers": {"Authorization": auth} if auth is not None else {},
        "body": raw if raw is not None else json.dumps(body),
        "isBase64Encoded": False,
    }


def call(ev: dict) -> tuple[int, dict]:
    response = admin.handler(ev, LocalContext("memorybot-admin"))
    return response["statusCode"], json.loads(response["body"])


def post(body: object, **kw) -> tuple[int, dict]:
    return call(event(body, **kw))


def written(memories: FakeMemoryStore) -> tuple:
    """Everything a request could have written."""
    return (dict(memories.rows), list(memories.changes()), set(memories.markers))


# ---- the happy path


def test_rows_are_imported_with_ids_of_their_own_their_times_and_one_ledger_row_each(memories):
    rows = [row(id="src-1"), row(userId=BOB, scope="dm", text="Lives  in\nOsaka", updatedAt=...)]
    assert post({"memories": rows}) == (
        200,
        {"imported": 2, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": False},
    )
    [cello] = memories.of(owner(ALICE, GUILD))
    [osaka] = memories.of(owner(BOB, "dm"))
    assert is_memory_id(cello.memory_id) and cello.memory_id != "src-1"
    assert (cello.text, cello.created_at, cello.updated_at) == (
        "Plays the cello",
        parse_iso(CREATED),
        parse_iso(UPDATED),
    )
    assert osaka.text == "Lives in Osaka"  # one line, as extraction writes memories
    assert osaka.updated_at == osaka.created_at  # no updatedAt: the creation time
    assert memories.of(owner(ALICE, "dm")) == [] and memories.of(owner(BOB, GUILD)) == []  # scopes never mix
    entries = {e.user_id: e for e in memories.changes()}
    assert len(memories.changes()) == 2
    assert (entries[ALICE].action, entries[ALICE].actor, entries[ALICE].import_id) == (
        Action.ADD,
        Actor.IMPORT,
        "src-1",
    )
    assert (entries[ALICE].before, entries[ALICE].after, entries[ALICE].memory_ids) == (None, cello, (cello.memory_id,))
    assert entries[BOB].import_id is None and entries[BOB].after == osaka and entries[BOB].scope == "dm"


def test_a_rows_valid_until_is_the_memorys_end_and_null_or_absent_is_none(memories):
    rows = [
        row(id="p1", validUntil="2026-12-31"),
        row(id="p2", validUntil=None),
        row(id="p3"),
        row(id="p4", validUntil="2026-03-01"),
    ]
    assert post({"memories": rows})[0] == 200
    ends = sorted(str(m.valid_until) for m in memories.of(owner(ALICE, GUILD)))
    assert ends == ["2026-03-01", "2026-12-31", "None", "None"]  # its last day may be the day it was said


def test_the_same_rows_again_import_nothing_and_count_as_unchanged(memories):
    rows = [row(id="src-1"), row(text="Keeps bees"), row(text="Keeps bees", createdAt="2026-03-02T00:00:00Z")]
    assert post({"memories": rows})[1]["imported"] == 3
    before = written(memories)
    assert post({"memories": rows}) == (
        200,
        {"imported": 0, "unchanged": 3, "alreadyHere": 0, "refused": 0, "dryRun": False},
    )
    assert written(memories) == before


def test_the_key_is_the_source_id_when_there_is_one_and_text_and_creation_time_otherwise(memories):
    post({"memories": [row(id="src-1"), row(text="Keeps bees")]})
    again = [
        row(id="src-1", text="Plays the viola now"),  # same source id, new text: the same row, unchanged
        row(text="Keeps bees", updatedAt="2026-05-01T00:00:00Z"),  # same text and createdAt: unchanged
        row(text="Keeps bees", userId=BOB),  # another person: their own row
        row(text="Keeps bees", scope="dm"),  # another scope: its own row
        row(id="src-2", text="Keeps bees"),  # a source id makes it another row
    ]
    assert post({"memories": again})[1] == {
        "imported": 3,
        "unchanged": 2,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": False,
    }


def test_a_forgotten_imported_memory_is_not_brought_back_by_importing_the_file_again(memories):
    post({"memories": [row(id="src-1")]})
    [cello] = memories.of(owner(ALICE, GUILD))
    assert commands.forget(memories, owner(ALICE, GUILD), cello.memory_id).outcome is commands.ForgetOutcome.FORGOTTEN
    assert post({"memories": [row(id="src-1")]})[1] == {
        "imported": 0,
        "unchanged": 1,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": False,
    }
    assert memories.of(owner(ALICE, GUILD)) == []


def test_identical_rows_in_one_request_are_imported_once(memories):
    assert post({"memories": [row(), row()]})[1] == {
        "imported": 1,
        "unchanged": 1,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": False,
    }
    assert len(memories.of(owner(ALICE, GUILD))) == 1


def test_dry_run_counts_what_would_be_imported_and_writes_nothing(memories):
    post({"memories": [row(id="src-1")]})
    before = written(memories)
    body = {"memories": [row(id="src-1"), row(text="Keeps bees"), row(text="Keeps bees")], "dryRun": True}
    assert post(body) == (200, {"imported": 1, "unchanged": 2, "alreadyHere": 0, "refused": 0, "dryRun": True})
    assert written(memories) == before
    # and the real run then does what the dry run said
    assert post(body | {"dryRun": False})[1] == {
        "imported": 1,
        "unchanged": 2,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": False,
    }


def test_a_taken_memory_id_is_drawn_again():
    memories = FakeMemoryStore()
    memories.seed(memory(ALICE, "taken", "Already here", scope=GUILD))
    ids = iter(["taken", "fresh"])
    importer = Importer(memories, ScopeMode.GUILD, new_id=lambda: next(ids))
    result = importer.run(parse_import({"memories": [row()]}, now=utcnow()))
    assert (result.imported, result.unchanged) == (1, 0)
    assert memories.get(owner(ALICE, GUILD), "taken").text == "Already here"
    assert memories.get(owner(ALICE, GUILD), "fresh").text == "Plays the cello"


def test_concurrent_identical_imports_import_each_row_once():
    memories = FakeMemoryStore()
    request = parse_import({"memories": [row(id=f"src-{n}", text=f"Fact {n}") for n in range(20)]}, now=utcnow())
    results = []

    def run() -> None:
        results.append(Importer(memories, ScopeMode.GUILD).run(request))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.imported for r in results) == 20 and sum(r.unchanged for r in results) == 60
    assert len(memories.of(owner(ALICE, GUILD))) == 20 and len(memories.changes()) == 20


def test_global_rows_are_imported_when_the_deployment_keeps_one_profile(monkeypatch):
    memories = wire(monkeypatch, "global")
    assert post({"memories": [row(scope="global")]})[1]["imported"] == 1
    assert [m.text for m in memories.of(ALICE)] == ["Plays the cello"]


# ---- an export file, as /memory export writes it


def test_an_export_file_is_accepted_as_it_is_and_restores_every_scope(memories):
    source = FakeMemoryStore()
    kept = [
        memory(ALICE, "abcde", "Plays the cello", scope=GUILD),
        memory(ALICE, "fghjk", "Keeps bees", scope="dm"),
    ]
    for m in kept:
        source.apply(Change(Action.ADD, None, m, "jev: add"), actor=Actor.EXTRACTION)
    exported = json.loads(json.dumps(commands.export(source, ALICE)))  # the file as the person receives it
    assert post(exported) == (200, {"imported": 2, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": False})
    for m in kept:
        [restored] = memories.of(m.owner)
        assert (restored.text, restored.created_at, restored.updated_at) == (m.text, m.created_at, m.updated_at)
    assert {e.import_id for e in memories.changes()} == {"abcde", "fghjk"}  # the export's ids, on the ledger
    assert post(exported | {"dryRun": True})[1] == {
        "imported": 0,
        "unchanged": 2,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": True,
    }


def test_an_export_that_lists_forgotten_messages_imports_its_memories_and_nothing_forgotten(memories):
    source = FakeMemoryStore()
    kept = memory(ALICE, "abcde", "Plays the cello", scope=GUILD)
    gone = dataclasses.replace(memory(ALICE, "fghjk", "Keeps bees", scope=GUILD), sources=(SourceRef("c1", "77"),))
    for m in (kept, gone):
        source.apply(Change(Action.ADD, None, m, "jev: add"), actor=Actor.EXTRACTION)
    source.apply(Change(Action.DELETE, gone, None, "user asked to forget"), actor=Actor.COMMAND)
    exported = json.loads(json.dumps(commands.export(source, ALICE)))
    assert exported["scopes"][0]["forgottenSourceMessageIds"] == ["77"]
    assert post(exported) == (200, {"imported": 1, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": False})
    assert [m.text for m in memories.of(owner(ALICE, GUILD))] == ["Plays the cello"]


def test_an_export_with_a_field_the_import_does_not_know_is_refused_naming_where(memories):
    source = FakeMemoryStore()
    source.apply(Change(Action.ADD, None, memory(ALICE, "abcde", scope=GUILD), "add"), actor=Actor.EXTRACTION)
    exported = json.loads(json.dumps(commands.export(source, ALICE)))
    exported["scopes"][0]["memories"][0]["mood"] = "happy"
    status, answer = post(exported)
    assert (status, answer["row"], answer["field"]) == (400, 0, "mood")
    assert "scopes[0].memories[0].mood" in answer["error"]
    assert written(memories) == ({}, [], set())


# ---- bad input: 400 naming the row and the field, nothing written


LONG = "x" * (MEMORY_TEXT_MAX_CHARS + 1)
FUTURE = iso(utcnow() + timedelta(days=2))

BAD_ROWS = [
    ("userId", row(userId="alice")),
    ("userId", row(userId=123)),
    ("userId", row(userId="１２３")),  # full-width digits are not an id
    ("userId", row(userId=...)),
    ("text", row(text="")),
    ("text", row(text=" \n\t ")),
    ("text", row(text=LONG)),
    ("text", row(text=["a list"])),
    ("createdAt", row(createdAt="yesterday")),
    ("createdAt", row(createdAt=1700000000)),
    ("createdAt", row(createdAt=FUTURE, updatedAt=FUTURE)),
    ("updatedAt", row(updatedAt="2026-13-01T00:00:00Z")),
    ("updatedAt", row(updatedAt="2026-02-01T00:00:00Z")),  # before createdAt
    ("validUntil", row(validUntil="soon")),
    ("validUntil", row(validUntil="2026-12-31T00:00:00Z")),  # a date, not a time
    ("validUntil", row(validUntil="2026-02-30")),
    ("validUntil", row(validUntil=20261231)),
    ("validUntil", row(validUntil="2026-02-28")),  # its last day before createdAt (2026-03-01)
    ("scope", row(scope="server:1")),
    ("scope", row(scope="guild:abc")),
    ("scope", row(scope="guild:")),
    ("scope", row(scope="erasure")),
    ("scope", row(scope="global")),  # this deployment keeps memories per server
    ("id", row(id="")),
    ("id", row(id="x" * 65)),
    ("id", row(id="line\nbreak")),
    ("id", row(id=7)),
    ("mood", row(mood="happy")),
    ("row", "just a string"),
]


@pytest.mark.parametrize(("field", "bad"), BAD_ROWS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_ROWS)])
def test_a_bad_row_is_a_400_naming_its_index_and_field_and_nothing_of_the_request_is_written(memories, field, bad):
    rows = [row(id="good-1"), row(id="good-2", text="Keeps bees"), bad]
    status, answer = post({"memories": rows})
    assert status == 400, answer
    assert (answer["row"], answer["field"]) == (2, field)
    assert answer["error"].startswith(f"memories[2].{field}: ")
    assert written(memories) == ({}, [], set())


def test_a_too_long_text_is_not_repeated_in_the_answer(memories):
    status, answer = post({"memories": [row(text="secret " + LONG)]})
    assert status == 400 and "secret" not in json.dumps(answer)


@pytest.mark.parametrize(
    ("mode", "scope"), [("guild", "global"), ("global", GUILD), ("global", "dm"), ("global", "channel:5")]
)
def test_a_scope_this_deployment_does_not_use_is_a_400_and_nothing_is_written(monkeypatch, mode, scope):
    memories = wire(monkeypatch, mode)
    good = row(scope="global" if mode == "global" else GUILD)
    for dry_run in (True, False):
        status, answer = post({"memories": [good, row(scope=scope)], "dryRun": dry_run})
        assert (status, answer["row"], answer["field"]) == (400, 1, "scope"), answer
        assert "not used here" in answer["error"]
    assert written(memories) == ({}, [], set())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"memories": [row()], "dryrun": True}, None),  # a typo is refused, not ignored
        ({"memories": [row()], "dryRun": "yes"}, "dryRun"),
        ({"memories": {"0": row()}}, "memories"),
        ({}, "memories"),
        ({"memories": [row()], "userId": ALICE}, "userId"),
        ({"userId": "alice", "scopes": []}, "userId"),
        ({"userId": ALICE, "scopes": [{"scope": GUILD, "memories": [], "extra": 1}]}, "scopes[0].extra"),
    ],
)
def test_a_bad_body_is_a_400_and_nothing_is_written(memories, body, field):
    status, answer = post(body)
    assert status == 400, answer
    assert answer.get("field") == field
    assert written(memories) == ({}, [], set())


def test_no_body_and_a_body_that_is_not_json_are_400(memories):
    assert call(event(None, raw=""))[0] == 400
    assert call(event(None, raw="{not json"))[0] == 400
    assert call(event(None, raw="[1, 2]"))[0] == 400


# ---- size, secret, method


def test_more_rows_than_a_request_may_carry_is_a_413_and_nothing_is_written(memories):
    rows = [row(text=f"Fact {n}") for n in range(MAX_IMPORT_ROWS + 1)]
    status, answer = post({"memories": rows})
    assert status == 413 and str(MAX_IMPORT_ROWS) in answer["error"]
    assert written(memories) == ({}, [], set())
    assert post({"memories": rows[:MAX_IMPORT_ROWS], "dryRun": True})[1]["imported"] == MAX_IMPORT_ROWS


def test_a_body_past_the_documented_size_is_a_413_before_it_is_parsed(memories):
    padding = " " * (MAX_IMPORT_BODY_BYTES + 1 - len(json.dumps({"memories": []})))
    status, answer = call(event(None, raw='{"memories": []' + padding + "}"))
    assert status == 413 and str(MAX_IMPORT_BODY_BYTES) in answer["error"]
    assert call(event(None, raw='{"memories": []' + padding[:-1] + "}")) == (
        200,
        {"imported": 0, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": False},
    )
    big = '{"memories": [' + ",".join([json.dumps(row(text="é" * 400))] * 1000) + "]}"  # not even JSON-parsed
    assert len(big.encode()) > MAX_IMPORT_BODY_BYTES and call(event(None, raw=big))[0] == 413


@pytest.mark.parametrize("auth", [None, "", "Bearer wrong", f"Basic {SECRET}", SECRET])
def test_without_the_secret_it_is_a_401_and_nothing_is_read_or_written(memories, auth):
    too_big = "x" * (MAX_IMPORT_BODY_BYTES + 10)  # 401 before the size is even looked at
    assert post({"memories": [row()]}, auth=auth) == (401, {"error": "unauthorized"})
    assert call(event(None, auth=auth, raw=too_big))[0] == 401
    assert written(memories) == ({}, [], set())


def test_the_v2_event_of_the_local_stack_with_its_base64_body_reaches_the_import(memories):
    ev = {
        "version": "2.0",
        "rawPath": "/memory/import",
        "requestContext": {"http": {"method": "POST", "path": "/memory/import"}},
        "headers": {"authorization": f"Bearer {SECRET}"},
        "body": base64.b64encode(json.dumps({"memories": [row()]}).encode()).decode(),
        "isBase64Encoded": True,
    }
    assert call(ev)[1] == {"imported": 1, "unchanged": 0, "alreadyHere": 0, "refused": 0, "dryRun": False}
    get = event({"memories": [row()]}) | {"httpMethod": "GET"}
    assert call(get)[0] == 405


def test_a_store_failure_part_way_is_a_503_that_leaves_none_of_the_request(memories, monkeypatch):
    rows = [row(id=f"src-{n}", text=f"Fact {n}") for n in range(5)]
    real = memories.add_once
    calls = []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected store failure")
        return real(*args, **kw)

    monkeypatch.setattr(memories, "add_once", failing)
    assert post({"memories": rows})[0] == 503
    # The two rows added before the failure are taken back, each with a ledger row saying so.
    assert memories.of(owner(ALICE, GUILD)) == [] and memories.markers == set()
    taken = [e for e in memories.changes() if e.action is Action.DELETE]
    assert len(taken) == 2 and {e.actor for e in taken} == {Actor.IMPORT}
    assert {e.import_id for e in taken} == {"src-0", "src-1"} and all("taken back" in e.reason for e in taken)
    # Sent again, the request imports every row: none counts as "imported before".
    assert post({"memories": rows})[1] == {
        "imported": 5,
        "unchanged": 0,
        "alreadyHere": 0,
        "refused": 0,
        "dryRun": False,
    }
    assert len(memories.of(owner(ALICE, GUILD))) == 5


def test_if_the_take_back_fails_too_the_request_sent_again_finishes_it(memories, monkeypatch):
    rows = [row(id=f"src-{n}", text=f"Fact {n}") for n in range(4)]
    real = memories.add_once
    calls = []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected store failure")
        return real(*args, **kw)

    def no_take_back(*args, **kw):
        raise RuntimeError("the store is down")

    monkeypatch.setattr(memories, "add_once", failing)
    monkeypatch.setattr(memories, "take_back", no_take_back)
    assert post({"memories": rows})[0] == 503
    again = post({"memories": rows})[1]
    assert (again["imported"], again["unchanged"]) == (2, 2)
    assert len(memories.of(owner(ALICE, GUILD))) == 4


def test_a_repeated_id_is_a_400_naming_both_rows_and_nothing_is_written(memories):
    rows = [row(id="src-1"), row(id="src-2", text="Keeps bees"), row(id="src-1", text="Plays the viola")]
    status, answer = post({"memories": rows})
    assert status == 400 and answer["row"] == 2 and answer["field"] == "id" and answer["rows"] == [0, 2]
    assert "memories[2].id" in answer["error"] and "memories[0]" in answer["error"]
    assert "viola" not in answer["error"]
    assert memories.rows == {} and memories.changes() == [] and memories.markers == set()
    # The same id for another person, or in another scope, is theirs: no repeat.
    other = [row(id="src-1"), row(id="src-1", userId=BOB), row(id="src-1", scope="dm")]
    assert post({"memories": other})[1]["imported"] == 3


def test_rows_of_a_person_erased_since_the_import_began_are_counted_refused(monkeypatch):
    people = FakePeopleStore()
    memories = wire(monkeypatch, memories=FakeMemoryStore(people=people))
    real = memories.add_once
    calls = []

    def erased_half_way(*args, **kw):
        calls.append(1)
        if len(calls) == 2:  # the operator's erasure marks the person while the import runs
            people.erased(ALICE, utcnow() + timedelta(seconds=1))
        return real(*args, **kw)

    monkeypatch.setattr(memories, "add_once", erased_half_way)
    rows = [row(id=f"src-{n}", text=f"Fact {n}") for n in range(4)]
    answer = post({"memories": rows})[1]
    assert (answer["imported"], answer["refused"], answer["unchanged"]) == (1, 3, 0), answer


def test_rollback_still_answers_on_its_own_path(memories):
    ev = event(None, raw="") | {"resource": "/memory/rollback", "path": "/memory/rollback"}
    assert call(ev) == (404, {"error": "no nightly run yet"})


def test_the_owner_is_the_rows_person_in_the_rows_scope():
    [parsed] = parse_import({"memories": [row()]}, now=utcnow()).rows
    assert parsed.owner == Owner(GUILD, ALICE)
