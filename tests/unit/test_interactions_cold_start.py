"""The interactions function must answer inside Discord's 3 s from a cold start: importing it
must not drag in the HTTP client, the model adapters, boto3, the X-Ray SDK or Powertools
idempotency. (Powertools' package itself touches the bare ``botocore`` package, which is cheap;
botocore's session machinery is what costs, and it must not load.)"""

from __future__ import annotations

import json
import subprocess
import sys

import frontdoor

HEAVY = (
    "httpx",
    "boto3",
    "botocore.session",
    "botocore.client",
    "aws_xray_sdk",
    "memorybot.adapters.models",
    "memorybot.adapters.embeddings",
    "memorybot.core.prompting.selection",  # relevance is the reply and extraction workers' business
    "memorybot.core.prompting.recall",
    "memorybot.adapters.discord_rest",
    "memorybot.adapters.dynamodb_client",
    "memorybot.adapters.dynamodb_memories",
    "memorybot.adapters.dynamodb_messages",
    "aws_lambda_powertools.utilities.idempotency",
    "aws_lambda_powertools.utilities.parameters",
    # The metrics and traces: built by a handler when an invocation ends (or a worker's starts).
    "memorybot.adapters.metrics",
    "memorybot.adapters.metering",
    "memorybot.adapters.tracing",
    # The workers' steps of a conversation, the ports' protocols, the ledger's types and the memories'
    # classes: a /chat is heard by core/turn/hearing.py, which names the ports in annotations only, and
    # the front door takes the domain's terms from core/record/terms.py.
    "memorybot.core.turn.conversation",
    "memorybot.core.record.domain",
    "memorybot.core.record.ports",
    "memorybot.core.record.service_ports",
    "memorybot.core.record.changes",
)


def test_importing_the_interactions_handler_loads_nothing_heavy():
    code = (
        "import json, sys; import memorybot.handlers.interactions; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_requests_jobs_and_settings_print_none_of_their_contents():
    """The parsed requests and the jobs carry a member's words and an interaction's token, the
    settings the plain secrets: none has a generated ``__repr__`` (dropped with their other
    generated methods for the cold start), so a log line or an error that prints one shows none."""
    from memorybot.config import Settings
    from memorybot.core.record.jobs import RememberJob
    from memorybot.discord import requests

    payload = frontdoor.chat("my secret plan")
    chat = requests.parse(json.dumps(payload).encode())
    assert isinstance(chat, requests.Chat) and chat.text == "my secret plan"
    job = RememberJob(
        "1", payload["token"], "1", "7", "100000000000000001", "alice", "global", "", "2", "my secret plan"
    )
    settings = Settings.from_env({"DISCORD_BOT_TOKEN": "bot-token-1"})
    assert settings.secret("DISCORD_BOT_TOKEN") == "bot-token-1"
    for printed in (repr(chat), repr(chat.caller), str(chat), repr(job), repr(settings)):
        for content in ("my secret plan", payload["token"], "bot-token-1", "alice"):
            assert content not in printed
