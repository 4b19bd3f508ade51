"""Least privilege proven against the code: every AWS request each function makes, through its
real handler against moto, must be allowed by that function's policy in the synthesized
template; every grant must be used by some request (or say here why not).

A new function (a Step Functions step, say) is covered by adding its scenario to SCENARIOS:
the test fails while any FunctionSpec has none.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import boto3
import pytest

from fakes import ScriptedChat, ScriptedJev, memory
from faults import InjectedFault
from frontdoor import (
    ALICE,
    APP_ID,
    BOB,
    CHANNEL,
    GUILD,
    PUBLIC_KEY,
    SCOPE,
    admin_event,
    chat,
    click,
    command,
    event,
    export,
    forget,
    forget_all,
    pause,
    remember_this,
    resume,
    show,
    why,
)
from iam_contract import BUCKET_ENV, Need, Policy, Recorder, check, key_needs, lambda_client, policies, s3_client
from infra.stack import FUNCTIONS, LEDGER_ACTIONS_ALLOWED, LEDGER_REDACTION_ATTRIBUTES, LEDGER_REDACTOR
from loopback.bedrock_server import BedrockServer
from memorybot import bootstrap, tables
from memorybot.adapters.bedrock import bedrock_client
from memorybot.adapters.discord_rest import DiscordRest
from memorybot.adapters.dynamodb_memories import (
    MARKER_PREFIX,
    MESSAGE_MARKER,
    OVERNIGHT_KEY,
    SMALL_PROFILE_ITEMS,
    DynamoMemoryStore,
)
from memorybot.adapters.dynamodb_messages import DynamoMessageStore
from memorybot.adapters.dynamodb_servers import DynamoServerStore
from memorybot.adapters.embeddings import BedrockTitanEmbeddings
from memorybot.adapters.invoker import LambdaInvoker, LocalContext
from memorybot.adapters.manifests import S3Manifests
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.core.night import nightly_steps
from memorybot.core.night.consolidation import manifest_key
from memorybot.core.night.nightly_jobs import RunPlan
from memorybot.core.night.window import STALE_AFTER, window_for
from memorybot.core.record.changes import Change
from memorybot.core.record.domain import (
    MEMORY_ID_ALPHABET,
    Action,
    Actor,
    Message,
    Owner,
    SourceRef,
    snowflake_at,
    utcnow,
)
from memorybot.core.record.jobs import ExtractionJob, ReplyJob
from memorybot.core.rights.servers import ChangeRow
from memorybot.discord.requests import forget_all_button
from memorybot.discord.signature import Verifier
from memorybot.local import discord_recorder, moto_dynamo

ADMIN_SECRET = "iam-contract-admin-secret"
WORKERS = {"reply": "Reply", "extraction": "Extraction"}  # the hand-offs, by callee function name
MANIFESTS = BUCKET_ENV["MEMORYBOT_MANIFEST_BUCKET"]  # the manifest bucket's logical name
_prefixes = itertools.count(1)


class Harness:
    """One container (so one set of AWS clients) per function, as each Lambda has its own;
    the process's container is the calling function's while its handler runs.

    Every function's manifests are the real ``S3Manifests`` on one moto bucket, through an S3
    client of its own: whatever a function reads or writes there is recorded as its request
    (deployed, only the functions whose environment names the bucket have it: see
    test_a_function_that_uses_the_manifest_bucket_is_given_it)."""

    def __init__(self, moto_server: Any, discord_base: str, recorder: Recorder, bedrock_url: str) -> None:
        seed_client = moto_server.client()
        self.seed_client = seed_client
        prefix = f"iam{next(_prefixes)}-"
        names = moto_dynamo.create_tables(seed_client, prefix)
        self.bucket = f"{prefix}{MANIFESTS}"
        s3_client(None, "", moto_server.endpoint).create_bucket(Bucket=self.bucket)
        self.settings = Settings(
            table_names=names,
            manifest_bucket=self.bucket,
            discord_api_base=discord_base,
            reply_function_name=WORKERS["reply"],
            extraction_function_name=WORKERS["extraction"],
            plain_secrets={"MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET, "DISCORD_BOT_TOKEN": "contract-token"},
            # One speaker at a time: a fault aimed at "the nth request" must not race another thread's.
            nightly_speaker_concurrency=1,
        )
        self.logical_tables = {physical: logical for logical, physical in names.items()}
        self.logical_buckets = {self.bucket: MANIFESTS}
        self.recorder = recorder
        # Setup and inspection go through clients no function owns: they are not recorded.
        self.memories = DynamoMemoryStore(seed_client, self.settings)
        self.messages = DynamoMessageStore(seed_client, self.settings)
        self.jev, self.chat = ScriptedJev(), ScriptedChat(reply="nice to meet you")
        self.invocations: list[tuple[str, dict]] = []
        self.current: str | None = None
        self.bedrock_url = bedrock_url
        self.containers = {spec.name: self._container(moto_server, spec.name, discord_base) for spec in FUNCTIONS}
        # The Distributed Map's ItemReader reads the manifest with the state machine's role, not a
        # function's: its reads are not recorded (its grant is pinned by test_nightly_state_machine.py).
        self.state_machine = Container(
            self.settings,
            dynamodb_client=seed_client,
            decision_model=self.jev,
            chat_model=self.chat,
            manifest_store=S3Manifests(s3_client(None, "", moto_server.endpoint), self.bucket),
        )

    def _container(self, moto_server: Any, function: str, base: str) -> Container:
        return Container(
            self.settings,
            dynamodb_client=self.recorder.attach(moto_server.client(), function),
            decision_model=self.jev,
            chat_model=self.chat,
            invoker=LambdaInvoker(WORKERS, lambda: lambda_client(self.recorder, function, self.invocations)),
            discord=DiscordRest(base, "contract-token", sleep=lambda s: None),
            discord_interactive=DiscordRest(base, "contract-token", timeout=1.0, max_attempts=1),
            signature_verifier=Verifier(PUBLIC_KEY),
            manifest_store=S3Manifests(s3_client(self.recorder, function, moto_server.endpoint), self.bucket),
            # The real Titan adapter on a loopback Bedrock endpoint: its InvokeModel calls are recorded.
            embedding_model=BedrockTitanEmbeddings(
                self.recorder.attach(
                    bedrock_client(self.settings, session=_bedrock_session(), endpoint_url=self.bedrock_url), function
                ),
                self.settings.bedrock_embedding_model_id,
                self.settings.embedding_dimensions,
            ),
        )

    def container(self) -> Container:
        assert self.current, "a handler asked for its container outside a call"
        return self.containers[self.current]

    def call(self, function: str, event: dict) -> Any:
        [spec] = [s for s in FUNCTIONS if s.name == function]
        module, _, name = spec.handler.rpartition(".")
        handler: Callable = getattr(importlib.import_module(module), name)
        self.current = function
        try:
            return handler(event, LocalContext(f"memorybot-{function.lower()}"))
        finally:
            self.current = None

    def deliver(self) -> list[Any]:
        """Run the queued asynchronous invocations as their callee functions (and what they queue)."""
        answers = []
        while self.invocations:
            function, payload = self.invocations.pop(0)
            answers.append(self.call(function, payload))
        return answers


def body(response: dict) -> Any:
    return json.loads(response["body"])


# ---- the scenarios: what each function does in production, and the ways it can fail -------


def history_command() -> dict:
    return command("memory", [{"type": 1, "name": "history", "options": []}])


def interactions_scenario(h: Harness) -> None:
    kept = memory(ALICE, "kept2", "Loves hiking in the Alps", at=utcnow(), scope=SCOPE)
    # learned from one of Alice's messages: forgetting it records that message as forgotten
    gone = replace(
        memory(ALICE, "g2ne3", "Has an exam on Friday", at=utcnow(), scope=SCOPE),
        sources=(SourceRef(CHANNEL, snowflake_at(utcnow(), 3)),),
    )
    for m in (kept, gone):
        h.memories.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    said = chat("My sister Yuki lives in Osaka")
    h.recorder.lose_answer("Interactions", "TransactWriteItems")  # the line is stored, its answer is lost
    assert body(h.call("Interactions", event(said)))["type"] == 5
    h.recorder.lose_answer("Interactions", "TransactWriteItems")  # the pause commits, its answer is lost
    assert "Paused" in body(h.call("Interactions", event(pause())))["data"]["content"]
    assert "paused" in body(h.call("Interactions", event(show(user=ALICE))))["data"]["content"]
    assert "Resumed" in body(h.call("Interactions", event(resume())))["data"]["content"]
    shown = event(show())
    assert "DM" in body(h.call("Interactions", shown))["data"]["content"]
    h.call("Interactions", shown)  # replayed inside the signature window: answered from the dedup ledger
    assert body(h.call("Interactions", event(forget("go", kind=4))))["type"] == 8
    h.recorder.lose_answer("Interactions", "TransactWriteItems")  # the forget commits, its answer is lost
    assert "Forgotten" in body(h.call("Interactions", event(forget(gone.memory_id))))["data"]["content"]
    # /memory history reads the change rows and each memory's state; Undo of the forget puts the
    # memory back (a Put conditioned on the person's record) with its own ledger row.
    page = body(h.call("Interactions", event(history_command())))["data"]
    undo = page["components"][0]["components"][0]["custom_id"]
    assert "Undone" in body(h.call("Interactions", event(click(undo))))["data"]["content"]
    h.recorder.fail("Interactions", "Query")  # a show whose read fails: its dedup record is given back
    assert body(h.call("Interactions", event(show())))["type"] == 4
    assert "JST" in body(h.call("Interactions", event(why(kept.memory_id))))["data"]["content"]  # the zone
    assert "DM" in body(h.call("Interactions", event(export())))["data"]["content"]
    # "Remember this": the click claims the message (a conditional Put); a second click on it is
    # refused (the claim read back, the forgotten sources read); a failed hand-off gives the claim
    # back (a Delete). The job that runs settles its claim (the extraction function's Update).
    first = remember_this("I play the shakuhachi")
    assert body(h.call("Interactions", event(first)))["type"] == 5
    again = remember_this("I play the shakuhachi", message_id=first["data"]["target_id"])
    assert "already" in body(h.call("Interactions", event(again)))["data"]["content"]
    h.recorder.fail("Interactions", "Invoke")
    assert body(h.call("Interactions", event(remember_this("I keep koi"))))["type"] == 4
    assert body(h.call("Interactions", event(forget_all())))["data"]["components"]
    assert body(h.call("Interactions", event(click(forget_all_button(ALICE, utcnow())))))["type"] == 7
    server_settings_scenario(h)
    # The reply worker, then the extraction worker: the forget-all's deletes (its job) among its work.
    answers = h.deliver()
    assert [a["forgotten"] for a in answers if "forgotten" in a] == [2]


def seed_id(prefix: str, i: int) -> str:
    """A memory id (five characters of the id alphabet) for the ``i``-th seeded memory."""
    return prefix + MEMORY_ID_ALPHABET[i // len(MEMORY_ID_ALPHABET)] + MEMORY_ID_ALPHABET[i % len(MEMORY_ID_ALPHABET)]


def server_settings_scenario(h: Harness) -> None:
    """/memory-settings: an admin's change (the settings and its ledger row, one transaction) and show
    (the settings, the day counters and the recent changes)."""

    def as_admin(sub: dict) -> dict:
        payload = command("memory-settings", [sub])
        payload["member"]["permissions"] = str(1 << 5)
        return event(payload)

    limit = {"type": 1, "name": "daily-limit", "options": [{"type": 4, "name": "turns", "value": 50}]}
    assert "Done" in body(h.call("Interactions", as_admin(limit)))["data"]["content"]
    shown = body(h.call("Interactions", as_admin({"type": 1, "name": "show", "options": []})))["data"]["content"]
    assert "daily limit" in shown


def reply_scenario(h: Harness) -> None:
    # More than ten memories: the reply ranks them, so it embeds its query (the Titan grant). More
    # than a page: ranked from the selection index (built by an extraction's read); the function
    # keeps its copy, and its next turn reads again only the chunk a change touched (BatchGetItem).
    for i in range(SMALL_PROFILE_ITEMS + 2):
        at = utcnow() - timedelta(minutes=i)
        seeded = memory(ALICE, seed_id("rep", i), f"Likes instrument number {i}", at=at, scope=SCOPE)
        h.memories.apply(Change(Action.ADD, None, seeded, "seed"), actor=Actor.EXTRACTION)
    h.memories.read_selected(Owner(SCOPE, ALICE), list, actor=Actor.EXTRACTION, reason="seed: builds the index")
    text = "I started learning the violin"
    said = chat(text)
    h.messages.put(Message(CHANNEL, said["id"], ALICE, "alice", text, scope=SCOPE, conversation_of=ALICE))
    job = ReplyJob(
        said["id"], said["token"], said["application_id"], CHANNEL, ALICE, "alice", SCOPE, "ja", GUILD
    ).to_json()
    h.memories.note_overnight(Owner(SCOPE, ALICE), ["re00p"])  # the night's note: read and claimed by this turn
    h.recorder.lose_answer("Reply", "TransactWriteItems")  # the reply is stored, its answer is lost
    h.call("Reply", dict(job))
    h.call("Reply", dict(job))  # Lambda's redelivery: the stored result, no second post
    cello = memory(ALICE, seed_id("rep", 99), "Likes the cello", scope=SCOPE)
    h.memories.apply(Change(Action.ADD, None, cello, "seed"), actor=Actor.EXTRACTION)  # another function's change
    h.call("Reply", job | {"interaction_id": snowflake_at(utcnow(), 8)})
    h.invocations.clear()  # the extraction of those turns is the extraction scenario's business
    again = job | {"interaction_id": snowflake_at(utcnow(), 9)}
    h.recorder.fail("Reply", "Query")  # a job that fails: Powertools gives its record back for the retry
    with pytest.raises(Exception):
        h.call("Reply", again)


def extraction_scenario(h: Harness) -> None:
    # More than a page of memories: the first read builds the selection index, the next ranks from it.
    for i in range(SMALL_PROFILE_ITEMS + 2):
        at = utcnow() - timedelta(days=1, minutes=i)
        older = memory(BOB, seed_id("stm", i), f"Collects stamp number {i}", at=at, scope=SCOPE)
        h.memories.apply(Change(Action.ADD, None, older, "seed"), actor=Actor.EXTRACTION)
    updated = memory(BOB, "upda2", "Lives in Kyoto", at=utcnow(), scope=SCOPE)
    deleted = memory(BOB, "de2e3", "Exam on Friday", at=utcnow(), scope=SCOPE)
    for m in (updated, deleted):
        h.memories.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    at = utcnow() - timedelta(seconds=30)
    stamps = Message(CHANNEL, snowflake_at(at, 4), BOB, "bob", "I like green tea", scope=SCOPE, conversation_of=BOB)
    h.messages.put(stamps)
    # The first read of a large profile by the extraction: read whole, and the index built from it.
    h.call("Extraction", ExtractionJob(stamps.message_id, CHANNEL, BOB, "bob", SCOPE, stamps.message_id).to_json())
    h.jev.verdicts = {updated.memory_id: "update", deleted.memory_id: "delete"}
    said = Message(
        CHANNEL,
        snowflake_at(utcnow() - timedelta(seconds=5), 1),
        BOB,
        "bob",
        "I moved to Osaka and the exam is over",
        scope=SCOPE,
        conversation_of=BOB,
    )
    reply = Message(
        CHANNEL,
        snowflake_at(utcnow(), 2),
        "app",
        "memorybot",
        "Osaka is lovely",
        is_bot=True,
        scope=SCOPE,
        conversation_of=BOB,
    )
    for m in (said, reply):
        h.messages.put(m)
    job = ExtractionJob(said.message_id, CHANNEL, BOB, "bob", SCOPE, reply.message_id, GUILD).to_json()
    h.recorder.lose_answer("Extraction", "TransactWriteItems")
    answer = h.call("Extraction", dict(job))
    assert answer["updated"] == [updated.memory_id] and answer["deleted"] == [deleted.memory_id] and answer["added"]
    assert h.call("Extraction", dict(job)) == answer  # redelivered
    h.recorder.fail("Extraction", "Query")  # a job that fails: its dedup record is given back
    with pytest.raises(Exception):
        h.call("Extraction", job | {"interaction_id": snowflake_at(utcnow(), 3)})
    h.jev.verdicts = {}


# The nightly steps, in the state machine's order: each scenario hands its answer to the next.
# The manifest is a real object in moto's S3: the plan writes it, the finish reads it.
NIGHTLY: dict[str, Any] = {}


def nightly_claim_scenario(h: Harness) -> None:
    now = utcnow()
    NIGHTLY["now"] = now
    h.recorder.lose_answer("NightlyClaim", "TransactWriteItems")  # the claim commits, its answer is lost
    claimed = h.call("NightlyClaim", {"time": now.isoformat()})
    assert claimed["status"] == "claimed", claimed
    assert h.call("NightlyClaim", {"time": now.isoformat()})["status"] == "already_claimed"
    NIGHTLY["claimed"] = claimed


def nightly_plan_scenario(h: Harness) -> None:
    window = window_for(NIGHTLY["now"])
    for n, (who, text) in enumerate([(ALICE, "I adopted a dog named Pochi"), (BOB, "I play the cello")]):
        h.messages.put(
            Message(
                CHANNEL,
                snowflake_at(window.start + timedelta(hours=1 + n), n),
                who,
                who,
                text,
                scope=SCOPE,
                conversation_of=who,
            )
        )
    h.recorder.lose_answer("NightlyPlan", "PutObject")  # the manifest is written, the answer lost: Retry
    with pytest.raises(InjectedFault):
        h.call("NightlyPlan", dict(NIGHTLY["claimed"]))
    planned = h.call("NightlyPlan", dict(NIGHTLY["claimed"]))  # the same key, written again whole
    assert planned["speakers"] == 2, planned
    assert planned["manifest"] == manifest_key(planned["run_id"])
    NIGHTLY["plan"] = planned


def nightly_speaker_scenario(h: Harness) -> None:
    gone = memory(BOB, "dog2e", "Is afraid of dogs", at=utcnow(), scope=SCOPE)
    h.memories.apply(Change(Action.ADD, None, gone, "seed"), actor=Actor.EXTRACTION)
    h.jev.verdicts = {gone.memory_id: "delete"}
    items = nightly_steps.map_items(h.state_machine.consolidator, RunPlan.from_json(NIGHTLY["plan"]))
    assert len(items) == NIGHTLY["plan"]["speakers"]
    NIGHTLY["items"] = [item.to_json() for item in items]
    h.recorder.fail("NightlySpeaker", "Query")  # a first attempt that fails: the map's Retry runs it again
    with pytest.raises(Exception):
        h.call("NightlySpeaker", items[0].to_json())
    h.recorder.lose_answer("NightlySpeaker", "TransactWriteItems")
    for item in items:
        assert h.call("NightlySpeaker", item.to_json())["status"] == "done"
    assert h.call("NightlySpeaker", items[0].to_json())["status"] == "done"  # a redrive: the mark, nothing redone
    h.jev.verdicts = {}


def nightly_speaker_failed_scenario(h: Harness) -> None:
    poison = {
        **NIGHTLY["items"][0],
        "user_id": "999999999999999999",
        "error": {"Error": "ModelUnavailable", "Cause": ""},
    }
    assert h.call("NightlySpeakerFailed", poison)["status"] == "failed"
    done = {**NIGHTLY["items"][1], "error": {"Error": "States.Timeout", "Cause": ""}}
    assert h.call("NightlySpeakerFailed", done)["status"] == "done"  # marked done already: counted once


def nightly_review_scenario(h: Harness) -> None:
    old = NIGHTLY["now"] - STALE_AFTER - timedelta(days=2)
    for m in (
        memory(BOB, "sta2z", "Has a cold", at=old, scope=SCOPE),
        memory(ALICE, "kee2p", "Likes tea", at=old, scope=SCOPE),
    ):
        h.memories.apply(Change(Action.ADD, None, m, "seed"), actor=Actor.EXTRACTION)
    h.jev.reviews = {"sta2z": "delete", "kee2p": "keep"}
    # The server set a diary channel: its own diary is written and posted (its counter an UpdateItem).
    servers = DynamoServerStore(h.seed_client, h.settings.table(tables.SERVERS), cache_seconds=0)
    before = servers.get(GUILD)
    after = replace(before, diary_channel=CHANNEL)
    assert servers.change(before, after, ChangeRow(GUILD, "diary", ALICE, "off", CHANNEL, utcnow()))
    h.recorder.lose_answer("NightlyReview", "TransactWriteItems")  # the decay commits, its answer is lost
    assert h.call("NightlyReview", dict(NIGHTLY["plan"])) == NIGHTLY["plan"]
    assert h.call("NightlyReview", dict(NIGHTLY["plan"])) == NIGHTLY["plan"]  # a redrive: its mark
    h.jev.reviews = {}


def nightly_finish_scenario(h: Harness) -> None:
    h.recorder.fail("NightlyFinish", "GetObject")  # the manifest's read fails: Retry
    with pytest.raises(InjectedFault):
        h.call("NightlyFinish", dict(NIGHTLY["plan"]))
    finished = h.call("NightlyFinish", dict(NIGHTLY["plan"]))
    assert finished["status"] == "done", finished
    assert h.call("NightlyFinish", dict(NIGHTLY["plan"])) == finished  # finished once
    run = h.containers["NightlyFinish"].run_store.get(finished["run_id"])
    assert "sta2z" in run.summary.decayed, run.summary


def admin_scenario(h: Harness) -> None:
    def rollback(payload: dict) -> tuple[int, dict]:
        response = h.call("Admin", admin_event("/memory/rollback", payload, ADMIN_SECRET))
        return response["statusCode"], body(response)

    status, preview = rollback({"dryRun": True})
    assert status == 200 and preview["reverted"], preview
    h.recorder.lose_answer("Admin", "TransactWriteItems")
    status, done = rollback({})
    assert status == 200 and done["reverted"] == preview["reverted"], done
    assert rollback({})[0] == 409
    import_scenario(h)


def import_scenario(h: Harness) -> None:
    """POST /memory/import on the admin function: a dry run (marker reads), an import whose
    first answer is lost (the ledger read-back), the same rows again (the markers refuse them)."""

    def imports(payload: dict) -> tuple[int, dict]:
        response = h.call("Admin", admin_event("/memory/import", payload, ADMIN_SECRET))
        return response["statusCode"], body(response)

    at = (utcnow() - timedelta(days=3)).isoformat()
    rows = [
        {"userId": ALICE, "scope": SCOPE, "text": "Plays the shamisen", "createdAt": at, "id": "legacy-1"},
        {"userId": BOB, "scope": SCOPE, "text": "Grows bonsai", "createdAt": at, "updatedAt": at},
    ]
    counted = {"unchanged": 0, "alreadyHere": 0, "refused": 0}
    assert imports({"memories": rows, "dryRun": True}) == (200, counted | {"imported": 2, "dryRun": True})
    h.recorder.lose_answer("Admin", "TransactWriteItems")
    assert imports({"memories": rows}) == (200, counted | {"imported": 2, "dryRun": False})
    assert imports({"memories": rows}) == (200, counted | {"imported": 0, "unchanged": 2, "dryRun": False})
    # A failure part way: the row added before it is taken back (its memory, marker and a ledger row).
    more = [{**row, "id": f"legacy-{n}", "text": f"Fact {n}"} for n, row in enumerate(rows, start=2)]
    h.recorder.fail("Admin", "TransactWriteItems", nth_from_now=2)
    assert imports({"memories": more})[0] == 503
    assert imports({"memories": more}) == (200, counted | {"imported": 2, "dryRun": False})


def erase_scenario(h: Harness) -> None:
    def erase(payload: dict) -> tuple[int, dict]:
        response = h.call(LEDGER_REDACTOR, admin_event("/memory/erase", payload, ADMIN_SECRET))
        return response["statusCode"], body(response)

    said = Message(CHANNEL, snowflake_at(utcnow(), 7), BOB, "bob", "I keep bees", scope=SCOPE, conversation_of=BOB)
    h.messages.put(said)
    # A reply to bob in a channel where he has no line of his own: found by the person it answers
    # (messages.by_conversation_of), which the erase role must be allowed to query.
    reply = Message("700000000000000077", snowflake_at(utcnow(), 8), APP_ID, "memorybot", "Bees!", True, SCOPE, BOB)
    h.messages.put(reply)
    learned = memory(BOB, "bee2s", "Keeps bees", at=utcnow(), scope=SCOPE)
    learned = replace(learned, sources=(SourceRef(said.channel_id, said.message_id),))
    h.memories.apply(Change(Action.ADD, None, learned, "seed"), actor=Actor.EXTRACTION)
    status, preview = erase({"userId": BOB, "dryRun": True})
    assert status == 200 and preview["memoriesDeleted"] >= 1, preview
    h.recorder.lose_answer(LEDGER_REDACTOR, "TransactWriteItems")  # a delete commits, its answer is lost
    status, done = erase({"userId": BOB})
    assert status == 200 and done["messagesDeleted"] >= 2 and done["ledgerRowsRedacted"] >= 1, done
    assert erase({"userId": "999999999999999999"})[0] == 404


SCENARIOS: dict[str, Callable[[Harness], None]] = {
    "Interactions": interactions_scenario,
    "Reply": reply_scenario,
    "Extraction": extraction_scenario,
    "NightlyClaim": nightly_claim_scenario,
    "NightlyPlan": nightly_plan_scenario,
    "NightlySpeaker": nightly_speaker_scenario,
    "NightlySpeakerFailed": nightly_speaker_failed_scenario,
    "NightlyReview": nightly_review_scenario,
    "NightlyFinish": nightly_finish_scenario,
    "Admin": admin_scenario,
    LEDGER_REDACTOR: erase_scenario,
}


def _unjustified(unused: dict[str, set[Need]]) -> dict[str, set[Need]]:
    return {name: needs - set(UNEXERCISED.get(name, {})) for name, needs in unused.items()}


def _bedrock_session() -> boto3.Session:
    return boto3.Session(aws_access_key_id="contract", aws_secret_access_key="contract", region_name="us-east-1")


# Grants no scenario exercises, each with why it stays.
_SCRIPTED_MODELS = (
    "the scenarios script the decision and chat models (no Bedrock call); the grant of the configured "
    "model ids to exactly these functions is pinned by test_stack.py"
)
UNEXERCISED: dict[str, dict[Need, str]] = {
    name: {Need("bedrock:InvokeModel", f"bedrock:foundation-model/{Settings.bedrock_chat_model_id}"): _SCRIPTED_MODELS}
    for name in ("Reply", "Extraction", "NightlySpeaker", "NightlyReview")
}


@pytest.fixture(scope="module")
def recorded(moto_server):
    """(recorder, harness) after every function's scenario has run, in the order of SCENARIOS."""
    recorder = Recorder()
    api = discord_recorder.DiscordRecorder()
    server, base = discord_recorder.serve(api)
    bedrock = BedrockServer()
    harness = Harness(moto_server, base, recorder, bedrock.start())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bootstrap, "container", harness.container)
        for _name, scenario in SCENARIOS.items():
            scenario(harness)
            harness.deliver()
    server.shutdown()
    server.server_close()
    bedrock.stop()
    harness.discord = api
    return recorder, harness


