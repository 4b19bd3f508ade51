"""Your data, your rights, over HTTP against the local stack in its own process: a profile
shown completely across DMs, why (links to the person's own messages only), forgetting that
sticks exactly, export, forget-all with its confirmation button, and erasure followed by a
rollback that cannot restore what was erased. Every log line the stack printed is checked
for memory and message text at the end."""

from __future__ import annotations

import itertools
import json
import re
from datetime import timedelta

import pytest
from stack_process import stack_with_jev

from memorybot.core.night.window import window_for
from memorybot.core.record.domain import is_memory_id, iso, utcnow
from memorybot.discord.requests import FORGET_ALL_BUTTON
from memorybot.local.client import LocalClient

ADMIN_SECRET = "your-data-admin-secret-7"
ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}
_channels = itertools.count(1500000000000000001)
MARKER = "kumquatmarker"  # in every text said below: any log line carrying it leaks text


@pytest.fixture(scope="module")
def data_stack(tmp_path_factory):
    with stack_with_jev(tmp_path_factory.mktemp("your-data-state"), ADMIN_SECRET, _channels) as stack:
        yield stack


def dm_lines(output: list[str]) -> list[str]:
    return [line for text in output if text.startswith("[DM") for line in text.splitlines()[1:]]


def listed_ids(output: list[str]) -> list[str]:
    return [line.split()[0] for line in dm_lines(output) if line.split() and is_memory_id(line.split()[0])]


def test_a_profile_of_25_is_shown_completely_across_dms_newest_first_and_autocomplete_searches_all(data_stack):
    running, jev, person, http = data_stack
    ann = person("ann-25")
    for i in range(25):
        ann.chat(
            f"I have {MARKER} stamp number {i:02d} from a long trip across the northern mountains and the quiet valleys"
        )
    shown = ann.show()
    dms = [text for text in shown if text.startswith("[DM")]
    assert len(dms) >= 2 and all(len(text.split("\n", 1)[1]) <= 2000 for text in dms), dms
    ids = listed_ids(shown)
    assert len(ids) == len(set(ids)) == 25
    stamps = [re.search(r"number (\d\d)", line)[1] for line in dm_lines(shown) if "number" in line]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    assert "I sent you a DM" in shown[0]
    oldest = ids[-1]
    assert any(oldest in line for line in ann.suggest("number 00"))  # beyond the newest ten


def test_why_links_to_the_persons_own_messages_only(data_stack):
    running, jev, person, http = data_stack
    bea = person("bea-why")
    cid = person("cid-why", bea.channel_id)  # the same busy channel
    bea.chat(f"I love {MARKER} tomatoes")
    cid.chat(f"I like {MARKER} boats")
    bea.chat(f"I also love {MARKER} chickens")
    [newest] = listed_ids(bea.show())[:1]
    answer = "\n".join(bea.why(newest))
    links = re.findall(r"https://discord.com/channels/(\d+)/(\d+)/(\d+)", answer)
    assert links and all(channel == bea.channel_id for _, channel, _ in links)
    assert MARKER not in answer and "boats" not in answer and "tomatoes" not in answer
    cid_ids = {
        link[2]
        for link in re.findall(
            r"https://discord.com/channels/(\d+)/(\d+)/(\d+)", "\n".join(cid.why(listed_ids(cid.show())[0]))
        )
    }
    assert cid_ids and not cid_ids & {link[2] for link in links}
    assert "was not found" in "\n".join(bea.why(listed_ids(cid.show())[0]))  # someone else's id
    assert "was not found" in "\n".join(bea.why("zzzzz"))


