"""/memory history and its Undo over HTTP against the local stack in its own process, signed as
Discord signs: the timeline (date, who, before → after), paging to older changes, Undo only by
the owner, a change made since is never overwritten, what forget-all removed is never offered
back, the undo's own ledger row, and no memory text in any log line."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from stack_process import stack_with_jev

from memorybot.discord.history_view import UNDO_BUTTON, undo_button

ADMIN_SECRET = "history-admin-secret-5"
_channels = itertools.count(1600000000000000001)
MARKER = "quincemarker"  # in every text said below: any log line carrying it leaks text


@pytest.fixture(scope="module")
def history_stack(tmp_path_factory):
    with stack_with_jev(tmp_path_factory.mktemp("history-state"), ADMIN_SECRET, _channels) as stack:
        yield stack


def undo_buttons(client) -> list[str]:
    return [b["custom_id"] for b in client.buttons if b["custom_id"].startswith(UNDO_BUTTON)]


def test_the_timeline_says_when_who_and_what_and_undo_is_the_owners_only(history_stack):
    running, jev, person, http = history_stack
    ann = person("ann-history")
    bob = person("bob-history", ann.channel_id)
    ann.chat(f"I love {MARKER} kites")
    page = "\n".join(ann.history())
    assert "(only you can see this)" in page and "added by a conversation" in page, page
    assert re.search(r"1\. 20\d\d-\d\d-\d\d \d\d:\d\d JST · memory [a-z0-9]{5} added", page), page
    assert "— → “" in page and "kites" in page  # nothing before, the start of the memory after
    [add_undo] = undo_buttons(ann)
    memory_id = re.search(r"memory ([a-z0-9]{5}) added", page)[1]

    # Someone else presses it (or forges one naming themselves): refused, nothing changes.
    assert "only the person whose history" in "\n".join(bob.click(add_undo))
    key = add_undo.split(":", 2)[2]  # memory-undo:<user id>:<ledger key>
    assert "not one of yours" in "\n".join(bob.click(undo_button(bob.user_id, key)))
    assert memory_id in "\n".join(ann.show())
    assert "Nothing about you has changed" in "\n".join(bob.history())  # bob's own, empty timeline

    # Forgotten since: the add's old button finds the record changed and writes nothing.
    ann.forget(memory_id)
    assert "has changed since" in "\n".join(ann.click(add_undo))
    page = "\n".join(ann.history())
    assert "forgotten by you" in page and page.count("Undo") >= 1
    # The forget is still current: its Undo brings the memory back, with its id.
    answer = "\n".join(ann.handle_line("/undo 1") or [])
    assert f"Undone: memory {memory_id} is back" in answer, answer
    assert memory_id in "\n".join(ann.show())
    [exported] = [t for t in ann.export() if t.startswith("[attached file")]
    rows = [r for s in json.loads(exported.split("\n", 1)[1])["scopes"] for r in s["ledger"]]
    undo = rows[-1]
    assert (undo["action"], undo["actor"], undo["memoryIds"], undo["before"]) == ("undo", "command", [memory_id], None)
    assert "kites" in undo["after"]["text"]


def test_what_forget_all_removed_is_never_offered_back(history_stack):
    running, jev, person, http = history_stack
    cid = person("cid-history")
    cid.chat(f"I love {MARKER} basil")
    cid.chat(f"I like {MARKER} chess")
    cid.history()
    old_undos = undo_buttons(cid)
    assert len(old_undos) == 2
    cid.forget_all()
    assert "Forgotten: 2 memories" in "\n".join(cid.click())
    page = "\n".join(cid.history())
    assert page.count("forgotten by you") == 2
    assert undo_buttons(cid) == []  # neither the forget-all's deletes nor the adds they replaced
    for button in old_undos:  # the adds' buttons from before: the records are gone
        assert "Not undone" in "\n".join(cid.click(button))
    assert "don't remember anything" in "\n".join(cid.show())


def test_older_changes_are_a_page_away_and_none_is_repeated(history_stack):
    running, jev, person, http = history_stack
    dot = person("dot-history")
    for i in range(8):
        dot.chat(f"I love {MARKER} shells number {i} from the beach")
    first = "\n".join(dot.history())
    assert "Older" in first
    second = "\n".join(dot.handle_line("/older") or [])
    assert "(the page now reads) Older changes" in second, second
    ids = re.findall(r"memory ([a-z0-9]{5}) added", first) + re.findall(r"memory ([a-z0-9]{5}) added", second)
    assert len(ids) == len(set(ids)) == 8


def test_nothing_of_what_was_said_or_remembered_reached_a_log_line(history_stack):
    running, jev, person, http = history_stack
    http.post(f"{running.url}/local/drain", headers={"Authorization": f"Bearer {ADMIN_SECRET}"})
    assert "level" in "".join(running.output)
    assert [line for line in running.output if MARKER in line] == []