@pytest.fixture(scope="module")
def role_policies(synth) -> dict[str, Policy]:
    return policies(synth.template, [spec.name for spec in FUNCTIONS])


def test_every_function_has_a_scenario():
    assert set(SCENARIOS) == {spec.name for spec in FUNCTIONS}


def test_every_aws_request_of_every_function_is_allowed_by_its_role(recorded, role_policies):
    recorder, harness = recorded
    verdict = check(recorder.requests, role_policies, harness.logical_tables, harness.logical_buckets)
    assert verdict.denial_lines() == []
    assert {r.function for r in recorder.requests} == set(SCENARIOS)
    print(f"IAM contract: {verdict.checked} AWS requests checked")
    assert verdict.checked > 100


def test_every_grant_is_exercised_or_says_why_not(recorded, role_policies):
    recorder, harness = recorded
    verdict = check(recorder.requests, role_policies, harness.logical_tables, harness.logical_buckets)
    unused = {
        name: sorted(f"{n.action} on {n.resource}" for n in needs) for name, needs in verdict.unused.items() if needs
    }
    justified = {
        name: sorted(f"{n.action} on {n.resource}" for n in needs) for name, needs in UNEXERCISED.items() if needs
    }
    assert unused == justified


def _without_grant(template: dict, function: str, action: str, resource_type: str, resource_prefix: str) -> dict:
    """A copy of ``template`` whose ``function`` role no longer has ``action`` in the one statement
    that grants it on the resource (of ``resource_type``, logical id ``resource_prefix``...)."""
    template = copy.deepcopy(template)
    resources = template["Resources"]
    [function_id] = [
        k for k, v in resources.items() if k.startswith(f"{function}Function") and v["Type"] == "AWS::Lambda::Function"
    ]
    role_id = resources[function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    [target_id] = [k for k, v in resources.items() if v["Type"] == resource_type and k.startswith(resource_prefix)]
    removed = 0
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role_id} not in resource["Properties"]["Roles"]:
            continue
        document = resource["Properties"]["PolicyDocument"]
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if target_id in json.dumps(statement["Resource"]) and action in actions:
                statement["Action"] = [a for a in actions if a != action]
                removed += 1
        document["Statement"] = [st for st in document["Statement"] if st["Action"]]
    assert removed == 1
    return template


