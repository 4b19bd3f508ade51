"""Typed hand-offs between functions, and the scope an interaction's memories live in."""

from __future__ import annotations

import json

import pytest

from memorybot.core.night.nightly_jobs import ReviewMark, RunPlan, SpeakerMark, SpeakerTask
from memorybot.core.record.domain import DM_SCOPE, GLOBAL_SCOPE, ScopeMode, scope_for
from memorybot.core.record.jobs import BadJob, ExtractionJob, ReplyJob
from memorybot.discord import interactions, requests

REPLY = ReplyJob("11", "tok", "22", "33", "44", "alice", "guild:55")


@pytest.mark.parametrize("job", [REPLY, ExtractionJob.after_reply(REPLY, "66")])
def test_each_job_round_trips_through_json(job):
    event = json.loads(json.dumps(job.to_json()))
    assert type(job).from_json(event) == job


def test_the_extraction_job_continues_the_reply_job():
    job = ExtractionJob.after_reply(REPLY, "66")
    assert (job.interaction_id, job.user_id, job.scope, job.up_to_message_id) == ("11", "44", "guild:55", "66")


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("scope"),  # missing
        lambda e: e.update(scop="x"),  # unknown (a typo)
        lambda e: e.update(user_id=44),  # not text
        lambda e: e.update(user_id=None),
    ],
)
def test_a_job_that_does_not_parse_is_refused(mutate):
    event = REPLY.to_json()
    mutate(event)
    with pytest.raises(BadJob) as refused:
        ReplyJob.from_json(event)
    assert "alice" not in str(refused.value) and "tok" not in str(refused.value)  # names fields, never values


def test_a_job_is_an_object():
    for event in (None, [], "x", 3):
        with pytest.raises(BadJob):
            ExtractionJob.from_json(event)


def test_a_step_mark_stored_before_a_field_existed_reads_with_its_default():
    """The run store keeps marks as JSON; one written by an older deploy lacks the newer fields."""
    assert SpeakerMark.from_json({"status": "failed", "error": "ModelUnavailable"}) == SpeakerMark(
        "failed", error="ModelUnavailable"
    )
    assert ReviewMark.from_json({"diary": "", "failures": 1}) == ReviewMark(failures=1)
    assert SpeakerMark.from_json(json.loads(json.dumps(SpeakerMark("done", chunks=2).to_json()))).chunks == 2


@pytest.mark.parametrize(
    "kind, event, refused",
    [
        (SpeakerMark, {"chunks": 1}, "missing ['status']"),
        (SpeakerMark, {"status": "done", "chunks": "1"}, "wrong type: ['chunks']"),
        (SpeakerMark, {"status": "done", "chunks": True}, "wrong type: ['chunks']"),
        (
            RunPlan,
            {"run_id": 1, "day_label": "d", "as_of": "t", "manifest": "m", "speakers": 1, "x": 0},
            "unknown ['x']",
        ),
        (SpeakerTask, {"run_id": 1, "scope": "s", "user_id": "u", "messages": [["c", 1]]}, "wrong type: ['messages']"),
        (ReplyJob, {**REPLY.to_json(), "user_id": 44}, "wrong type: ['user_id']"),
    ],
)
def test_jobs_step_payloads_and_marks_are_refused_by_the_one_validator(kind, event, refused):
    with pytest.raises(BadJob) as raised:
        kind.from_json(event)
    assert str(raised.value).startswith(f"{kind.__name__}: ") and refused in str(raised.value)


def test_log_ids_of_a_job_carry_no_text_or_token():
    assert REPLY.ids() == {
        "interaction_id": "11",
        "application_id": "22",
        "channel_id": "33",
        "user_id": "44",
        "scope": "guild:55",
    }


# ---------------------------------------------------------------- scopes


def test_scopes_by_mode_and_place():
    assert scope_for(ScopeMode.GUILD, guild_id="9", channel_id="1", bot_dm=False) == "guild:9"
    assert scope_for(ScopeMode.GUILD, guild_id=None, channel_id="1", bot_dm=True) == DM_SCOPE
    assert scope_for(ScopeMode.GUILD, guild_id=None, channel_id="1", bot_dm=False) == "channel:1"
    for guild, dm in (("9", False), (None, True), (None, False)):
        assert scope_for(ScopeMode.GLOBAL, guild_id=guild, channel_id="1", bot_dm=dm) == GLOBAL_SCOPE


def _payload(**place) -> bytes:
    base = {
        "id": "11",
        "application_id": "22",
        "type": 2,
        "token": "t",
        "channel_id": "33",
        "data": {"name": "memory", "options": [{"type": 1, "name": "show", "options": []}]},
    }
    return json.dumps({**base, **place}).encode()


USER = {"id": "44", "username": "alice"}


@pytest.mark.parametrize(
    ("place", "scope"),
    [
        ({"guild_id": "55", "member": {"user": USER}}, "guild:55"),
        ({"context": 1, "user": USER}, DM_SCOPE),
        ({"channel": {"id": "33", "type": 1}, "user": USER}, DM_SCOPE),
        ({"context": 2, "channel": {"id": "33", "type": 3}, "user": USER}, "channel:33"),  # a group DM
    ],
)
def test_an_interaction_names_its_scope(place, scope):
    request = requests.parse(_payload(**place), ScopeMode.GUILD)
    assert request.caller.scope == scope and request.caller.owner.user_id == "44"
    assert requests.parse(_payload(**place), ScopeMode.GLOBAL).caller.scope == GLOBAL_SCOPE


@pytest.mark.parametrize(
    "place",
    [
        {"member": {"user": USER}},  # a guild interaction without its guild id: its scope is unknown
        {"guild_id": "55"},  # no user at all
        {"guild_id": "5x5", "member": {"user": USER}},
    ],
)
def test_an_interaction_whose_owner_is_unknown_is_refused(place):
    with pytest.raises(requests.BadRequest):
        requests.parse(_payload(**place), ScopeMode.GUILD)


def test_show_says_which_scope_it_lists():
    assert "server 55" in interactions.dm_text(["abcde x"], "guild:55")
    assert "direct messages" in interactions.dm_text(["abcde x"], DM_SCOPE)
    assert "everywhere" in interactions.dm_text(["abcde x"], GLOBAL_SCOPE)


@pytest.mark.parametrize("worker", ["reply", "extraction"])
def test_a_worker_refuses_a_job_that_does_not_parse_without_raising(worker, caplog):
    """Raising would make Lambda retry a payload that can never work, then dead-letter it."""
    import importlib

    from memorybot.adapters.invoker import LocalContext

    handler = importlib.import_module(f"memorybot.handlers.{worker}").handler
    answer = handler(
        {"interaction_id": "11", "channel_id": "33", "user_id": "44", "secret_text": "x"}, LocalContext(worker)
    )
    assert answer == {"status": "refused"}
    [refusal] = [r for r in caplog.records if r.getMessage() == "job refused"]
    assert refusal.levelname == "ERROR" and "secret_text" in refusal.reason
