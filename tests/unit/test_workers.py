"""The reply and extraction workers: what they post, store and hand on, and that a retried
invocation (Lambda's async retries) posts once and extracts once."""

from __future__ import annotations

import dataclasses
import json

import pytest

from frontdoor import ALICE, APP_ID, BOB, CHANNEL, SCOPE, chat, context, event, owner, seed
from memorybot.adapters.invoker import LocalInvoker
from memorybot.core.record.catalog import text
from memorybot.core.record.domain import Action, Actor, Message, snowflake_at, utcnow
from memorybot.core.record.jobs import ExtractionJob, ReplyJob
from memorybot.core.turn import conversation
from memorybot.handlers import extraction, interactions, reply

ALICE_SECRET = "alice is training for the Osaka marathon"
BOB_SECRET = "bob is afraid of dogs"


def job(payload: dict) -> dict:
    member = payload["member"]["user"]
    return {
        "interaction_id": payload["id"],
        "token": payload["token"],
        "application_id": APP_ID,
        "channel_id": CHANNEL,
        "user_id": member["id"],
        "user_name": member["username"],
        "scope": SCOPE,
    }


def said(front, text: str, user=ALICE, name="alice") -> dict:
    """What the interactions function stores for a /chat: the person's own line to the bot."""
    payload = chat(text, user=user, user_name=name)
    front.message_store.put(Message(CHANNEL, payload["id"], user, name, text, scope=SCOPE, conversation_of=user))
    return job(payload)


def bot_said(front, text: str, seq: int, to=ALICE) -> str:
    """What the reply worker stores: the bot's answer, part of ``to``'s conversation."""
    bot_id = snowflake_at(utcnow(), seq)
    front.message_store.put(
        Message(CHANNEL, bot_id, APP_ID, "memorybot", text, is_bot=True, scope=SCOPE, conversation_of=to)
    )
    return bot_id


def extraction_job(work: dict, up_to: str) -> dict:
    return ExtractionJob.after_reply(ReplyJob.from_json(work), up_to).to_json()


def test_reply_patches_the_deferred_answer_stores_it_and_hands_off_extraction(front):
    seed(front.memory_store, ALICE, "abcde", ALICE_SECRET)
    seed(front.memory_store, BOB, "bcdef", BOB_SECRET)
    work = said(front, "any tips for my long run?")
    assert reply.handler(work, context())["status"] == "replied"

    [edit] = front.recorder.of_kind("edit")
    assert edit.path == f"webhooks/{APP_ID}/{work['token']}/messages/@original"
    [[why]] = [row["components"] for row in edit.body.pop("components")]  # the reply's "Why?", ids only
    assert why["custom_id"] == f"memory-because:{ALICE}:{work['interaction_id']}"
    assert edit.body == {"content": "nice to meet you", "allowed_mentions": {"parse": []}}
    stored = front.message_store.recent(CHANNEL, 10)
    assert [(m.message_id, m.is_bot, m.content) for m in stored][-1] == (edit.message_id, True, "nice to meet you")
    # The prompt had Alice's memory and not Bob's; the read was logged as the reply's.
    [(_, prompt)] = front.chat_model.seen
    assert ALICE_SECRET in prompt[0].content and BOB_SECRET not in json.dumps([p.content for p in prompt])
    reads = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.READ]
    assert [e.actor for e in reads] == [Actor.REPLY]
    # The stored reply is part of alice's conversation, in the server's scope.
    assert (stored[-1].conversation_of, stored[-1].scope) == (ALICE, SCOPE)
    ids = {k: work[k] for k in ("interaction_id", "channel_id", "user_id", "user_name", "scope")}
    # the interaction travels on, for the receipt of what the turn changes, and the server whose
    # settings apply to the extraction
    answer = {k: work.get(k, "") for k in ("token", "application_id", "locale", "guild_id")}
    assert front.invoker.calls == [("extraction", {**ids, "up_to_message_id": edit.message_id, **answer})]


def test_a_retried_reply_invocation_posts_once_and_hands_off_once(front):
    work = said(front, "hello there")
    first = reply.handler(work, context())
    again = reply.handler(dict(work), context())
    assert again == first
    assert len(front.recorder.of_kind("edit")) == 1
    assert len(front.invoker.calls) == 1
    assert len(front.chat_model.seen) == 1