def test_negative_control_a_removed_grant_fails_the_check_naming_function_action_and_resource(recorded, synth):
    recorder, harness = recorded
    names = [spec.name for spec in FUNCTIONS]
    target = Need("dynamodb:GetItem", f"dynamodb:{tables.MEMORY_LOG.logical_name}")
    assert policies(synth.template, names)["Interactions"].allows(target)
    template = _without_grant(synth.template, "Interactions", "dynamodb:GetItem", "AWS::DynamoDB::Table", "MemoryLog")
    verdict = check(recorder.requests, policies(template, names), harness.logical_tables, harness.logical_buckets)
    assert verdict.denial_lines() == ["Interactions: dynamodb:GetItem on dynamodb:memory_log (for GetItem)"]


def test_negative_control_the_plan_without_put_object_is_denied_writing_the_manifest(recorded, synth):
    recorder, harness = recorded
    names = [spec.name for spec in FUNCTIONS]
    manifest = f"s3:{MANIFESTS}/{NIGHTLY['plan']['manifest']}"
    assert policies(synth.template, names)["NightlyPlan"].allows(Need("s3:PutObject", manifest))
    template = _without_grant(synth.template, "NightlyPlan", "s3:PutObject", "AWS::S3::Bucket", "NightlyManifests")
    verdict = check(recorder.requests, policies(template, names), harness.logical_tables, harness.logical_buckets)
    assert verdict.denial_lines() == [f"NightlyPlan: s3:PutObject on {manifest} (for PutObject)"]


