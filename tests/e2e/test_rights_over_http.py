"""No input breaks a person's rights, over HTTP against the local stack in its own process (with a
loopback Jev, a loopback embedding model, channel history on, and its DynamoDB a moto server this
test can also write to as an older version of the bot did):

- an import row with a time outside the documented range, or a text that is not valid Unicode,
  holds a control character or shows nothing, is a 400 naming the row and the field (dry run too),
  and ``memorybot import`` says the same in one line;
- a stored record no reader can read is skipped (show, chat, export, the nightly backfill go on)
  and the erasure deletes it all the same;
- with channel history on, an erased person's earlier lines are not stored again;
- nothing of a paused person reaches a model (no query embedding, no Jev question, no review, no
  backfill), while they are still answered; a query is embedded only when more than ten are ranked;
- a person's own export imported into the stack it came from changes nothing;
- the export's attachment is named by a snowflake string, as Discord's OpenAPI description types it.
"""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import httpx
import pytest
from stack_process import StackProcess, loopback_models

from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot import cli
from memorybot.core.night.window import window_for
from memorybot.core.record.domain import is_memory_id, iso, utcnow
from memorybot.local import moto_dynamo
from memorybot.local.client import LocalClient, find_signing_key

SECRET = "rights-admin-secret-23"
ADMIN = {"Authorization": f"Bearer {SECRET}"}
GUILD = "1230000000000000001"
_channels = itertools.count(1230000000000000101)
MARKER = "quokkamarker"  # in every text said below: a log line carrying it leaks text


@pytest.fixture(scope="module")
def rights(tmp_path_factory):
    dynamo = moto_dynamo.start()
    state_dir = tmp_path_factory.mktemp("rights-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev, OpenAIServer() as llm:
        running = StackProcess(
            state_dir,
            {
                "AWS_ENDPOINT_URL_DYNAMODB": dynamo.endpoint,
                **loopback_models(jev.url, llm.url, embeddings=True),
                "MEMORYBOT_FETCH_CHANNEL_HISTORY": "true",
                "MEMORYBOT_ADMIN_SECRET": SECRET,
                "POWERTOOLS_LOG_LEVEL": "DEBUG",
            },
        )
        http = httpx.Client(timeout=120)
        key = find_signing_key(state_dir)
        try:
            yield running, jev, llm, http, key, dynamo
        finally:
            http.close()
            running.stop()
            dynamo.stop()


def person(rights, name: str, channel: str | None = None) -> LocalClient:
    running, _, _, http, key, _ = rights
    client = LocalClient(running.url, name, key, channel or str(next(_channels)), GUILD, http=http, admin_secret=SECRET)
    client.catch_up()
    return client


def drain(rights) -> None:
    running, _, _, http, _, _ = rights
    assert http.post(f"{running.url}/local/drain", headers=ADMIN).json()["drained"]


def listed(output: list[str]) -> dict[str, str]:
    """memory id -> text, as /memory show DMs them."""
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[1:]]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines if is_memory_id(line.split(" ", 1)[0])}


def import_rows(rights, rows: list[dict], *, dry_run: bool = False) -> httpx.Response:
    running, _, _, http, _, _ = rights
    # ensure_ascii: a lone surrogate travels as the escape "\ud800", as a crafted file would carry it
    body = json.dumps({"memories": rows, "dryRun": dry_run}, ensure_ascii=True)
    return http.post(
        f"{running.url}/memory/import", content=body, headers={**ADMIN, "Content-Type": "application/json"}
    )


def night(rights, days: int) -> dict:
    """The run of the night ``days`` after today's (each test its own night)."""
    running, _, _, http, _, _ = rights
    now = iso(window_for(utcnow()).end + timedelta(days=days))
    answer = http.post(f"{running.url}/local/nightly", json={"now": now}, headers=ADMIN, timeout=300)
    assert answer.status_code == 200, answer.text
    return answer.json()


# ---- 1. every date in a documented range, every text valid, visible, without control characters