def test_a_failed_post_is_retried_by_the_next_invocation(front):
    work = said(front, "hello there")
    front.recorder.rate_limit_next(3, retry_after=0)  # every attempt of the first invocation
    with pytest.raises(Exception):
        reply.handler(work, context())
    assert front.recorder.of_kind("edit") == []
    assert reply.handler(work, context())["status"] == "replied"
    assert len(front.recorder.of_kind("edit")) == 1


def test_when_the_model_fails_the_reply_is_a_polite_apology_and_nothing_is_extracted(front):
    seed(front.memory_store, ALICE, "abcde", ALICE_SECRET)
    front.chat_model.fail.add("write_reply")
    work = said(front, "hello there")
    assert reply.handler(work, context())["status"] == "apologised"
    [edit] = front.recorder.of_kind("edit")
    assert edit.body["content"] == text("apology")
    assert edit.body["allowed_mentions"] == {"parse": []}
    assert front.invoker.calls == []
    assert [m.is_bot for m in front.message_store.recent(CHANNEL, 10)] == [False]


def test_an_empty_model_answer_is_treated_as_a_failure(front):
    front.chat_model.reply_answer = "   "
    work = said(front, "hello there")
    assert reply.handler(work, context())["status"] == "apologised"
    assert [e.body["content"] for e in front.recorder.of_kind("edit")] == [text("apology")]
    assert front.invoker.calls == []


def test_extraction_adds_a_memory_for_the_speaker_once_even_when_retried(front):
    work = said(front, "I moved to Kyoto last week")
    bot_id = bot_said(front, "welcome to Kyoto!", 999)
    first = extraction.handler(extraction_job(work, bot_id), context())
    assert first["outcome"] == "done" and len(first["added"]) == 1
    assert extraction.handler(extraction_job(work, bot_id), context()) == first
    [added] = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.ADD]
    assert added.actor is Actor.EXTRACTION and added.after.scope == SCOPE
    assert len(front.decision_model.asked("worth")) == 1
    assert front.memory_store.ledger_for(owner(BOB)) == []


def test_extraction_sees_the_exchange_up_to_the_bots_reply_only(front):
    work = said(front, "I moved to Kyoto last week")
    bot_id = bot_said(front, "welcome!", 998)
    said(front, "a later turn of her own")  # alice again: her conversation, but after this reply
    extraction.handler(extraction_job(work, bot_id), context())
    [exchange] = front.decision_model.asked("worth")
    assert "Kyoto" in exchange.render() and "later turn" not in exchange.render()


def test_extraction_never_sees_other_peoples_lines_or_the_bots_replies_to_them(front):
    # Was: the channel's last six messages. Now only alice's own conversation decides her memories.
    said(front, "bob: I am a pilot", user=BOB, name="bob")
    bot_said(front, "wow, a pilot!", 990, to=BOB)
    work = said(front, "I moved to Kyoto last week")
    said(front, "bob: alice is allergic to cats", user=BOB, name="bob")
    bot_id = bot_said(front, "welcome!", 991)
    extraction.handler(extraction_job(work, bot_id), context())
    [exchange] = front.decision_model.asked("worth")
    assert [m.content for m in exchange.messages] == ["I moved to Kyoto last week", "welcome!"]
    assert exchange.speaker.user_id == ALICE and exchange.scope == SCOPE


def test_extraction_finds_its_exchange_even_after_a_busy_channel_moved_on(front):
    work = said(front, "I moved to Kyoto last week")
    bot_id = bot_said(front, "welcome!", 997)
    for n in range(25):  # more later turns than any window of recent messages
        said(front, f"later chatter {n}", user=BOB, name="bob")
    extraction.handler(extraction_job(work, bot_id), context())
    [exchange] = front.decision_model.asked("worth")
    text = exchange.render()
    assert "Kyoto" in text and "welcome!" in text and "chatter" not in text


def test_an_extraction_whose_reply_is_not_readable_yet_fails_for_a_retry_and_changes_nothing(front):
    work = said(front, "I moved to Kyoto last week")
    not_yet = snowflake_at(utcnow(), 996)  # the reply is posted but not (yet) in the conversation index
    with pytest.raises(conversation.ExchangeNotReadable):
        extraction.handler(extraction_job(work, not_yet), context())
    assert front.decision_model.calls == [] and front.memory_store.ledger_for(owner(ALICE)) == []