def test_negative_control_an_s3_grant_no_request_uses_is_unused(recorded, synth):
    """The plan given s3:GetObject as well (nothing it runs reads the manifest): an unused grant."""
    recorder, harness = recorded
    names = [spec.name for spec in FUNCTIONS]
    template = copy.deepcopy(synth.template)
    [bucket_id] = synth.of_type("AWS::S3::Bucket")
    widened = 0
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Action"] == "s3:PutObject" and bucket_id in json.dumps(statement["Resource"]):
                statement["Action"] = ["s3:GetObject", "s3:PutObject"]
                widened += 1
    assert widened == 1  # the plan's statement, the only one that writes the manifest
    verdict = check(recorder.requests, policies(template, names), harness.logical_tables, harness.logical_buckets)
    assert verdict.denial_lines() == []
    assert {name: needs for name, needs in _unjustified(verdict.unused).items() if needs} == {
        "NightlyPlan": {Need("s3:GetObject", f"s3:{MANIFESTS}/*")}
    }


def test_the_manifest_requests_are_recorded_the_plan_writes_and_the_finish_reads(recorded):
    recorder, harness = recorded
    s3 = sorted(
        {(r.function, r.operation, r.params["Bucket"], r.params["Key"]) for r in recorder.requests if r.service == "s3"}
    )
    key = NIGHTLY["plan"]["manifest"]
    assert s3 == [
        ("NightlyFinish", "GetObject", harness.bucket, key),
        ("NightlyPlan", "PutObject", harness.bucket, key),
    ]


