"""The bot answers in the person's language, over HTTP against the local stack in its own process:
a `ja` and an `en-US` interaction for every command and button (forget-all's, history's Undo and
Older), each answer (and each DM it causes) exactly the catalog's text in that language, the
server named by its name; and "Remember this" on one's own message, on someone else's, and while
paused."""

from __future__ import annotations

import pytest

from memorybot.core.record.catalog import TEXTS, fields_of, language_of, text
from memorybot.core.record.domain import is_memory_id
from memorybot.local.discord_recorder import LOCAL_GUILD_NAME

LOCALES = ["ja", "en-US"]
EPHEMERAL = "memorybot: (only you can see this) "


@pytest.fixture
def speaker(person):
    """A person whose Discord client is in ``locale``."""

    def make(name: str, locale: str):
        client = person(f"{name}-{locale.lower()}")
        client.locale = locale
        return client

    return make


def answers(output: list[str]) -> list[str]:
    """What only the person saw (the ephemeral answers), without the client's prefix."""
    return [line.removeprefix(EPHEMERAL) for line in output if line.startswith(EPHEMERAL)]


def dms(output: list[str]) -> list[str]:
    return ["\n".join(line.splitlines()[1:]) for line in output if line.startswith("[DM from memorybot")]


def opening(key: str, locale: str, **fields: object) -> str:
    """The text up to its first field not given (a time, a link list): what an answer starts with."""
    template = TEXTS[key][language_of(locale)]
    rest = dict.fromkeys((name for name in fields_of(template) if name not in fields), "\0")
    return template.format(**fields, **rest).split("\0", 1)[0]


def listed(output: list[str]) -> list[str]:
    return [
        line.split()[0]
        for dm in dms(output)
        for line in dm.splitlines()
        if line.split() and is_memory_id(line.split()[0])
    ]


@pytest.mark.parametrize("locale", LOCALES)
def test_every_command_answers_in_the_persons_language(speaker, locale):
    here = text("where_server", locale, name=LOCAL_GUILD_NAME)  # the server by its name, not its id
    mai = speaker("mai", locale)

    assert answers(mai.chat("")) == [text("empty_chat", locale)]
    assert answers(mai.export()) == [text("nothing_to_export", locale)]
    assert answers(mai.show()) == [text("nothing_remembered", locale, where=here)]
    assert answers(mai.forget_all()) == [text("nothing_remembered", locale, where=here)]

    first = mai.chat("I keep bees on the roof of my flat")
    notice, receipt = answers(first)
    assert notice == text("notice", locale)  # the first-use notice, in their language
    # ... and what the turn changed, in their language too
    assert receipt.startswith(text("receipt_header", locale, count=1))
    assert receipt.endswith(text("receipt_footer", locale))

    shown = mai.show()
    assert answers(shown) == [text("dm_sent", locale)]
    [dm] = dms(shown)  # the DM follows the interaction that caused it
    assert dm.splitlines()[0] == f"{text('dm_header', locale, where=here)} {text('show_receipts_on', locale)}"
    assert dm.splitlines()[-1] == text("dm_footer", locale)
    [memory_id] = listed(shown)

    assert mai.suggest("bees")[0].startswith(f"  {memory_id}: ")  # autocomplete: the memory, no words of ours
    why = answers(mai.why(memory_id))[0]
    assert why.startswith(opening("why", locale, memory_id=memory_id, verb=text("why_verb_learned", locale)))
    assert answers(mai.why("zzzzz")) == [text("not_found", locale, memory_id="zzzzz")]

    exported = mai.export()
    assert answers(exported) == [text("export_sent", locale)]
    assert dms(exported)[0].startswith(text("export_dm", locale))

    assert answers(mai.pause()) == [text("paused", locale)]
    assert answers(mai.pause()) == [text("already_paused", locale)]
    paused_show = answers(mai.show())[0]
    assert paused_show.startswith(text("dm_sent", locale) + "\n" + opening("paused_note", locale))
    assert answers(mai.resume()) == [text("resumed", locale)]
    assert answers(mai.resume()) == [text("not_paused", locale)]

    assert answers(mai.forget(memory_id)) == [text("forgotten", locale, memory_id=memory_id)]
    assert answers(mai.forget(memory_id)) == [text("not_found", locale, memory_id=memory_id)]


