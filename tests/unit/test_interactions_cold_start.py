"""The interactions function must answer inside Discord's 3 s from a cold start: importing it
must not drag in the HTTP client, the model adapters, boto3, the X-Ray SDK or Powertools
idempotency. (Powertools' package itself touches the bare ``botocore`` package, which is cheap;
botocore's session machinery is what costs, and it must not load.)"""

from __future__ import annotations

import json
import subprocess
import sys

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
)


def test_importing_the_interactions_handler_loads_nothing_heavy():
    code = (
        "import json, sys; import memorybot.handlers.interactions; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