def test_a_function_that_uses_the_manifest_bucket_is_given_it(recorded, synth):
    """The harness gives every function the bucket; deployed, a function has it only through its
    environment: each function that made an S3 request must be given the bucket its grant is on."""
    recorder, _ = recorded
    [bucket_id] = synth.of_type("AWS::S3::Bucket")
    users = {r.function for r in recorder.requests if r.service == "s3"}
    given = {
        spec.name
        for spec in FUNCTIONS
        if next(
            v
            for k, v in synth.resources.items()
            if k.startswith(f"{spec.name}Function") and v["Type"] == "AWS::Lambda::Function"
        )["Properties"]["Environment"]["Variables"].get("MEMORYBOT_MANIFEST_BUCKET")
        == {"Ref": bucket_id}
    }
    assert users == given == {"NightlyPlan", "NightlyFinish"}


def test_the_state_machines_manifest_read_is_its_own_roles_not_a_functions(synth, role_policies):
    """The Distributed Map's ItemReader reads the manifest with the state machine's role: outside
    the contract (not a function's request), so never judged used or unused here."""
    [(_, machine)] = synth.of_type("AWS::StepFunctions::StateMachine").items()
    machine_role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    function_roles = {
        v["Properties"]["Role"]["Fn::GetAtt"][0]
        for v in synth.of_type("AWS::Lambda::Function").values()
        if "Role" in v["Properties"]
    }
    assert machine_role not in function_roles
    reads = [
        st
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": machine_role} in p["Properties"]["Roles"]
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if "s3:GetObject" in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
    ]
    assert reads, "the state machine reads the manifest"
    readers = {
        name for name, policy in role_policies.items() if any("s3:GetObject" in s.actions for s in policy.statements)
    }
    assert readers == {"NightlyFinish"}


