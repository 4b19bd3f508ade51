"""What the bot writes into Discord messages, over HTTP against the local stack in its own process:
text from outside (a server's name, a memory's text, an id someone typed) is shown as written,
never as markup, in the show DM and its header, /memory history, /memory why and the forget-all
question; and every time a person reads is in the deployment's zone (``MEMORYBOT_TIMEZONE``, here
America/New_York), labelled, while the export file keeps ISO times in UTC."""

from __future__ import annotations

import itertools
import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest
from stack_process import StackProcess, loopback_models

from loopback.jev_server import JevServer
from memorybot.local.client import LocalClient, find_signing_key

ADMIN_SECRET = "texts-admin-secret-7"
ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}
ZONE_NAME = "America/New_York"
ZONE = ZoneInfo(ZONE_NAME)
EVIL_GUILD_ID = "1710000000000000001"
EVIL_NAME = "[evil](https://x.example) @everyone **loud** `code`"
SAID = "I love **bold** tea from [the shop](https://x.example/tea) and `code` ~~strike~~ ||spoiler||"
WRITTEN = "Loves **bold** tea from [the shop](https://x.example/tea) and `code` ~~strike~~ ||spoiler||"
_channels = itertools.count(1710000000000000101)

# Markup Discord would take from a message: each rule finds it where no backslash escapes it.
MARKUP = {
    "masked link": re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\("),
    "bold or italics": re.compile(r"(?<!\\)\*"),
    "strike": re.compile(r"(?<!\\)~"),
    "spoiler": re.compile(r"(?<!\\)\|"),
    "code": re.compile(r"(?<!\\)`"),
}
STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d) ([A-Z][A-Za-z0-9+-]+)")


def discord_shows(raw: str) -> str:
    """Discord's escape rule: a backslash before punctuation is not shown."""
    return re.sub(r"\\([^0-9A-Za-z\s])", r"\1", raw)


def markup_in(raw: str) -> list[str]:
    return [name for name, rule in MARKUP.items() if rule.search(raw)]


