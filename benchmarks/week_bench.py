"""A simulated week on the local stack (`memorybot local` in its own process, moto inside it), driven
over HTTP as Discord and an operator would; the week comes from benchmarks/week_generator.py.

Jev and the chat model are loopback servers behind the real HTTP adapters (the chat model
OpenAI-compatible); now and then each answers 503 once (the generator's faults). The two servers'
traffic runs on two threads, each person's turns in order, so the stack answers requests and runs
its background work concurrently, as it does for people. Printed: per day, the turns, the median
turn (a /chat until its reply is posted and its extraction has run: the terminal client's wait),
the night's wall time and the stack's resident memory after it (VmRSS); the import's cost per row
for each of ten people, one request each; tracebacks in the stack's output; failed background
invocations; whether the erased people left anything (a dry-run erasure finds nothing); and how
long the stack, at the week's size, takes to stop on Ctrl-C.

Beside each wall time, the stack process's own CPU time (all its threads, from /proc): a day's
turns (their replies and extractions) divided by their number, and each import request divided
by its rows. Other work on a shared machine stretches the wall times; it hardly changes how much
CPU the stack spends on the same work, so the CPU figures show a trend the wall times can hide.

The median turn is also given for the people the import brought no memories to: a turn reads the
speaker's whole profile (the relevance selection), so the imported people's turns cost more from
the import on, whatever the store.

Goals (issue 28): last day's median turn <= 1.3x the first's, resident memory after the week
<= 400 MB, import cost per row flat across the ten people (last <= 1.3x first), zero tracebacks.

A shorter week: BENCH_WEEK_DAYS, BENCH_WEEK_PEOPLE, BENCH_WEEK_TURNS (a day's turns), BENCH_WEEK_SEED
(defaults 7, 30, 130, 7: about 910 turns).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADMIN_SECRET = "week-bench-admin-secret"
ADMIN = {"Authorization": f"Bearer {ADMIN_SECRET}"}
TURN_GOAL = 1.3
MEMORY_GOAL_MB = 400
IMPORT_GOAL = 1.3
STOP_GOAL_SECONDS = 2.0
STOP_WAIT_SECONDS = 150  # longer than the drain the stack once did on Ctrl-C (120 s)


def _cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far, every thread's (fields 14 and 15 of /proc/pid/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Figures:
    turns: dict[int, list[float]]
    plain_turns: dict[int, list[float]]  # the turns of people the import did not bring memories to
    nights: dict[int, float]
    resident: dict[int, float]
    import_per_row: list[float]
    turn_cpu: dict[int, float] = field(default_factory=dict)  # the stack's CPU ms per turn, a day
    import_cpu_per_row: list[float] = field(default_factory=list)  # the stack's CPU ms a row, a request
    failed_invocations: int = 0
    left_of_erased: int = 0
    stopped_after: float = float("nan")


def main() -> None:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]  # the loopback servers, the stack process
    import httpx
    from stack_process import StackProcess, loopback_models

    from benchmarks.week_generator import generate
    from loopback.jev_server import JevServer
    from loopback.openai_server import OpenAIServer
    from memorybot.local.client import find_signing_key

    days = int(os.environ.get("BENCH_WEEK_DAYS", "7"))
    people = int(os.environ.get("BENCH_WEEK_PEOPLE", "30"))
    per_day = int(os.environ.get("BENCH_WEEK_TURNS", "130"))
    seed = int(os.environ.get("BENCH_WEEK_SEED", "7"))
    week = generate(seed, people, days, per_day, end=datetime.now(UTC))
    print(f"{days} days, {people} people in {2} servers and DMs, {days * per_day} turns (en, ja), seed {seed}")

    state_dir = Path(tempfile.mkdtemp(prefix="memorybot-week-")) / ".memorybot"
    state_dir.mkdir()
    with JevServer(worth=0.9, add=0.9, verdict="keep", review="keep") as jev, OpenAIServer() as llm:
        running = StackProcess(
            state_dir,
            {
                **loopback_models(jev.url, llm.url, chat=True),
                "MEMORYBOT_ADMIN_SECRET": ADMIN_SECRET,
            },
        )
        http = httpx.Client(timeout=300)
        try:
            figures = _run(week, running, jev, llm, http, find_signing_key(state_dir))
            figures.stopped_after = _ctrl_c(running)
        finally:
            http.close()
            running.stop()
    tracebacks = sum("Traceback (most recent call last)" in line for line in running.output)
    _report(figures, tracebacks)


def _ctrl_c(running) -> float:
    """Seconds from Ctrl-C (SIGINT) to the stack's exit, at the week's size."""
    import signal
    import subprocess

    signalled = time.monotonic()
    running.process.send_signal(signal.SIGINT)
    try:
        running.process.wait(timeout=STOP_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        running.process.kill()
    return time.monotonic() - signalled


def _run(week, running, jev, llm, http, key: str) -> Figures:
    from memorybot.local.people import dm_channel_for

    clients: dict[tuple[str, bool], WeekClient] = {}
    clients_lock = threading.Lock()

    def client(person, in_dm: bool = False) -> WeekClient:
        with clients_lock:
            found = clients.get((person.name, in_dm))
            if found is None:
                channel = dm_channel_for(person.name) if in_dm else _channel(person.server)
                found = WeekClient(
                    running.url,
                    person.name,
                    key,
                    channel,
                    None if in_dm else person.server,
                    http=http,
                    admin_secret=ADMIN_SECRET,
                    locale=person.locale,
                )
                clients[(person.name, in_dm)] = found
            return found

    figures = Figures({}, {}, {}, {}, [])
    imported = {
        row["userId"] for day in week.days for a in day.before if a.kind == "import" for r in a.rows for row in r
    }
    erased: list[str] = []
    for day in week.days:
        for action in day.before:
            _operator_action(action, day, client, running, http, figures, erased)
        cpu_before = _cpu_seconds(running.process.pid)
        timings, plain = _turns_of(day, client, jev, llm, imported)
        http.post(f"{running.url}/local/drain", headers=ADMIN)  # the day's extractions done
        figures.turn_cpu[day.number] = (_cpu_seconds(running.process.pid) - cpu_before) * 1000 / len(timings)
        figures.turns[day.number] = timings
        figures.plain_turns[day.number] = plain
        started = time.perf_counter()
        night = http.post(f"{running.url}/local/nightly", json={"now": day.night.isoformat()}, headers=ADMIN)
        figures.nights[day.number] = time.perf_counter() - started
        if night.status_code != 200:
            print(f"  night {day.number}: HTTP {night.status_code} {night.text[:200]}")
        figures.resident[day.number] = _resident_mb(running.process.pid)
        print(
            f"  day {day.number}: {len(timings)} turns, median {statistics.median(timings):.0f} ms "
            f"(stack CPU {figures.turn_cpu[day.number]:.0f} ms a turn); "
            f"night {figures.nights[day.number]:.1f} s; resident {figures.resident[day.number]:.0f} MB",
            flush=True,
        )
    drained = http.post(f"{running.url}/local/drain", headers=ADMIN).json()
    figures.failed_invocations = drained.get("failedInvocations", 0)
    for user_id in erased:
        left = http.post(f"{running.url}/memory/erase", json={"userId": user_id, "dryRun": True}, headers=ADMIN)
        found = left.json() if left.status_code == 200 else {}
        figures.left_of_erased += found.get("memories", 0) + found.get("messages", 0)
    return figures


def _operator_action(action, day, client, running, http, figures: Figures, erased: list[str]) -> None:
    """One of the day's actions before its turns: an operator's (import, erase, rollback) or a person's command."""
    from memorybot.local.people import user_id_for

    if action.kind == "import":
        for rows in action.rows:
            started, cpu_before = time.perf_counter(), _cpu_seconds(running.process.pid)
            answer = http.post(f"{running.url}/memory/import", json={"memories": rows}, headers=ADMIN)
            assert answer.status_code == 200, answer.text
            figures.import_per_row.append((time.perf_counter() - started) * 1000 / len(rows))
            figures.import_cpu_per_row.append((_cpu_seconds(running.process.pid) - cpu_before) * 1000 / len(rows))
            print(
                f"  import: {len(rows)} rows, {figures.import_per_row[-1]:.1f} ms a row "
                f"(stack CPU {figures.import_cpu_per_row[-1]:.1f} ms)",
                flush=True,
            )
    elif action.kind == "erase":
        user_id = user_id_for(action.person.name)
        answer = http.post(f"{running.url}/memory/erase", json={"userId": user_id}, headers=ADMIN)
        assert answer.status_code in (200, 404), answer.text
        erased.append(user_id)
    elif action.kind == "rollback":
        answer = http.post(f"{running.url}/memory/rollback", json={}, headers=ADMIN)
        assert answer.status_code in (200, 404, 409), answer.text
    else:
        who = client(action.person)
        who.at = day.night - timedelta(hours=23)  # the day's start
        if action.kind == "pause":
            who.pause()
        elif action.kind == "resume":
            who.resume()
        elif action.kind == "forget-all":
            who.forget_all()
            who.click()