def test_forget_then_nightly_skips_exactly_the_forgotten_sources_and_erase_then_rollback(data_stack):
    running, jev, person, http = data_stack
    dan = person("dan-forget")
    eve = person("eve-erase", dan.channel_id)
    dan.chat(f"I love {MARKER} natto")
    forgotten = listed_ids(dan.show())[0]
    dan.chat(f"I play the {MARKER} cello")
    assert "Forgotten" in "\n".join(dan.forget(forgotten))
    eve.chat(f"I like {MARKER} scarves")
    eve_live = set(listed_ids(eve.show()))
    jev.clear()  # only the nightly run's questions from here

    now = iso(window_for(utcnow()).end + timedelta(days=1))
    run = http.post(f"{running.url}/local/nightly", json={"now": now}, headers=ADMIN).json()
    assert run["runId"] >= 1, run
    dan_exchanges = [
        b["exchange"] for b in jev.bodies("/worth") if "cello" in b["exchange"] or "natto" in b["exchange"]
    ]
    assert dan_exchanges and all("natto" not in e for e in dan_exchanges)  # the forgotten fact's message: skipped
    assert any("cello" in e for e in dan_exchanges)  # the unrelated fact from earlier that day: consolidated
    assert all("natto" not in line for line in dm_lines(dan.show()))

    # Erasure: 400 for unknown fields, 404 for an unknown person, a dry run changes nothing.
    erase = f"{running.url}/memory/erase"
    assert http.post(erase, json={"userId": eve.user_id, "extra": 1}, headers=ADMIN).status_code == 400
    assert http.post(erase, json={"userId": eve.user_id}).status_code == 401
    assert http.post(erase, json={"userId": "123456789012345678"}, headers=ADMIN).status_code == 404
    preview = http.post(erase, json={"userId": eve.user_id, "dryRun": True}, headers=ADMIN).json()
    eve_night = set(listed_ids(eve.show()))
    assert preview["memoriesDeleted"] == len(eve_night) and eve_night > eve_live, (preview, eve_night, eve_live)
    done = http.post(erase, json={"userId": eve.user_id}, headers=ADMIN)
    assert done.status_code == 200 and done.json()["messagesDeleted"] >= 2, done.text
    assert MARKER not in done.text
    assert "don't remember anything" in "\n".join(eve.show())
    [attached] = [t for t in eve.export() if t.startswith("[attached file")]
    exported = json.loads(attached.split("\n", 1)[1])
    assert all(s["memories"] == [] for s in exported["scopes"]) and MARKER not in attached
    assert all(r["before"] is None and r["after"] is None for s in exported["scopes"] for r in s["ledger"])
    assert "erase" in {r["action"] for s in exported["scopes"] for r in s["ledger"]}  # the erasure's own row

    rollback = http.post(f"{running.url}/memory/rollback", json={"runId": run["runId"]}, headers=ADMIN).json()
    assert set(rollback["erased"]) == eve_night - eve_live  # the night's rows about eve: skipped, not restorable
    assert "don't remember anything" in "\n".join(eve.show())


def test_export_is_a_json_file_of_every_scope_and_nothing_of_anyone_else(data_stack):
    running, jev, person, http = data_stack
    fay = person("fay-export")
    gus = person("gus-export", fay.channel_id)
    fay.chat(f"I cook {MARKER} sourdough")
    gus.chat(f"I like {MARKER} walls")
    fay_dm = LocalClient(
        running.url, "fay-export", fay.signing_key, "1599999999999999991", None, http=http, admin_secret=ADMIN_SECRET
    )
    fay_dm.chat(f"I like {MARKER} laps")
    output = fay.export()
    [attached] = [text for text in output if text.startswith("[attached file memorybot-export.json]")]
    data = json.loads(attached.split("\n", 1)[1])
    assert data["userId"] == fay.user_id
    assert {s["scope"] for s in data["scopes"]} == {f"guild:{fay.guild_id}", "dm"}
    texts = [m["text"] for s in data["scopes"] for m in s["memories"]]
    assert any("sourdough" in t for t in texts) and any("laps" in t for t in texts)
    assert "walls" not in attached and gus.user_id not in attached
    rows = [r for s in data["scopes"] for r in s["ledger"]]
    assert {r["action"] for r in rows} >= {"add"} and all(r["action"] != "read" for r in rows)
    assert all(set(r) >= {"action", "actor", "reason", "at", "before", "after", "sourceMessageIds"} for r in rows)
    assert all(r["sourceMessageIds"] for r in rows if r["action"] == "add")


def test_forget_all_is_confirmed_only_by_the_owner_and_only_in_time(data_stack):
    running, jev, person, http = data_stack
    hal = person("hal-all")
    ivy = person("ivy-all", hal.channel_id)
    hal.chat(f"I like {MARKER} kites")
    hal.chat(f"I drink {MARKER} tea")
    before = listed_ids(hal.show())
    asked = "\n".join(hal.forget_all())
    assert f"Forget all {len(before)} memories" in asked and hal.last_button.startswith(FORGET_ALL_BUTTON)

    refused = "\n".join(ivy.click(hal.last_button))  # another person clicks hal's button
    assert "only the person who asked" in refused and listed_ids(hal.show()) == before
    stale = f"{FORGET_ALL_BUTTON}:{hal.user_id}:{int(utcnow().timestamp()) - 16 * 60}"
    assert "expired" in "\n".join(hal.click(stale)) and listed_ids(hal.show()) == before

    done = "\n".join(hal.click())
    assert f"Forgotten: {len(before)} memories" in done and "(the confirmation now reads)" in done
    assert "don't remember anything" in "\n".join(hal.show())


def test_nothing_of_what_was_said_or_remembered_reached_a_log_line(data_stack):
    running, jev, person, http = data_stack
    http.post(f"{running.url}/local/drain", headers=ADMIN)
    output = "".join(running.output)
    assert "level" in output  # logs were captured
    assert [line for line in running.output if MARKER in line] == []