@pytest.mark.parametrize("worker", ["reply", "extraction"])
@pytest.mark.parametrize(
    "mangle",
    [
        lambda j: {k: v for k, v in j.items() if k != "scope"},
        lambda j: {**j, "extra": "x"},
        lambda j: {**j, "user_id": 1},
        lambda j: [j],
    ],
    ids=["missing-scope", "unknown-key", "not-text", "not-an-object"],
)
def test_a_job_that_does_not_parse_is_refused_without_a_raise_or_a_write(front, worker, mangle):
    work = said(front, "hello there")
    good = work if worker == "reply" else extraction_job(work, bot_said(front, "hi", 995))
    handler = reply.handler if worker == "reply" else extraction.handler
    assert handler(mangle(good), context()) == {"status": "refused"}
    assert front.recorder.of_kind("edit") == [] and front.invoker.calls == []
    assert front.decision_model.calls == [] and front.chat_model.seen == []


def test_with_history_enabled_other_peoples_messages_join_the_log_once_and_reach_the_prompt(front):
    front.settings = dataclasses.replace(front.settings, fetch_channel_history=True)
    carol_id = front.recorder.someone_said(CHANNEL, "300000000000000003", "carol", "the rehearsal moved to Friday")
    reply.handler(said(front, "hello there"), context())
    reply.handler(said(front, "again"), context())
    log = front.message_store.recent(CHANNEL, 20)
    assert [(m.message_id, m.author_name, m.is_bot) for m in log if m.content == "the rehearsal moved to Friday"] == [
        (carol_id, "carol", False)
    ]
    # History is context, never anyone's conversation with the bot.
    assert all(m.conversation_of == "" for m in log if m.author_name == "carol")
    # ...and the reply prompt saw it (its markup is the prompt's business: test_speaker_prompts.py).
    assert any("the rehearsal moved to Friday" in p.content for _, prompt in front.chat_model.seen for p in prompt)
    assert any("carol" in prompt[0].content for _, prompt in front.chat_model.seen)


def test_by_default_no_channel_history_is_fetched(front):
    front.recorder.someone_said(CHANNEL, "300000000000000003", "carol", "the rehearsal moved to Friday")
    reply.handler(said(front, "hello there"), context())
    assert [m.author_name for m in front.message_store.recent(CHANNEL, 20)] == ["alice", "memorybot"]


def test_the_whole_chain_runs_through_the_local_invoker(front):
    """interactions -> reply worker -> extraction worker, as the local stack runs them."""
    front.invoker = LocalInvoker({"reply": reply.handler, "extraction": extraction.handler})
    payload = chat("I started learning the violin")
    assert json.loads(interactions.handler(event(payload), context())["body"]) == {"type": 5}
    assert front.invoker.drain(timeout=30)
    assert front.invoker.failures == []
    assert len(front.recorder.of_kind("edit")) == 1
    added = [e for e in front.memory_store.ledger_for(owner(ALICE)) if e.action is Action.ADD]
    assert len(added) == 1
    front.invoker.shutdown()


def test_the_dedup_record_of_a_job_keeps_its_key_so_a_retry_across_a_deploy_finds_it(front):
    """The worker's record is ``memorybot.<worker>#`` + the MD5 of the JSON of the interaction id,
    as Powertools keyed it before the idempotency recipe moved behind its port: a Lambda retry
    that spans a deploy still finds the first attempt's record and does not post twice."""
    import hashlib

    from memorybot.tables import DEDUP

    work = said(front, "hello there")
    reply.handler(work, context())
    key = "memorybot.reply#" + hashlib.md5(json.dumps(work["interaction_id"]).encode()).hexdigest()
    item = front.dynamodb_client.get_item(
        TableName=front.settings.table(DEDUP), Key={DEDUP.partition.name: {"S": key}}
    ).get("Item")
    assert item is not None and item["status"]["S"] == "COMPLETED"


def test_an_invocation_leaves_the_shared_container_as_it_was_built(front):
    """The Lambda context travels with the call: nothing about one invocation is written onto the
    container that every invocation (and the local stack's threads) share."""
    from frontdoor import event, show
    from memorybot.handlers import interactions as front_door

    def invocations() -> None:
        front_door.handler(event(show()), context())  # /memory show runs once per id, timed by its context
        reply.handler(said(front, "hello there"), context())

    invocations()  # every adapter these use is built now (each once, on first use)
    built = dict(vars(front))
    invocations()
    assert vars(front) == built  # the same adapters, and nothing of the second pair of invocations
    assert not any(hasattr(v, "get_remaining_time_in_millis") for v in vars(front).values())
