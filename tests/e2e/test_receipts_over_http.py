"""Receipts, "Why?" and "everywhere" memories over HTTP against the local stack in its own process,
signed as Discord signs, with the recorder as Discord: what each turn changed told once to the
person (ephemeral, with the history's own Undo), nothing when nothing changed or receipts are off,
the night's line on the next use; a reply's "Why?" refused to anyone else and listing the prompt's
memories to the asker; a memory moved everywhere read in another server and in a DM, moved back,
kept by a forget-all here and cleared by everywhere:true, exported, erased; a move undone."""

from __future__ import annotations

import itertools
import json
import re
from datetime import timedelta

import pytest
from stack_process import stack_with_jev

from memorybot.core.night.window import window_for
from memorybot.core.record.domain import iso, utcnow
from memorybot.discord.history_view import UNDO_BUTTON
from memorybot.discord.receipts_view import BECAUSE_BUTTON, OVERNIGHT_BUTTON

ADMIN_SECRET = "receipts-admin-secret-7"
_channels = itertools.count(1700000000000000001)
MARKER = "tamarindmarker"  # in every text said below: any log line carrying it leaks text
OTHER_GUILD = "1700000000000009999"


PREFIX = "receipts-"


@pytest.fixture(scope="module")
def receipts_stack(moto_server, tmp_path_factory):
    # The tables on a moto server this test reads too: which read rows the ledger holds.
    env = {"AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint, "MEMORYBOT_TABLE_PREFIX": PREFIX}
    with stack_with_jev(tmp_path_factory.mktemp("receipts-state"), ADMIN_SECRET, _channels, env) as stack:
        yield stack


@pytest.fixture(scope="module")
def ledger(moto_server):
    """The read rows of one person's scopes: (scope, reason, entry key, memory ids), oldest first."""
    client = moto_server.client()

    def reads(user_id: str) -> list[tuple[str, str, str, list[str]]]:
        pages = client.get_paginator("scan").paginate(TableName=PREFIX + "memory_log", ConsistentRead=True)
        rows = [i for page in pages for i in page["Items"] if i["user_id"]["S"] == user_id]
        return sorted(
            (i["scope"]["S"], i["reason"]["S"], i["entry_key"]["S"], i.get("memory_ids", {}).get("L", []))
            for i in rows
            if i["action"]["S"] == "read"
        )

    return reads


def events(running, http, after: int = 0) -> list[dict]:
    answer = http.get(
        f"{running.url}/local/discord/events",
        params={"after": after},
        headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
    )
    return answer.json()["events"]


def last_seq(running, http) -> int:
    return max([0] + [e["seq"] for e in events(running, http)])


def receipts_since(running, http, seq: int) -> list[dict]:
    """The follow-ups posted since ``seq`` that are receipts (their buttons are Undo buttons)."""
    return [
        e
        for e in events(running, http, seq)
        if e["kind"] == "followup" and "What I just changed" in (e["body"] or {}).get("content", "")
    ]


def buttons_of(body: dict) -> list[dict]:
    return [b for row in body.get("components") or [] for b in row.get("components") or []]


def shown_ids(output: list[str]) -> list[str]:
    """The memory ids a /memory show DM lists (the header and footer lines left out)."""
    lines = [line for text in output if text.startswith("[DM") for line in text.splitlines()[2:]]
    return [m[1] for line in lines if (m := re.match(r"^([a-z0-9]{5}) ", line))]


def test_a_changing_turn_gets_one_ephemeral_receipt_whose_undo_is_the_historys(receipts_stack):
    running, jev, person, http = receipts_stack
    ann = person("ann-receipts")
    seq = last_seq(running, http)
    out = "\n".join(ann.chat(f"I love {MARKER} *kites*"))
    [receipt] = receipts_since(running, http, seq)  # one Discord request for the turn's changes
    body = receipt["body"]
    assert "\\*kites\\*" in body["content"]  # the memory's text shown as written, never as markup
    assert body["flags"] & 64 and body["allowed_mentions"] == {"parse": []}  # only they see it, nobody pinged
    assert "(only you can see this) What I just changed" in out and "added" in out and "kites" in out, out
    [undo] = buttons_of(body)
    assert undo["custom_id"].startswith(f"{UNDO_BUTTON}:{ann.user_id}:")
    memory_id = re.search(r"memory ([a-z0-9]{5}) added", body["content"])[1]

    # The same button the history shows for that change: the same ledger row.
    ann.history()
    assert undo["custom_id"] in [b["custom_id"] for b in ann.buttons]

    # Someone else pressing it changes nothing; the person's press undoes the add.
    bob = person("bob-receipts", ann.channel_id)
    assert "only the person whose history" in "\n".join(bob.click(undo["custom_id"]))
    assert memory_id in shown_ids(ann.show())
    assert f"Undone: memory {memory_id}" in "\n".join(ann.click(undo["custom_id"]))
    assert memory_id not in shown_ids(ann.show())
    # ... once: the record is no longer what the add left
    assert "Not undone" in "\n".join(ann.click(undo["custom_id"]))


def test_no_receipt_when_nothing_changed_or_when_switched_off(receipts_stack):
    running, jev, person, http = receipts_stack
    cid = person("cid-receipts")
    jev.set_worth(0.1)  # not worth keeping: nothing changes
    try:
        seq = last_seq(running, http)
        cid.chat(f"hmm {MARKER} ok")
        assert receipts_since(running, http, seq) == []
        # no message with buttons but the reply's own "Why?" (the first-use notice has none)
        followups = [e for e in events(running, http, seq) if e["kind"] == "followup"]
        assert [buttons_of(e["body"]) for e in followups] == [[]] * len(followups)
    finally:
        jev.clear()
    assert "Receipts are off" in "\n".join(cid.receipts(False))
    assert "already off" in "\n".join(cid.receipts(False))
    seq = last_seq(running, http)
    cid.chat(f"I grow {MARKER} basil on my balcony")
    assert receipts_since(running, http, seq) == []
    shown = cid.show()
    assert "Receipts: off" in "\n".join(shown) and len(shown_ids(shown)) == 1  # learned, only not told
    [exported] = [t for t in cid.export() if t.startswith("[attached file")]
    assert json.loads(exported.split("\n", 1)[1])["memorySwitch"]["receipts"] is False  # exported with the switch
    assert "Receipts are on" in "\n".join(cid.receipts(True))
    assert "Receipts: on" in "\n".join(cid.show())


def test_remember_this_answers_with_the_receipt(receipts_stack):
    running, jev, person, http = receipts_stack
    dot = person("dot-receipts")
    out = "\n".join(dot.remember(f"My {MARKER} cat is called Miso"))
    assert "(only you can see this) What I just changed" in out and "Miso" in out, out
    assert any(b["custom_id"].startswith(UNDO_BUTTON) for b in dot.buttons)


def test_why_lists_the_prompts_memories_to_the_asker_only(receipts_stack, ledger):
    running, jev, person, http = receipts_stack
    eve = person("eve-why")
    eve.chat(f"I play the {MARKER} cello")
    [cello] = shown_ids(eve.show())
    seq = last_seq(running, http)
    eve.chat("what should I practise tonight?")
    [reply] = [e for e in events(running, http, seq) if e["kind"] == "edit"]
    [why] = buttons_of(reply["body"])
    assert why["label"] == "Why?" and why["custom_id"].startswith(f"{BECAUSE_BUTTON}:{eve.user_id}:")
    assert re.fullmatch(rf"{BECAUSE_BUTTON}:\d+:\d+", why["custom_id"])  # ids only, no text

    # The reply's read row is named after its interaction: the button's answer stands on it.
    interaction_id = why["custom_id"].rsplit(":", 1)[1]
    [named] = [r for r in ledger(eve.user_id) if r[2].endswith(f"#reply-{interaction_id}")]
    assert named[1] == "reply prompt" and named[3] == [{"S": cello}]

    # Someone else: a polite refusal, nothing shown, no read of eve's memories (nor fay's) logged.
    fay = person("fay-why", eve.channel_id)
    before = ledger(eve.user_id)
    refused = "\n".join(fay.click(why["custom_id"]))
    assert "only the person this reply answered" in refused and "cello" not in refused
    assert ledger(eve.user_id) == before and ledger(fay.user_id) == []

    answer = "\n".join(eve.click(why["custom_id"]))
    [shown] = [r for r in ledger(eve.user_id) if r not in before]  # showing them is one read of eve's
    assert shown[1] == "reply why" and shown[3] == [{"S": cello}]
    assert "(only you can see this)" in answer and cello in answer and "cello" in answer, answer
    assert "learned 20" in answer  # when it was learned
    # Forgotten since: the same button says so.
    eve.forget(cello)
    assert f"{cello}: gone since" in "\n".join(eve.click(why["custom_id"]))


def test_why_says_none_when_no_memory_was_in_the_prompt(receipts_stack):
    running, jev, person, http = receipts_stack
    gus = person("gus-why")
    jev.set_worth(0.1)
    try:
        seq = last_seq(running, http)
        gus.chat("hello there")
    finally:
        jev.clear()
    [reply] = [e for e in events(running, http, seq) if e["kind"] == "edit"]
    [why] = buttons_of(reply["body"])
    assert "No memories of yours were in that reply's prompt" in "\n".join(gus.click(why["custom_id"]))


def test_the_nights_changes_are_told_once_on_the_next_use(receipts_stack):
    running, jev, person, http = receipts_stack
    hal = person("hal-overnight")
    hal.chat(f"I am learning {MARKER} Portuguese")
    now = iso(window_for(utcnow()).end + timedelta(days=1))
    run = http.post(
        f"{running.url}/local/nightly",
        json={"now": now},
        headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
        timeout=300,
    )
    assert run.status_code == 200, run.text
    changed = [e for e in run.json()["summary"]["added"]]
    assert changed  # the night learned from the day again (Jev adds)
    out = "\n".join(hal.chat("good morning"))
    line = re.search(r"Overnight I changed (\d+) of your memories here", out)
    assert line and int(line[1]) >= 1, out
    history = "\n".join(hal.button_starting(OVERNIGHT_BUTTON))
    assert "by the night" in history, history
    assert "Overnight" not in "\n".join(hal.chat("and good afternoon"))  # told once


def test_a_memory_moved_everywhere_follows_its_person_and_only_them(receipts_stack):
    running, jev, person, http = receipts_stack
    ivy = person("ivy-everywhere")
    ivy.chat(f"My {MARKER} favourite tea is genmaicha")
    [tea] = shown_ids(ivy.show())
    assert "now goes with you" in "\n".join(ivy.everywhere(tea))
    listing = "\n".join(ivy.show())
    assert "Everywhere (read in every server and DM):" in listing and tea in listing
    # /memory here's autocomplete offers the everywhere ones, forget's those of this scope
    assert [c.split(":")[0].strip() for c in ivy.suggest("", "here")] == [tea]
    assert ivy.suggest("", "forget") == ["  (no suggestions)"]
    # /memory why explains it, as one of hers everywhere (its messages' server is not named)
    why_tea = "\n".join(ivy.why(tea))
    assert "is one of your “everywhere” memories" in why_tea and "discord.com" not in why_tea, why_tea

    # Another server, and the DM: the reply reads it there (its Why? lists it).
    for where in ({"guild_id": OTHER_GUILD}, {"guild_id": None}):
        ivy_there = person("ivy-everywhere", **where)
        jev.set_worth(0.1)
        try:
            seq = last_seq(running, http)
            ivy_there.chat("what tea should I buy?")
        finally:
            jev.clear()
        [reply] = [e for e in events(running, http, seq) if e["kind"] == "edit"]
        [why] = buttons_of(reply["body"])
        assert tea in "\n".join(ivy_there.click(why["custom_id"]))
        assert "is one of your “everywhere” memories" in "\n".join(ivy_there.why(tea))
    # Never another person's: someone else in the same server reads none of it.
    jon = person("jon-everywhere", ivy.channel_id)
    assert "was not found" in "\n".join(jon.why(tea))
    seq = last_seq(running, http)
    jon.chat("what tea should I buy?")
    [reply] = [e for e in events(running, http, seq) if e["kind"] == "edit"]
    assert tea not in "\n".join(jon.click(buttons_of(reply["body"])[0]["custom_id"]))

    # Exported, marked by its scope.
    [exported] = [t for t in ivy.export() if t.startswith("[attached file")]
    scopes = {s["scope"]: s for s in json.loads(exported.split("\n", 1)[1])["scopes"]}
    assert [m["id"] for m in scopes["everywhere"]["memories"]] == [tea]

    # Moved back, then everywhere again; a forget-all here keeps it and says so.
    assert "is back" in "\n".join(ivy.here(tea))
    assert tea in shown_ids(ivy.show())
    ivy.everywhere(tea)
    ivy.chat(f"I also like {MARKER} hojicha")
    ivy.forget_all()
    done = "\n".join(ivy.click())
    assert "1 of your “everywhere” memories remain" in done, done
    assert tea in shown_ids(ivy.show())
    ivy.forget_all_everywhere()
    done = "\n".join(ivy.click())
    assert "Forgotten too: 1 “everywhere” memories" in done, done
    assert shown_ids(ivy.show()) == []
    # One of them forgotten by id from anywhere, as show lists it.
    ivy.chat(f"I love {MARKER} sencha too")
    [sencha] = shown_ids(ivy.show())
    ivy.everywhere(sencha)
    assert "Forgotten" in "\n".join(ivy_there.forget(sencha))
    assert shown_ids(ivy.show()) == []


def test_a_move_is_undone_from_history_and_erased_with_its_person(receipts_stack, moto_server):
    running, jev, person, http = receipts_stack
    kim = person("kim-everywhere")
    kim.chat(f"I run {MARKER} marathons")
    [run_id] = shown_ids(kim.show())
    kim.everywhere(run_id)
    page = "\n".join(kim.history())
    assert f"memory {run_id} moved by you" in page, page
    [undo_move] = [b["custom_id"] for b in kim.buttons if b["label"] == "Undo 1"]
    assert f"Undone: memory {run_id}" in "\n".join(kim.click(undo_move))
    shown = kim.show()
    assert run_id in shown_ids(shown) and "Everywhere (" not in "\n".join(shown)  # back here only

    kim.everywhere(run_id)
    pages = moto_server.client().get_paginator("scan").paginate(TableName=PREFIX + "memories", ConsistentRead=True)
    mine = [i for page in pages for i in page["Items"] if i.get("user_id", {}).get("S") == kim.user_id]
    assert [i["scope"]["S"] for i in mine if "text" in i] == ["everywhere"]  # in their own scope before
    erased = http.post(
        f"{running.url}/memory/erase",
        json={"userId": kim.user_id},
        headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
    )
    assert erased.status_code == 200, erased.text
    pages = moto_server.client().get_paginator("scan").paginate(TableName=PREFIX + "memories", ConsistentRead=True)
    assert [i for page in pages for i in page["Items"] if i.get("user_id", {}).get("S") == kim.user_id] == []
    assert shown_ids(kim.show()) == []
    assert "don't remember anything" in "\n".join(kim.show())


def test_nothing_of_what_was_said_or_remembered_reached_a_log_line(receipts_stack):
    running, jev, person, http = receipts_stack
    http.post(f"{running.url}/local/drain", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
    assert "level" in "".join(running.output)
    assert [line for line in running.output if MARKER in line] == []