BAD_ROWS = [
    ("createdAt", "0999-06-01T00:00:00Z", "is before 1970-01-01"),
    ("createdAt", "0001-01-01T00:00:00+01:00", "is outside 1970-01-01T00:00:00Z to now"),
    ("createdAt", "9999-12-31T23:59:59-01:00", "is outside 1970-01-01T00:00:00Z to now"),
    ("updatedAt", "1969-12-31T23:59:59Z", "is before 1970-01-01"),
    ("text", "Likes \ud800 tea", "lone surrogate"),
    ("text", "\u200b\u200b\u2060", "no visible characters"),
    ("text", "Likes \x1b[31mred\x1b[0m tea", "control character U+001B"),
    ("text", "Likes\rtea", "control character U+000D"),
]


def test_a_row_outside_the_documented_range_or_with_bad_text_is_a_400_naming_row_and_field(rights, tmp_path, capsys):
    ana = person(rights, "ana-rights")
    good = {"userId": ana.user_id, "scope": f"guild:{GUILD}", "text": f"Keeps {MARKER} bees", "createdAt": "2026-01-01"}
    for field, value, problem in BAD_ROWS:
        bad = {**good, "text": f"Grows {MARKER} figs", field: value}
        for dry_run in (True, False):
            answer = import_rows(rights, [good, bad], dry_run=dry_run)
            assert answer.status_code == 400, (field, value, answer.text)
            assert answer.json()["row"] == 1 and answer.json()["field"] == field, answer.text
            assert problem in answer.json()["error"] and MARKER not in answer.text, answer.text
        # The operator's command checks the file the same way, in one line, before sending anything.
        path = tmp_path / "rows.json"
        path.write_text(json.dumps({"memories": [good, bad]}, ensure_ascii=True))
        assert cli.main(["import", str(path), "--url", rights[0].url]) == 2
        error = capsys.readouterr().err
        assert f"memories[1].{field}: " in error and problem in error and len(error.strip().splitlines()) == 1
    assert listed(ana.show()) == {}  # nothing was written, not even the good row
    # A time in the range is written back fixed-width and read again.
    assert import_rows(rights, [{**good, "createdAt": "1970-01-01T00:00:00Z"}]).json()["imported"] == 1
    assert list(listed(ana.show()).values()) == [f"Keeps {MARKER} bees"]


# ---- 1. a stored record no reader can read: skipped everywhere, erased all the same


def test_a_stored_record_no_reader_can_read_is_skipped_and_the_erasure_deletes_it(rights):
    running, jev, llm, http, _, dynamo = rights
    kai = person(rights, "kai-rights")
    kai.chat(f"I love {MARKER} tangerines")
    drain(rights)
    owner = f"guild:{GUILD}#{kai.user_id}"
    client = dynamo.client()

    def record(memory_id: str, created: str, updated: str) -> dict:
        return {
            "owner": {"S": owner},
            "scope": {"S": f"guild:{GUILD}"},
            "user_id": {"S": kai.user_id},
            "memory_id": {"S": memory_id},
            "text": {"S": f"Old {MARKER} fact {memory_id}"},
            "created_at": {"S": created},
            "updated_at": {"S": updated},
            "stale_shard": {"S": "0"},
            "review_after": {"S": updated},
        }

    # As an import of "0999-06-01" was written back before times were written fixed-width...
    client.put_item(
        TableName="memories", Item=record("yr999", "999-06-01T00:00:00.000000Z", "999-06-01T00:00:00.000000Z")
    )
    # ...and a record no reader can read at all, with a ledger row whose state is broken too.
    client.put_item(TableName="memories", Item=record("bad22", "not a time", "2026-01-01T00:00:00.000000Z"))
    client.put_item(
        TableName="memory_log",
        Item={
            "owner": {"S": owner},
            "scope": {"S": f"guild:{GUILD}"},
            "user_id": {"S": kai.user_id},
            "entry_key": {"S": "2026-01-01T00:00:00.000000Z#broken0"},
            "action": {"S": "add"},
            "actor": {"S": "import"},
            "reason": {"S": "operator import"},
            "memory_ids": {"L": [{"S": "bad22"}]},
            "at": {"S": "2026-01-01T00:00:00.000000Z"},
            "after": {"S": '{"text": "Old ' + MARKER + ' fact", "created_at": "not a time"'},
        },
    )

    # A memory with no vector yet, for the night's backfill to reach past the bad records.
    row = {"userId": kai.user_id, "scope": f"guild:{GUILD}", "text": f"Keeps {MARKER} koi", "createdAt": "2026-02-01"}
    assert import_rows(rights, [row]).json()["imported"] == 1

    shown = listed(kai.show())
    assert len(shown) == 2 and not {"yr999", "bad22"} & set(shown), shown  # skipped, the rest shown
    assert "Sorry" not in "\n".join(kai.chat("what do you remember?"))
    [attached] = [t for t in kai.export() if t.startswith("[attached file")]
    assert "tangerines" in attached and "yr999" not in attached and "bad22" not in attached
    run = night(rights, days=1)
    assert run["summary"]["embedded"] >= 1, run["summary"]  # the backfill went past the bad records

    preview = http.post(f"{running.url}/memory/erase", json={"userId": kai.user_id, "dryRun": True}, headers=ADMIN)
    assert preview.status_code == 200, preview.text
    done = http.post(f"{running.url}/memory/erase", json={"userId": kai.user_id}, headers=ADMIN)
    assert done.status_code == 200 and done.json()["memoriesDeleted"] == 4, done.text

    def partition(table: str) -> list[dict]:
        return client.query(
            TableName=table,
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": {"S": owner}},
        )["Items"]

    assert [i for i in partition("memories") if "text" in i] == []
    rows = partition("memory_log")
    assert rows and all("before" not in r and "after" not in r for r in rows)
    skipped = [line for line in running.output if "unreadable" in line]
    assert any("bad22" in line for line in skipped) and not any(MARKER in line for line in skipped)


