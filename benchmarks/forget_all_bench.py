"""A forget-all of a large profile on the local stack (`memorybot local` in its own process, moto
inside it), driven over HTTP as Discord would: the profile imported through POST /memory/import,
then /memory forget-all and its confirmation clicked.

Printed for 400 and 2,000 memories: how long the confirmation's HTTP answer took (Discord gives
3 s) and how long until every memory was deleted and the person told so (the confirmation updated
by the job, or, where the deletes run inside the interaction, its answer). Moto's figures on a
shared machine, not DynamoDB's: the answer's time against Discord's 3 s, and the completion's
growth with the profile, are what to read.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADMIN_SECRET = "forget-all-bench-admin-secret"
ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}
SIZES = (400, 2000)
IMPORT_ROWS = 200  # the import route's most rows per request
DISCORD_SECONDS = 3.0
DONE_TIMEOUT_SECONDS = 600


def main() -> None:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]  # the stack process
    import httpx
    from stack_process import StackProcess

    from memorybot.local.client import LOCAL_GUILD_ID, LocalClient, find_signing_key

    state_dir = Path(tempfile.mkdtemp(prefix="memorybot-forget-all-")) / ".memorybot"
    state_dir.mkdir()
    running = StackProcess(state_dir, {"MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET})
    http = httpx.Client(timeout=DONE_TIMEOUT_SECONDS)
    try:
        key = find_signing_key(state_dir)
        print(
            f"forget-all over HTTP, the local stack (moto in its process); Discord answers within {DISCORD_SECONDS} s"
        )
        for size in SIZES:
            person = LocalClient(running.url, f"bench-{size}", key, str(1800000000000000000 + size), http=http)
            person.admin_secret = ADMIN_SECRET
            person.catch_up()
            at = datetime.now(UTC) - timedelta(days=1)
            rows = [
                {
                    "userId": person.user_id,
                    "scope": f"guild:{LOCAL_GUILD_ID}",
                    "text": f"Has a fact of ordinary length about their week, number {n}",
                    "createdAt": at.isoformat(),
                    "id": f"bench-{size}-{n}",
                }
                for n in range(size)
            ]
            for start in range(0, size, IMPORT_ROWS):
                answer = http.post(
                    f"{running.url}/memory/import", json={"memories": rows[start : start + IMPORT_ROWS]}, headers=ADMIN
                )
                assert answer.status_code == 200, answer.text
            asked = "\n".join(person.forget_all())
            assert f"Forget all {size} memories" in asked, asked
            started = time.perf_counter()
            answer = "\n".join(person.click(wait=False))
            answered = time.perf_counter() - started
            done_text = f"Forgotten: {size} memories"
            while done_text not in answer and not _edited(http, running.url, done_text):
                if time.perf_counter() - started > DONE_TIMEOUT_SECONDS:
                    raise SystemExit(f"the forget-all of {size} memories did not finish in {DONE_TIMEOUT_SECONDS} s")
                time.sleep(0.05)
            done = time.perf_counter() - started
            within = "within" if answered < DISCORD_SECONDS else "PAST"
            print(
                f"  {size:5d} memories: the confirmation answered in {answered:6.2f} s ({within} Discord's 3 s); "
                f"all deleted and the person told after {done:6.2f} s"
            )
    finally:
        http.close()
        running.stop()


def _edited(http, url: str, content: str) -> bool:
    events = http.get(f"{url}/local/discord/events", params={"after": 0}, headers=ADMIN).json()["events"]
    return any(e["kind"] == "edit" and content in (e.get("body") or {}).get("content", "") for e in events)