@pytest.fixture(scope="module")
def texts_stack(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("texts-state")
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev:
        env = {**loopback_models(jev.url), "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET, "MEMORYBOT_TIMEZONE": ZONE_NAME}
        running = StackProcess(state_dir, env)
        http = httpx.Client(timeout=120)
        key = find_signing_key(state_dir)

        def person(name: str, guild_id: str | None = EVIL_GUILD_ID, locale: str = "en-US") -> LocalClient:
            client = LocalClient(
                running.url,
                name,
                key,
                str(next(_channels)),
                guild_id,
                http=http,
                admin_secret=ADMIN_SECRET,
                locale=locale,
            )
            client.catch_up()
            return client

        try:
            named = http.post(
                f"{running.url}/local/discord/guild", json={"guild_id": EVIL_GUILD_ID, "name": EVIL_NAME}, headers=ADMIN
            )
            assert named.status_code == 200, named.text
            yield running, person, http
        finally:
            http.close()
            running.stop()


def command(client: LocalClient, sub: str, **options: str) -> dict:
    """The raw answer Discord gets for /memory <sub> (its data: content, flags, allowed_mentions)."""
    listed = [{"type": 3, "name": k, "value": v} for k, v in options.items()]
    status, answer = client.send(client._payload("memory", [{"type": 1, "name": sub, "options": listed}]))
    assert status == 200, answer
    return answer["data"]


def dms_to(client: LocalClient, http: httpx.Client, url: str) -> list[dict]:
    events = http.get(f"{url}/local/discord/events", params={"after": 0}, headers=ADMIN).json()["events"]
    return [e["body"] for e in events if e["kind"] == "message" and e["recipient_id"] == client.user_id]


def test_a_servers_name_and_a_memorys_text_are_shown_as_written(texts_stack):
    running, person, http = texts_stack
    eve = person("eve-texts")
    eve.chat(SAID)

    # The show DM: its header names the server, its lines quote the memory, nothing as markup.
    answer = command(eve, "show")
    assert answer["allowed_mentions"] == {"parse": []}
    [dm] = dms_to(eve, http, running.url)
    raw = dm["content"]
    assert markup_in(raw) == [], raw
    shown = discord_shows(raw)
    assert f"in the server {EVIL_NAME} (id, then" in shown, shown
    assert f"[offline] {WRITTEN}"[:80] in shown, shown  # the first 80 characters
    assert dm["allowed_mentions"] == {"parse": []}
    memory_id = re.search(r"^([a-z0-9]{5}) ", shown, re.MULTILINE)[1]

    # /memory history: the header names the server, the line quotes the memory.
    page = command(eve, "history")
    assert markup_in(page["content"]) == [], page["content"]
    shown = discord_shows(page["content"])
    assert f"Your newest changes in the server {EVIL_NAME}, newest first:" in shown, shown
    assert f"“[offline] {WRITTEN[:60]}" in shown
    assert page["allowed_mentions"] == {"parse": []}

    # /memory why: an id someone typed is repeated as typed, not as markup.
    typed = "**[x](https://x.example)**"
    why = command(eve, "why", id=typed)["content"]
    assert markup_in(why) == [] and discord_shows(why) == f"Memory {typed[:20]} was not found among your memories."
    assert f"Memory {memory_id} was learned on" in command(eve, "why", id=memory_id)["content"]

    # The forget-all question names the server, and so does the first-use notice's scope answer.
    ask = command(eve, "forget-all")["content"]
    assert markup_in(ask) == [] and f"about you in the server {EVIL_NAME}?" in discord_shows(ask), ask

    # The terminal client prints what Discord shows.
    assert f"in the server {EVIL_NAME} (id" in "\n".join(eve.show())


def test_a_japanese_answer_quotes_the_server_as_written_too(texts_stack):
    running, person, http = texts_stack
    ken = person("ken-texts", locale="ja")
    ken.chat("私は **太字** の [リンク](https://x.example) が好きです")
    raw = command(ken, "history")["content"]
    assert markup_in(raw) == [], raw
    shown = discord_shows(raw)
    assert f"サーバー「{EVIL_NAME}」での最近の変更" in shown, shown
    assert "**太字** の [リンク](https://x.example)" in shown, shown


def near_now(stamp: str, label: str) -> None:
    assert label == datetime.now(ZONE).tzname()  # EST or EDT, never UTC or JST
    at = datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=ZONE)
    assert abs(datetime.now(UTC) - at) < timedelta(minutes=3), stamp


def test_every_time_a_person_reads_is_in_the_deployments_zone_labelled(texts_stack):
    running, person, http = texts_stack
    tom = person("tom-texts", guild_id=None)  # in his DM with the bot
    tom.chat("I love kites")
    command(tom, "show")
    [dm] = dms_to(tom, http, running.url)
    memory_id = re.search(r"^([a-z0-9]{5}) ", discord_shows(dm["content"]), re.MULTILINE)[1]

    why = command(tom, "why", id=memory_id)["content"]
    [(why_at, why_zone)] = STAMP.findall(why)
    near_now(why_at, why_zone)
    assert "UTC" not in why

    history = command(tom, "history")["content"]
    [(added_at, added_zone)] = STAMP.findall(history)
    assert (added_at, added_zone) == (why_at, why_zone) or abs(
        datetime.strptime(added_at, "%Y-%m-%d %H:%M") - datetime.strptime(why_at, "%Y-%m-%d %H:%M")
    ) <= timedelta(minutes=1)
    assert added_zone == why_zone

    assert command(tom, "pause")["content"].startswith("Paused")
    banner = command(tom, "show")["content"]
    [(paused_at, paused_zone)] = STAMP.findall(banner)
    near_now(paused_at, paused_zone)
    assert f"(since {paused_at} {paused_zone})" in banner and "UTC" not in banner

    # The same in Japanese: the same zone, labelled, never "UTC".
    tom.locale = "ja"
    why_ja = command(tom, "why", id=memory_id)["content"]
    assert f"{why_at} {why_zone} に覚えました" in why_ja and "UTC" not in why_ja, why_ja
    banner_ja = command(tom, "show")["content"]
    assert f"（{paused_at} {paused_zone} から）" in banner_ja, banner_ja

    # The export file stays ISO 8601 in UTC.
    command(tom, "export")
    events = http.get(f"{running.url}/local/discord/events", params={"after": 0}, headers=ADMIN).json()["events"]
    [data] = [json.loads(a["text"]) for e in events if e["recipient_id"] == tom.user_id for a in e["attachments"]]
    [scope] = data["scopes"]
    [kept] = scope["memories"]
    assert kept["updatedAt"].endswith("Z") and data["memorySwitch"]["pausedAt"].endswith("Z")