def test_the_ledger_is_append_only_but_for_one_conditioned_redaction_by_the_erase_function(synth, role_policies):
    """No role may change or remove a ledger row, with a single exception: the erase function
    may redact a person's rows (an erasure request must be able to remove their text). Its
    UpdateItem is its own statement, conditioned to name only the key, before/after and the
    redacted flag, and to return nothing; no role, that one included, may delete a row."""
    ledger = f"dynamodb:{tables.MEMORY_LOG.logical_name}"
    exceptions = []
    for name, policy in role_policies.items():
        for statement in policy.statements:
            on_ledger = [r for r in statement.resources if r == ledger or r.startswith(ledger + "/") or "*" in r]
            if not on_ledger:
                continue
            actions = {a for a in statement.actions if a.startswith("dynamodb:") or a == "*"}
            if actions <= {f"dynamodb:{a}" for a in LEDGER_ACTIONS_ALLOWED}:
                continue
            exceptions.append((name, sorted(actions), statement.resources, statement.conditions))
        for forbidden in ("DeleteItem", "BatchWriteItem", "PartiQLUpdate", "PartiQLDelete", "DeleteTable"):
            assert not policy.allows(Need(f"dynamodb:{forbidden}", ledger)), (name, forbidden)
        if name != LEDGER_REDACTOR:
            assert not policy.allows(Need("dynamodb:UpdateItem", ledger)), name
    assert exceptions == [
        (
            LEDGER_REDACTOR,
            ["dynamodb:UpdateItem"],
            [ledger],
            {
                "ForAllValues:StringEquals": {"dynamodb:Attributes": list(LEDGER_REDACTION_ATTRIBUTES)},
                "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
            },
        )
    ]
    # Every function that reads or changes memories logs it: appending stays allowed there.
    memories = f"dynamodb:{tables.MEMORIES.logical_name}"
    touching = [
        name for name, policy in role_policies.items() if any(n.resource.startswith(memories) for n in policy.grants())
    ]
    assert len(touching) >= 5
    assert all(role_policies[name].allows(Need("dynamodb:PutItem", ledger)) for name in touching)


