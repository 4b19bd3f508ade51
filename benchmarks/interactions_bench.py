"""The interactions function against Discord's 3-second budget.

Cold: fresh Python processes, median of several runs: the handler module's import time beside
a bare ``import boto3``, and the time from nothing to the answer of a first signed /chat
(imports, clients built, the message stored in DynamoDB on moto). Warm: in-process latency
(p50, p99) of a signed PING and a signed /chat. Figures are printed, nothing is asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # infra (the stack's own code-asset bundler)
COLD_RUNS = 7
WARM_PING = 500
WARM_CHAT = 200

IMPORT = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
# The same import's CPU time (user + system of the process): steadier than the wall clock on a
# loaded machine, where the wall clock also counts the time the process waited for a core.
IMPORT_CPU = "import time; t = time.process_time(); import {module}; print(time.process_time() - t)"

# A first /chat in a fresh process: what a cold Lambda container does before answering.
FIRST_CHAT = """
import time
t0 = time.perf_counter()
import memorybot.handlers.interactions as h
t1 = time.perf_counter()
import json, sys
from memorybot import bootstrap, config
from memorybot.adapters.invoker import LocalContext
class Handoff:
    def invoke(self, job):
        pass
bootstrap.install(bootstrap.Container(config.settings(), invoker=Handoff()))  # the Lambda invoke itself is not on moto
event = json.loads(sys.stdin.read())
t2 = time.perf_counter()
response = h.handler(event, LocalContext("bench"))
t3 = time.perf_counter()
assert json.loads(response["body"]) == {"type": 5}, response
print(json.dumps({"import": t1 - t0, "first_chat": t3 - t2, "total": (t1 - t0) + (t3 - t2)}))
"""


# A deployed function ships compiled bytecode; PYTHONDONTWRITEBYTECODE would make our own
# modules compile from source on every run, so the subprocesses cache bytecode outside the tree.
PYCACHE = tempfile.mkdtemp(prefix="memorybot-bench-pycache-")


def _python(code: str, env: dict | None = None, stdin: str = "") -> str:
    env = {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    out = subprocess.run(
        [sys.executable, "-c", code], input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    return out.stdout.strip()


def _median_imports(*modules: str) -> list[float]:
    """Median import time of each module; runs interleave so machine load hits all alike."""
    for module in modules:
        _python(IMPORT.format(module=module))  # fills the bytecode cache
    runs = [[float(_python(IMPORT.format(module=m))) for m in modules] for _ in range(COLD_RUNS)]
    return [statistics.median(run[i] for run in runs) for i in range(len(modules))]


def _deployed_tree(with_bytecode: bool) -> Path:
    """The code asset as shipped (built by the stack's own bundler, for this interpreter's Python),
    or as it was shipped before (sources only)."""
    from infra.code_asset import build_code

    out = Path(tempfile.mkdtemp(prefix="memorybot-bench-asset-"))
    build_code(out, "%d.%d" % sys.version_info[:2])
    if not with_bytecode:
        for cache in out.rglob("__pycache__"):
            shutil.rmtree(cache)
    for path in out.rglob("*"):  # read-only, like Lambda's /var/task
        path.chmod(path.stat().st_mode & ~0o222)
    return out


def _deployed_shape_imports(code: str = IMPORT) -> list[tuple[str, float, float]]:
    """(label, handler import, boto3 import) medians with a read-only tree and no bytecode cache
    (PYTHONDONTWRITEBYTECODE=1, no PYTHONPYCACHEPREFIX): each cold start compiles whatever has no pyc.
    The dependencies come from the venv, with their bytecode, in both shapes."""
    rows = []
    for label, with_bytecode in (("sources only (before)", False), ("with shipped bytecode", True)):
        tree = _deployed_tree(with_bytecode)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
        env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)})
        run = lambda module: float(
            subprocess.run(  # noqa: E731
                [sys.executable, "-c", code.format(module=module)],
                capture_output=True,
                text=True,
                env=env,
                cwd=tree,
                check=True,
            ).stdout.strip()
        )
        samples = [(run("memorybot.handlers.interactions"), run("boto3")) for _ in range(COLD_RUNS)]
        rows.append((label, statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)))
    return rows


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


SIGNING_KEY = ""
CHANNEL = "700000000000000001"
_sequence = iter(range(1, 10**9))


def setup() -> tuple[dict[str, str], object]:
    """moto on loopback with fresh tables, and a key pair: the environment a function would have."""
    global SIGNING_KEY
    from memorybot.discord.signature import new_key_pair
    from memorybot.local import moto_dynamo

    moto = moto_dynamo.start()
    moto_dynamo.create_tables(moto.client(), "bench-")
    SIGNING_KEY, public_key = new_key_pair()
    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": moto.endpoint,
        "AWS_DEFAULT_REGION": moto_dynamo.LOCAL_REGION,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "MEMORYBOT_TABLE_PREFIX": "bench-",
        "DISCORD_PUBLIC_KEY": public_key,
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    return env, moto


def _signed(payload: dict) -> dict:
    from memorybot.discord.signature import sign

    body = json.dumps(payload).encode()
    return {
        "version": "2.0",
        "headers": {k.lower(): v for k, v in sign(SIGNING_KEY, body).items()},
        "body": body.decode(),
        "isBase64Encoded": False,
    }


def ping_event() -> dict:
    return _signed({"type": 1})


def chat_event() -> dict:
    from datetime import datetime

    from memorybot.core.record.domain import snowflake_at

    return _signed(
        {
            "id": snowflake_at(datetime.now(UTC), next(_sequence)),
            "application_id": "1",
            "type": 2,
            "token": "t",
            "channel_id": CHANNEL,
            "guild_id": "800000000000000001",
            "member": {"user": {"id": "100000000000000001", "username": "alice"}},
            "data": {"name": "chat", "options": [{"type": 3, "name": "message", "value": "I like green tea"}]},
        }
    )


def main() -> None:
    handler_import, boto3_import = _median_imports("memorybot.handlers.interactions", "boto3")
    print(f"cold import, median of {COLD_RUNS} fresh processes:")
    print(f"  memorybot.handlers.interactions  {handler_import * 1000:7.1f} ms")
    print(f"  boto3 (bare)                     {boto3_import * 1000:7.1f} ms")
    print(f"  ratio handler / boto3            {handler_import / boto3_import:7.2f}")
    print(f"cold import in the deployed shape (read-only tree, no bytecode cache written), median of {COLD_RUNS}:")
    for label, handler, boto3_time in _deployed_shape_imports():
        print(
            f"  {label:<24} handler {handler * 1000:6.1f} ms, boto3 {boto3_time * 1000:6.1f} ms, "
            f"ratio {handler / boto3_time:5.2f}"
        )
    print(f"the same in CPU time (the process's user + system time), median of {COLD_RUNS}:")
    for label, handler, boto3_time in _deployed_shape_imports(IMPORT_CPU):
        print(
            f"  {label:<24} handler {handler * 1000:6.1f} ms, boto3 {boto3_time * 1000:6.1f} ms, "
            f"ratio {handler / boto3_time:5.2f}"
        )

    env_settings, moto = setup()
    try:
        env = {**os.environ, **env_settings}
        firsts = [json.loads(_python(FIRST_CHAT, env, json.dumps(chat_event()))) for _ in range(COLD_RUNS + 1)][1:]
        for key, label in (
            ("import", "import"),
            ("first_chat", "first /chat (clients built, message stored)"),
            ("total", "total to the answer"),
        ):
            print(f"  cold {label:<45} {statistics.median(f[key] for f in firsts) * 1000:7.1f} ms (median)")

        os.environ.update(env_settings)
        from memorybot import bootstrap, config
        from memorybot.adapters.invoker import LocalContext
        from memorybot.handlers import interactions

        config.settings.cache_clear()

        class Handoff:
            def invoke(self, job) -> None:
                pass

        bootstrap.install(bootstrap.Container(config.settings(), invoker=Handoff()))
        context = LocalContext("bench")
        for label, make, runs in (("PING", ping_event, WARM_PING), ("/chat", chat_event, WARM_CHAT)):
            events = [make() for _ in range(runs + 20)]
            samples = []
            for i, event in enumerate(events):
                start = time.perf_counter()
                interactions.handler(event, context)
                if i >= 20:  # the first few warm the clients up
                    samples.append(time.perf_counter() - start)
            p50, p99 = _percentiles(samples)
            print(f"warm signed {label:<6} p50 {p50 * 1000:6.2f} ms   p99 {p99 * 1000:6.2f} ms   ({runs} requests)")
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