def _turns_of(day, client, jev, llm, imported: set[str]) -> tuple[list[float], list[float]]:
    """The day's turns, each server's in a thread of its own: every turn's time, and those of the
    people the import brought nothing to."""
    from memorybot.local.people import user_id_for

    timings: list[float] = []
    plain: list[float] = []
    timings_lock = threading.Lock()

    def server_traffic(turns) -> None:
        for turn in turns:
            who = client(turn.person, turn.in_dm)
            who.at = turn.at
            if turn.jev_fault:
                jev.answer_once("/worth", status=503)
            if turn.chat_fault:
                llm.answer_once(llm.COMPLETIONS_PATH, status=503)
            started = time.perf_counter()
            who.chat(turn.text)
            took = (time.perf_counter() - started) * 1000
            with timings_lock:
                timings.append(took)
                if user_id_for(turn.person.name) not in imported:
                    plain.append(took)

    threads = [threading.Thread(target=server_traffic, args=(t,)) for t in day.turns_by_server.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timings, plain


def _channel(server: str) -> str:
    from benchmarks.week_generator import CHANNELS

    return CHANNELS[server]


def _report(f: Figures, tracebacks: int) -> None:
    days = sorted(f.turns)
    print(
        "\n| day | turns | median turn (ms) | the same, people with no import | stack CPU a turn (ms) "
        "| night (s) | resident (MB) |"
    )
    print("|---|---|---|---|---|---|---|")
    for d in days:
        plain = f"{statistics.median(f.plain_turns[d]):.0f}" if f.plain_turns[d] else "-"
        print(
            f"| {d} | {len(f.turns[d])} | {statistics.median(f.turns[d]):.0f} | {plain} | {f.turn_cpu[d]:.0f} "
            f"| {f.nights[d]:.1f} | {f.resident[d]:.0f} |"
        )
    first, last = statistics.median(f.turns[days[0]]), statistics.median(f.turns[days[-1]])
    turn_ratio = last / first
    print(f"\nlast day's median turn / first's: {turn_ratio:.2f}x (goal <= {TURN_GOAL}x)")
    if f.plain_turns[days[0]] and f.plain_turns[days[-1]]:
        plain_ratio = statistics.median(f.plain_turns[days[-1]]) / statistics.median(f.plain_turns[days[0]])
        print(f"  the same for the people the import brought no memories to: {plain_ratio:.2f}x")
    print(f"  the stack's CPU a turn, last day / first: {f.turn_cpu[days[-1]] / f.turn_cpu[days[0]]:.2f}x")
    print(f"resident memory after the week: {f.resident[days[-1]]:.0f} MB (goal <= {MEMORY_GOAL_MB} MB)")
    if f.import_per_row:
        rows = ", ".join(f"{ms:.1f}" for ms in f.import_per_row)
        ratio = f.import_per_row[-1] / f.import_per_row[0]
        print(f"import, ms a row, person by person: {rows}; last / first {ratio:.2f}x (goal <= {IMPORT_GOAL}x)")
        cpu = ", ".join(f"{ms:.1f}" for ms in f.import_cpu_per_row)
        print(
            f"  the stack's CPU, ms a row: {cpu}; last / first {f.import_cpu_per_row[-1] / f.import_cpu_per_row[0]:.2f}x"
        )
    print(f"tracebacks in the stack's output: {tracebacks} (goal 0)")
    print(f"failed background invocations: {f.failed_invocations}")
    print(f"memories and messages the erased people left: {f.left_of_erased} (must be 0)")
    print(f"Ctrl-C after the week: stopped in {f.stopped_after:.1f} s (goal <= {STOP_GOAL_SECONDS:.0f} s)")


def _week_client():
    from memorybot.core.record.domain import snowflake_at
    from memorybot.local import client as terminal

    @dataclass
    class WeekClient(terminal.LocalClient):
        """The terminal client, its interactions stamped at the simulated time (``at``)."""

        at: datetime | None = None

        def _payload(self, name: str, options: list, kind: int = 2) -> dict:
            payload = super()._payload(name, options, kind)
            if self.at is not None:
                payload["id"] = snowflake_at(self.at, next(terminal._SEQUENCE))
            return payload

    return WeekClient


WeekClient = _week_client()


if __name__ == "__main__":
    main()