@pytest.mark.parametrize("locale", LOCALES)
def test_the_forget_all_button_answers_in_the_language_of_whoever_clicks(speaker, locale):
    here = text("where_server", locale, name=LOCAL_GUILD_NAME)
    ren, other = speaker("ren", locale), speaker("ren-neighbour", "en-US" if locale == "ja" else "ja")
    other.channel_id = ren.channel_id
    ren.chat("I am learning to play the shakuhachi")
    asked = ren.forget_all()
    assert answers(asked)[0] == text("forget_all_ask", locale, count=1, where=here)
    assert asked[1] == f"  [button: {text('forget_all_button', locale)}] (type /confirm to click it)"

    # Someone else clicking it is refused in *their* language; nothing is deleted.
    refused = other.click(ren.last_button)
    assert refused == [EPHEMERAL + text("forget_all_not_yours", other.locale)]
    stale = ren.click("memory-forget-something-else")
    assert stale == [EPHEMERAL + text("stale_component", locale)]

    # Answered at once, then updated by the job that deleted everything, both in the clicker's language.
    done = ren.click()
    assert done == [
        f"memorybot: (the confirmation now reads) {text('forget_all_started', locale, where=here)}",
        f"memorybot: (the confirmation now reads) {text('forget_all_done', locale, count=1, where=here)}",
    ]


@pytest.mark.parametrize("locale", LOCALES)
def test_an_unknown_command_is_answered_in_the_persons_language(speaker, locale):
    sora = speaker("sora", locale)
    status, answer = sora.send(sora._payload("dance", []))
    assert status == 200 and answer["data"]["content"] == text("unsupported", locale)


@pytest.mark.parametrize("locale", LOCALES)
def test_remember_this_on_ones_own_message_learns_it_with_the_message_as_its_source(speaker, jev, locale):
    yui = speaker("yui", locale)
    jev.clear()
    out = yui.remember("I moved to Fukuoka in October")
    # the deferred, ephemeral answer filled in: the receipt, in their language, with its Undo
    [answer, undo] = out
    assert answer.startswith(EPHEMERAL + text("receipt_header", locale, count=1)) and "Fukuoka" in answer
    assert text("history_undo_label", locale, n=1) in undo
    assert jev.questions()[0] == "worth"
    shown = yui.show()
    [memory_id] = listed(shown)
    assert "Fukuoka" in dms(shown)[0]
    why = answers(yui.why(memory_id))[0]
    assert f"/{yui.channel_id}/" in why  # its source is the message pointed at, linked


@pytest.mark.parametrize("locale", LOCALES)
def test_remember_this_on_someone_elses_message_is_refused_without_asking_a_model(speaker, jev, locale):
    kai, aoi = speaker("kai", locale), speaker("aoi", locale)
    aoi.channel_id = kai.channel_id
    jev.clear()
    out = kai.remember("Kai is scared of spiders", author=aoi.user_name)
    assert out == [EPHEMERAL + text("remember_not_yours", locale)]
    assert jev.questions() == []
    assert answers(kai.show()) == [
        text("nothing_remembered", locale, where=text("where_server", locale, name=LOCAL_GUILD_NAME))
    ]
    assert answers(aoi.show())[0] == text(
        "nothing_remembered", locale, where=text("where_server", locale, name=LOCAL_GUILD_NAME)
    )


@pytest.mark.parametrize("locale", LOCALES)
def test_remember_this_while_paused_learns_nothing_and_says_so(speaker, jev, locale):
    rin = speaker("rin", locale)
    rin.pause()
    jev.clear()
    assert rin.remember("I have started a new job at a bakery") == [EPHEMERAL + text("remember_paused", locale)]
    assert jev.questions() == []
    rin.resume()
    assert listed(rin.show()) == []


@pytest.mark.parametrize("locale", LOCALES)
def test_memory_history_and_its_undo_and_older_buttons_answer_in_the_persons_language(speaker, locale):
    here = text("where_server", locale, name=LOCAL_GUILD_NAME)
    nao, other = speaker("nao", locale), speaker("nao-neighbour", "en-US" if locale == "ja" else "ja")
    other.channel_id = nao.channel_id
    assert answers(nao.history()) == [text("history_nothing", locale, where=here)]
    for n in range(7):  # one more change than a page holds: the page gets its "Older" button
        nao.chat(f"I like the fruit number {n}")
    page = answers(nao.history())[0]
    assert page.startswith(text("history_header", locale, where=here) + "\n1. ")
    assert opening("history_line", locale, n=1) in page
    assert text("change_added", locale) in page and text("who_conversation", locale) in page
    assert page.endswith(text("history_footer", locale))
    labels = [b["label"] for b in nao.buttons]
    assert labels[0] == text("history_undo_label", locale, n=1) and labels[-1] == text("history_older_label", locale)

    undo_one = nao.buttons[0]["custom_id"]
    assert other.click(undo_one) == [EPHEMERAL + text("history_not_yours", other.locale)]  # the clicker's language
    older = nao.history_button("older")
    assert older[0].startswith(f"memorybot: (the page now reads) {text('history_header_older', locale, where=here)}")
    undone = nao.history_button("1")  # the oldest add, on the older page
    assert undone[0].startswith(EPHEMERAL + opening("undo_done", locale))
    assert text("change_added", locale) in undone[0]
    assert nao.click(undo_one)[0].startswith(EPHEMERAL + opening("undo_done", locale))  # the newest add
    assert nao.click(undo_one)[0].startswith(EPHEMERAL + opening("undo_changed", locale))  # gone since
