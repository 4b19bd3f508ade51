"""A cold interactions function answers its first /chat without building what only other answers and
the workers use: the memories' classes, the ledger's types and adapter, the ports' protocols, the
workers' steps of a conversation. (tests/unit/test_interactions_cold_start.py holds the import to
the same; this is the first answer after it, in a fresh process, on moto's DynamoDB over HTTP.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import frontdoor
from memorybot.local import moto_dynamo

NOT_FOR_A_CHAT = (
    "memorybot.core.record.domain",
    "memorybot.core.record.changes",
    "memorybot.core.record.memory_record",
    "memorybot.core.record.ports",
    "memorybot.core.record.service_ports",
    "memorybot.core.turn.conversation",
    "memorybot.adapters.dynamodb_ledger",
    "memorybot.adapters.dynamodb_memories",
)

FIRST_CHAT = """
import json, sys
import memorybot.handlers.interactions as handler
from memorybot import bootstrap, config
from memorybot.adapters.invoker import LocalContext

class Handoff:  # the worker's invocation is not what this measures
    def invoke(self, job):
        pass

bootstrap.install(bootstrap.Container(config.settings(), invoker=Handoff()))
response = handler.handler(json.loads(sys.stdin.read()), LocalContext("first-chat"))
print(json.dumps({"body": json.loads(response["body"]), "loaded": sorted(sys.modules)}))
"""


def test_a_first_chat_is_answered_without_the_memories_ledger_or_ports(moto_server):
    prefix = "first-chat-"
    moto_dynamo.create_tables(moto_server.client(), prefix)
    event = frontdoor.event(frontdoor.chat("I like green tea"))
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint,
        "AWS_DEFAULT_REGION": moto_dynamo.LOCAL_REGION,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "MEMORYBOT_TABLE_PREFIX": prefix,
        "DISCORD_PUBLIC_KEY": frontdoor.PUBLIC_KEY,
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CHAT], input=json.dumps(event), capture_output=True, text=True, env=env, check=True
    )
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert answer["body"] == {"type": 5}  # deferred: the line was stored and handed on
    assert "memorybot.adapters.dynamodb_messages" in answer["loaded"]  # it did go to DynamoDB
    assert [m for m in NOT_FOR_A_CHAT if m in answer["loaded"]] == []