def test_the_redaction_names_only_the_attributes_its_condition_allows(recorded):
    recorder, harness = recorded
    ledger = harness.settings.table(tables.MEMORY_LOG)
    updates = [r for r in recorder.requests if r.operation == "UpdateItem" and r.params["TableName"] == ledger]
    assert updates and {r.function for r in updates} == {LEDGER_REDACTOR}
    for request in updates:
        named = set(request.params["Key"]) | set(request.params.get("ExpressionAttributeNames", {}).values())
        assert named <= set(LEDGER_REDACTION_ATTRIBUTES), named
        assert request.params.get("ReturnValues", "NONE") == "NONE"


def test_the_import_is_in_the_contract_its_marker_written_with_the_memory_and_read_by_a_dry_run(recorded):
    """The import's requests are the admin function's: each row one transaction (the memory, its
    marker, its ledger row, the check of the person's record), a dry run's marker read, and the
    read-back of a lost answer."""
    recorder, harness = recorded
    memories = harness.settings.table(tables.MEMORIES)
    ledger = harness.settings.table(tables.MEMORY_LOG)
    people = harness.settings.table(tables.PEOPLE)
    marker = MARKER_PREFIX

    def is_marker(item: dict) -> bool:
        """An import marker ("Remember this" claims its messages under the same prefix)."""
        key = item.get("memory_id", {}).get("S", "")
        return key.startswith(marker) and not key.startswith(marker + MESSAGE_MARKER)

    imports = [
        r
        for r in recorder.requests
        if r.operation == "TransactWriteItems"
        and any(is_marker(i["Put"]["Item"]) for i in r.params["TransactItems"] if "Put" in i)
    ]
    assert imports and {r.function for r in imports} == {"Admin"}
    for request in imports:
        tables_written = [next(iter(i.values()))["TableName"] for i in request.params["TransactItems"]]
        # the memory, its marker, its ledger row, the person's check; the selection index's header and chunk
        assert tables_written == [memories, memories, ledger, people, memories, memories]
    reads = [
        r
        for r in recorder.requests
        if r.operation == "GetItem" and r.params["TableName"] == memories and is_marker(r.params["Key"])
    ]
    assert reads and {r.function for r in reads} == {"Admin"}


def test_the_contract_sees_a_real_deploy_miss_before_the_fix(recorded):
    """What the issue found: the lost-answer recovery reads memory_log with GetItem, in the
    interactions and extraction functions, which their roles did not allow."""
    recorder, harness = recorded
    ledger = harness.settings.table(tables.MEMORY_LOG)
    for function in ("Interactions", "Extraction"):
        assert any(
            r.function == function and r.operation == "GetItem" and r.params["TableName"] == ledger
            for r in recorder.requests
        ), function


# ---- personal data at rest: the same contract with encrypt_personal_data on ------------------


def _key_id(template: dict) -> str:
    [key_id] = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key"]
    return key_id


def _personal_keys(template: dict) -> dict[str, str]:
    return {spec.logical_name: f"kms:{_key_id(template)}" for spec in tables.ALL_TABLES if spec.personal_data}


def test_with_personal_data_encrypted_every_request_is_still_allowed_and_every_grant_used(recorded, encrypted_template):
    recorder, harness = recorded
    encrypted = policies(encrypted_template, [spec.name for spec in FUNCTIONS])
    verdict = check(recorder.requests, encrypted, harness.logical_tables, harness.logical_buckets)
    assert verdict.denial_lines() == []
    assert {name: needs for name, needs in _unjustified(verdict.unused).items() if needs} == {}


def test_with_personal_data_encrypted_each_function_gets_exactly_the_key_actions_its_requests_need(
    recorded, encrypted_template
):
    recorder, harness = recorded
    encrypted = policies(encrypted_template, [spec.name for spec in FUNCTIONS])
    keys = _personal_keys(encrypted_template)
    needed: dict[str, set[Need]] = {spec.name: set() for spec in FUNCTIONS}
    for request in recorder.requests:
        needed[request.function] |= set(key_needs(request, harness.logical_tables, keys))
    key = f"kms:{_key_id(encrypted_template)}"
    for name, policy in encrypted.items():
        assert needed[name], f"{name} touches a personal-data table"
        missing = sorted(f"{n.action} on {n.resource}" for n in needed[name] if not policy.allows(n))
        assert missing == [], name
        granted = {a for s in policy.statements if key in s.resources for a in s.actions}
        assert all(key in s.resources or not any(a.startswith("kms:") for a in s.actions) for s in policy.statements)
        # Nothing beyond what a recorded request needs (GenerateDataKey* names DynamoDB's variants).
        assert granted == {n.action.replace("kms:GenerateDataKey", "kms:GenerateDataKey*") for n in needed[name]}, name


def test_negative_control_a_function_without_the_key_is_denied_its_personal_data_requests(recorded, encrypted_template):
    recorder, harness = recorded
    template = copy.deepcopy(encrypted_template)
    key_id = _key_id(template)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            document = resource["Properties"]["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"] if key_id not in json.dumps(s["Resource"])]
    stripped = policies(template, [spec.name for spec in FUNCTIONS])
    keys = _personal_keys(template)
    denied = {
        r.function
        for r in recorder.requests
        for n in key_needs(r, harness.logical_tables, keys)
        if not stripped[r.function].allows(n)
    }
    assert denied == {spec.name for spec in FUNCTIONS}