# ---- 2. every writer checks the person's record: channel history too


def test_with_channel_history_an_erased_persons_earlier_lines_are_not_stored_again(rights):
    running, _, _, http, _, _ = rights
    eve = person(rights, "eve-rights")
    bob = person(rights, "bob-rights", eve.channel_id)
    eve.chat(f"I like {MARKER} scarves")
    said = {"channel_id": eve.channel_id, "author_id": eve.user_id, "author_name": "eve-rights"}
    said["content"] = f"an ordinary {MARKER} line of eve's"
    assert http.post(f"{running.url}/local/discord/someone-said", json=said, headers=ADMIN).status_code == 200
    bob.chat("hello there")  # the reply worker fetches the channel's history: eve's line is stored
    drain(rights)
    erased = http.post(f"{running.url}/memory/erase", json={"userId": eve.user_id}, headers=ADMIN)
    assert erased.status_code == 200 and erased.json()["messagesDeleted"] >= 3, erased.text

    bob.chat("hello again")  # the history again holds eve's earlier line
    drain(rights)
    again = http.post(f"{running.url}/memory/erase", json={"userId": eve.user_id, "dryRun": True}, headers=ADMIN)
    assert again.json()["messagesDeleted"] == 0, again.text  # nothing of eve's was stored again

    later = {**said, "content": "a new line, said after the erasure"}
    assert http.post(f"{running.url}/local/discord/someone-said", json=later, headers=ADMIN).status_code == 200
    bob.chat("and once more")
    drain(rights)
    stored = http.post(f"{running.url}/memory/erase", json={"userId": eve.user_id, "dryRun": True}, headers=ADMIN)
    assert stored.status_code == 200 and stored.json()["messagesDeleted"] == 1, stored.text  # what she says now


# ---- 3. nothing of a paused person reaches a model; a query is embedded only to rank


def stale_rows(user_id: str, facts: list[str]) -> list[dict]:
    old = iso(utcnow() - timedelta(days=60))
    return [{"userId": user_id, "scope": f"guild:{GUILD}", "text": fact, "createdAt": old} for fact in facts]