def test_the_functions_that_embed_invoke_the_embedding_model_and_only_they_may(recorded, role_policies):
    recorder, _ = recorded
    embedding = Need("bedrock:InvokeModel", f"bedrock:foundation-model/{Settings.bedrock_embedding_model_id}")
    invoked = {r.function for r in recorder.requests if r.service == "bedrock-runtime"}
    # the reply's query; extraction's query and written texts (live and nightly); the nightly backfill
    assert invoked == {"Reply", "Extraction", "NightlySpeaker", "NightlyReview"}
    assert {name for name, policy in role_policies.items() if policy.allows(embedding)} == invoked
    scans = {r.function for r in recorder.requests if r.operation == "Scan"}
    assert scans == {"NightlyReview"}  # the backfill's bounded pass, and nobody else's


# Writers of a person's data (a memory put by learning or a rollback's restore, a line of their
# conversation) commit with a ConditionCheck on their person record in the same transaction.
PERSON_CHECKED_WRITERS = ("Interactions", "Reply", "Extraction", "NightlySpeaker", "Admin")


def test_every_writer_of_a_persons_data_checks_their_record_in_the_same_transaction(recorded, role_policies):
    recorder, harness = recorded
    people = {p for p, logical in harness.logical_tables.items() if logical == "people"}
    checked: dict[str, int] = {}
    for request in recorder.requests:
        if request.operation != "TransactWriteItems" or request.function not in PERSON_CHECKED_WRITERS:
            continue
        items = request.params["TransactItems"]
        puts = [i["Put"] for i in items if "Put" in i]
        writes_data = any(harness.logical_tables.get(p["TableName"]) in ("memories", "messages") for p in puts)
        if not writes_data:
            continue
        checks = [i["ConditionCheck"] for i in items if "ConditionCheck" in i]
        assert [c["TableName"] in people for c in checks] == [True], (request.function, items)
        checked[request.function] = checked.get(request.function, 0) + 1
        need = Need("dynamodb:ConditionCheckItem", "dynamodb:people")
        assert role_policies[request.function].allows(need), request.function
    assert set(checked) == set(PERSON_CHECKED_WRITERS), checked


# ---- learning stores a written memory's vector after its write -------------------------------

LEARNING = ("Extraction", "NightlySpeaker")  # the extraction path, live and nightly
VECTOR_UPDATE = "SET embedding = :vector, embedding_model = :model"
AS_WRITTEN = "#text = :text AND updated_at = :updated AND created_at = :created"


def test_learning_stores_a_memorys_vector_after_its_write_with_its_index_entry_and_its_role_allows_that(
    recorded, role_policies, synth
):
    """The extraction path writes a memory (its transaction, with the ledger row), then stores the
    text's vector in a transaction of its own: the memory's Update conditioned on the record being
    as written, and its selection index entry (the header and the chunk), each after the write of
    the same key, allowed by both roles; no UpdateItem outside a transaction. Without the grant,
    exactly these transactions (and every change's, which writes the index too) are denied."""
    recorder, harness = recorded
    memories = harness.settings.table(tables.MEMORIES)
    updates = [
        (i, r, item["Update"])
        for i, r in enumerate(recorder.requests)
        if r.function in LEARNING and r.operation == "TransactWriteItems"
        for item in r.params["TransactItems"]
        if "Update" in item and item["Update"].get("UpdateExpression") == VECTOR_UPDATE
    ]
    assert {r.function for _, r, _ in updates} == set(LEARNING)
    for index, request, params in updates:
        assert params["TableName"] == memories and params["ConditionExpression"] == AS_WRITTEN
        assert set(params["ExpressionAttributeValues"]) == {":vector", ":model", ":text", ":updated", ":created"}
        items = request.params["TransactItems"]
        assert len(items) == 3 and all(
            next(iter(i)) == "Update" and i["Update"]["TableName"] == memories for i in items
        )
        written_before = [
            item["Put"]["Item"]
            for r in recorder.requests[:index]
            if r.function == request.function and r.operation == "TransactWriteItems"
            for item in r.params["TransactItems"]
            if "Put" in item and item["Put"]["TableName"] == memories
        ]
        key = params["Key"]
        assert any(all(item.get(k) == v for k, v in key.items()) for item in written_before), key
    alone = [r for r in recorder.requests if r.function in LEARNING and r.operation == "UpdateItem"]
    # outside a transaction, only a "Remember this" claim settled (its marker) and the night's note of
    # what it changed (core/rights/receipts.py: a set of ids), never a memory
    for r in alone:
        key = r.params["Key"]["memory_id"]["S"] if r.params["TableName"] == memories else MARKER_PREFIX
        assert key.startswith(MARKER_PREFIX) or key == OVERNIGHT_KEY, key
    need = Need("dynamodb:UpdateItem", f"dynamodb:{tables.MEMORIES.logical_name}")
    assert all(role_policies[name].allows(need) for name in LEARNING)
    names = [spec.name for spec in FUNCTIONS]
    template = synth.template
    for name in LEARNING:
        template = _without_grant(template, name, "dynamodb:UpdateItem", "AWS::DynamoDB::Table", "Memories")
    verdict = check(recorder.requests, policies(template, names), harness.logical_tables, harness.logical_buckets)
    # (the forget-all job the extraction function runs writes in transactions too: its deletes add
    # their sources to the forgotten ones, and their index entries)
    settles = {r.function for r in alone if r.params["TableName"] == memories}
    assert sorted(set(verdict.denial_lines())) == sorted(
        [f"{name}: dynamodb:UpdateItem on dynamodb:memories (for TransactWriteItems)" for name in LEARNING]
        + [f"{name}: dynamodb:UpdateItem on dynamodb:memories (for UpdateItem)" for name in settles]
    )