def test_nothing_of_a_paused_person_reaches_a_model_and_a_query_is_embedded_only_to_rank(rights):
    running, jev, llm, http, _, _ = rights
    pia, rho, sue = person(rights, "pia-rights"), person(rights, "rho-rights"), person(rights, "sue-rights")
    pia_facts = [f"Pia {MARKER} fact number {i}" for i in range(12)]
    rho_facts = [f"Rho {MARKER} fact number {i}" for i in range(12)]
    assert import_rows(rights, stale_rows(pia.user_id, pia_facts)).json()["imported"] == 12
    assert import_rows(rights, stale_rows(rho.user_id, rho_facts)).json()["imported"] == 12
    assert "paused" in "\n".join(pia.pause()).lower()
    drain(rights)
    jev.clear()
    llm.clear()

    answer = "\n".join(pia.chat(f"I adore {MARKER} pianoforte music"))
    assert "memorybot:" in answer and "Sorry" not in answer  # still answered
    rho.chat(f"I adore {MARKER} rhododendrons")  # more than ten memories: ranked, so embedded
    sue.chat(f"I adore {MARKER} sunflowers")  # none yet: nothing to rank
    drain(rights)
    embedded = [text for body in llm.embedding_requests() for text in body["input"]]
    assert not any("pianoforte" in text or "Pia" in text for text in embedded), embedded
    assert f"I adore {MARKER} rhododendrons" in embedded
    assert f"I adore {MARKER} sunflowers" not in embedded
    assert not any(b["speaker"]["id"] == pia.user_id for b in jev.bodies() if "speaker" in b)

    jev.clear()
    llm.clear()
    night(rights, days=2)
    reviewed = json.dumps(jev.bodies("/review"))
    embedded = json.dumps(llm.embedding_requests())
    assert "Pia" not in reviewed and "Pia" not in embedded  # neither reviewed nor backfilled
    assert "Rho" in reviewed  # the others' stale memories were reviewed
    assert listed(pia.show()) and len(listed(pia.show())) == 12  # nothing was deleted


# ---- 4. a person's own export, imported into the stack it came from, changes nothing


def test_reimporting_ones_own_export_changes_nothing_even_after_a_forget(rights, tmp_path, capsys, monkeypatch):
    running, _, _, http, _, _ = rights
    monkeypatch.setenv("MEMORYBOT_ADMIN_SECRET", SECRET)
    uma = person(rights, "uma-rights")
    uma.chat(f"I love {MARKER} umbrellas")
    uma.chat(f"My cat is called {MARKER} Udon")
    drain(rights)
    before = listed(uma.show())
    assert len(before) == 2, before
    [attached] = [t for t in uma.export() if t.startswith("[attached file")]
    export = json.loads(attached.split("\n", 1)[1])
    route = f"{running.url}/memory/import"
    # The memories are already there: not "imported before", as they never were.
    counted = {"imported": 0, "unchanged": 0, "alreadyHere": 2, "refused": 0}
    assert http.post(route, json=export | {"dryRun": True}, headers=ADMIN).json() == counted | {"dryRun": True}
    assert http.post(route, json=export, headers=ADMIN).json() == counted | {"dryRun": False}
    assert listed(uma.show()) == before

    forgotten = next(iter(before))
    assert "Forgotten" in "\n".join(uma.forget(forgotten))
    path = tmp_path / "memorybot-export.json"
    path.write_text(json.dumps(export))
    assert cli.main(["import", str(path), "--url", running.url]) == 0
    said = capsys.readouterr().out
    assert f"Imported 0 memories into the stack at {running.url}, 2 already there (this stack's own" in said
    assert set(listed(uma.show())) == set(before) - {forgotten}  # what was forgotten stays forgotten


# ---- 5. the export's attachment id is a snowflake string


def test_the_export_file_is_named_by_an_attachment_id_that_is_a_string(rights):
    running, _, _, http, _, _ = rights
    vic = person(rights, "vic-rights")
    vic.chat(f"I collect {MARKER} violins")
    drain(rights)
    assert any(t.startswith("[attached file") for t in vic.export())
    events = http.get(f"{running.url}/local/discord/events", headers=ADMIN).json()["events"]
    [sent] = [e for e in events if e["attachments"] and e["recipient_id"] == vic.user_id]
    assert [type(a["id"]) for a in sent["body"]["attachments"]] == [str]


def test_nothing_said_reached_a_log_line(rights):
    running = rights[0]
    drain(rights)
    assert "level" in "".join(running.output)
    assert [line for line in running.output if MARKER in line] == []
