"""One extraction's model requests, tokens and critical path: the one decision per turn side by side
with the per-record path it replaced (a verdict call per memory and an add decision), on the same
data, through the real adapters.

Both paths run the same harness (``extraction_worker.py``) in a process of their own: this tree,
and the tree of ``PER_RECORD_COMMIT`` (the last commit with the per-record path, taken out of git
history with ``git archive``). Each goes through the real OpenAI-compatible adapters (chat
completions and embeddings, one limiter, the retry policy) over HTTP to loopback servers that hold
every chat call for L and every embedding call for E (E = L: embeddings as slow as the chat model;
E = L / 10: ten times faster).

Figures per extraction, at 0, 1, 5 and 10 memories read, every memory kept or every one updated
(Jev wants an add in both), twelve memories of which the ten ranked are read (the query's
embedding is made then), and small talk (ten memories, "not worth keeping"):

- model requests (chat completions; embeddings are counted apart);
- input tokens: cl100k over every message of every request, plus 4 a message (the chat format's
  overhead); output tokens: cl100k over each answer. Counted with quicktok's cl100k_base, whose ids
  are tiktoken's (checked below on a known string), so the figures are exact offline;
- the prompts dated as deployed (``MEMORYBOT_TIMEZONE``, Asia/Tokyo by default), a live turn's lines
  over the two minutes before now (see the worker); the per-record tree predates dates, so its
  figures carry none;
- the critical path, in L: until the last change is committed, and until ``run`` returns (a
  vector still on its way at the write is stored right after it, so "returned" can be later).

Goals with ten memories: kept + add <= 4 requests, <= 1,500 input tokens, <= 2.2 L; every memory
updated + add <= 4,500 input tokens, <= 3.2 L; small talk one request, <= 350 tokens.

Beside them, the shape's floor on this machine: a call, another, then ten at once, as bare POSTs
through one warm httpx client to the same loopback server (no prompt, no parsing, no store;
``extraction_worker.floor``). What it takes over 3 L is this machine's (its timers and waking up
after each wait, the loopback, the Python server), which no path can go under; the path's figure
over it is what the path itself costs. A loopback delay counts from the request's arrival (see
``tests/loopback``), so the server's own work is inside L.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.loopback.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "extraction_worker.py"
PER_RECORD_COMMIT = "257adc0857a3434ff49e2dd624cd7ea4e3fc2b9f"  # the write path before one decision per turn
LATENCIES = (0.05, 0.2)
EMBEDDING_SPEEDS = ((1.0, "E = L"), (0.1, "E = L/10"))
MEMORY_COUNTS = (0, 1, 5, 10)
RUNS = 3  # the median of three per cell
MESSAGE_OVERHEAD = 4  # tokens a chat message costs beyond its content
ANSWER_TEXT = "Moved to Osaka last month for a new job at a game studio, ten minutes from home"
_MEMORY_ID = re.compile(r'<memory id="([^"]+)"')


def cl100k():
    import quicktok

    encoding = quicktok.get_encoding("cl100k_base")
    assert encoding.encode("hello world") == [15339, 1917], "not cl100k_base"
    return encoding


def request_tokens(encoding, bodies) -> int:
    """Input tokens of chat-completions requests: cl100k over every message's content, plus the
    chat format's overhead a message."""
    return sum(len(encoding.encode(m["content"])) + MESSAGE_OVERHEAD for b in bodies for m in b["messages"])


@dataclass(frozen=True)
class Case:
    name: str
    memories: int
    verdict: str  # what Jev answers for every memory
    worth: float


CASES = [Case(f"{n} kept + add", n, "keep", 0.9) for n in MEMORY_COUNTS]
CASES += [Case(f"{n} updated + add", n, "update", 0.9) for n in MEMORY_COUNTS if n]
# Twelve in the profile: the ten read are ranked, with the query's embedding (made only then).
CASES += [Case("12 kept + add (10 read)", 12, "keep", 0.9)]
CASES += [Case("small talk (10 read)", 10, "keep", 0.1)]


@dataclass
class Judge:
    """Answers every question both paths ask, from its prompt, and keeps each answer it gave."""

    case: Case = CASES[0]
    answers: list[tuple[dict, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict) -> str:
        asked = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        if '{"verdicts"' in asked:  # the one decision
            verdicts = dict.fromkeys(_MEMORY_ID.findall(asked), self.case.verdict)
            answer = json.dumps({"verdicts": verdicts, "add": 0.9})
        elif '{"verdict"' in asked:  # a per-record verdict
            answer = json.dumps({"verdict": self.case.verdict})
        elif '{"probability"' in asked:  # worth, or the per-record add decision (which lists the verdicts)
            add = "existing memories and verdicts" in asked
            answer = json.dumps({"probability": 0.9 if add else self.case.worth})
        elif '{"text"' in asked:  # a dated writing task: the text and a plan's end
            answer = json.dumps({"text": ANSWER_TEXT, "validUntil": None}, ensure_ascii=False)
        else:
            answer = ANSWER_TEXT
        with self.lock:
            self.answers.append((body, answer))
        return answer


@dataclass
class Figures:
    requests: int
    input_tokens: int
    output_tokens: int
    embedding_requests: int
    committed: float | None  # in L
    returned: float  # in L


class Path_:
    """One source tree's write path, driven through the worker over a pipe."""

    def __init__(self, name: str, tree: Path) -> None:
        self.name = name
        # The tree's own sources first: ahead of the editable install of this one.
        env = {**os.environ, "PYTHONPATH": f"{tree / 'functions'}:{tree}"}
        self._process = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
            env=env,
        )

    def run(self, request: dict) -> dict:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker stopped")
        return json.loads(line)

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


@contextmanager
def per_record_tree() -> Iterator[Path | None]:
    """The per-record path's sources, from git history; None when this clone does not have them."""
    with tempfile.TemporaryDirectory(prefix="per-record-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", PER_RECORD_COMMIT, "functions", "tests", "benchmarks"],
            capture_output=True,
        )
        if archive.returncode != 0:
            yield None
            return
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp)


def measure(path: Path_, case: Case, latency: float, embed_factor: float, chat, embed, judge, encoding) -> Figures:
    runs = []
    for attempt in range(RUNS + 1):  # the first warms the worker's connections up, and is not counted
        chat.clear()
        embed.clear()
        chat.set_delay(latency)
        embed.set_delay(latency * embed_factor)
        judge.case, judge.answers = case, []
        chat.responder = judge
        runs.append(path.run({"chat": chat.url, "embed": embed.url, "memories": case.memories}))
        if attempt == 0:
            runs.pop()
            continue
        expected_updates = min(case.memories, 10) if case.verdict == "update" and case.worth > 0.5 else 0
        assert runs[-1]["updated"] == expected_updates, (path.name, case, runs[-1])
        assert runs[-1]["added"] == (1 if case.worth > 0.5 else 0), (path.name, case, runs[-1])
    bodies = [body for body, _ in judge.answers]  # the last run's
    inputs = request_tokens(encoding, bodies)
    outputs = sum(len(encoding.encode(answer)) for _, answer in judge.answers)
    committed = [r["committed"] for r in runs if r["committed"] is not None]
    return Figures(
        requests=len(bodies),
        input_tokens=inputs,
        output_tokens=outputs,
        embedding_requests=len(embed.embedding_requests()),
        committed=statistics.median(committed) / latency if committed else None,
        returned=statistics.median(r["elapsed"] for r in runs) / latency,
    )


def measure_floor(path: Path_, latency: float, chat, judge) -> tuple[float, float]:
    """The shape's floor on this machine, in L (one bare call; a call, a call, then ten at once),
    the median of RUNS after one uncounted run; see ``extraction_worker.floor``."""
    chat.clear()
    chat.set_delay(latency)
    judge.case, judge.answers = CASES[0], []
    chat.responder = judge
    runs = [path.run({"chat": chat.url, "floor": True}) for _ in range(RUNS + 1)][1:]
    return (statistics.median(r["one"] for r in runs) / latency, statistics.median(r["chain"] for r in runs) / latency)


def _over(table: dict[tuple, Figures], latency: float, chain: float) -> str:
    """How much later than the floor the one decision's last change of "10 updated + add" was
    committed, in ms, at each embedding speed."""
    cells = []
    for factor, label in EMBEDDING_SPEEDS:
        committed = table[("one decision", "10 updated + add", latency, factor)].committed
        if committed is not None:
            cells.append(f"+{(committed - chain) * latency * 1000:.1f} ms ({label})")
    return ", ".join(cells)


def _l(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main() -> None:
    encoding = cl100k()
    judge = Judge()
    with per_record_tree() as old_tree, OpenAIServer() as chat, OpenAIServer() as embed:
        paths = [Path_("one decision", ROOT)]
        if old_tree is not None:
            paths.insert(0, Path_("per record", old_tree))
        else:
            print(f"(commit {PER_RECORD_COMMIT[:7]} is not in this clone: the per-record path is not measured)")
        try:
            table: dict[tuple, Figures] = {}
            floors = {latency: measure_floor(paths[-1], latency, chat, judge) for latency in LATENCIES}
            for latency in LATENCIES:
                for factor, _ in EMBEDDING_SPEEDS:
                    for case in CASES:
                        for path in paths:
                            table[(path.name, case.name, latency, factor)] = measure(
                                path, case, latency, factor, chat, embed, judge, encoding
                            )
        finally:
            for path in paths:
                path.close()
    names = [p.name for p in paths]
    print("Requests and tokens per extraction (cl100k; the same at every L; embeddings apart):")
    header = " | ".join(f"{n}: requests, in, out (embeds)" for n in names)
    print(f"{'case':<24} | {header}")
    for case in CASES:
        cells = []
        for name in names:
            f = table[(name, case.name, LATENCIES[0], EMBEDDING_SPEEDS[0][0])]
            cells.append(f"{f.requests:>3} {f.input_tokens:>6,} {f.output_tokens:>5,} ({f.embedding_requests})")
        print(f"{case.name:<24} | " + " | ".join(f"{c:<33}" for c in cells))
    print("\nThe shape's floor on this machine (bare POSTs through one warm httpx client to the same server):")
    for latency, (one_call, chain) in floors.items():
        print(
            f"L = {latency * 1000:.0f} ms: one call {one_call:.2f} L; a call, a call, then ten at once {chain:.2f} L "
            f"(the path over it: every memory updated + add {_over(table, latency, chain)})"
        )
    for latency in LATENCIES:
        for factor, label in EMBEDDING_SPEEDS:
            print(f"\nCritical path in L, L = {latency * 1000:.0f} ms, {label}: last change committed / run returned")
            print(f"{'case':<24} | " + " | ".join(f"{n:<14}" for n in names))
            for case in CASES:
                cells = [table[(n, case.name, latency, factor)] for n in names]
                print(f"{case.name:<24} | " + " | ".join(f"{_l(f.committed):>5} / {_l(f.returned):<6}" for f in cells))
    for factor, label in EMBEDDING_SPEEDS:
        after = {c.name: table[("one decision", c.name, LATENCIES[-1], factor)] for c in CASES}
        kept, updated, small = after["10 kept + add"], after["10 updated + add"], after["small talk (10 read)"]
        print(
            f"\nGoals, ten memories (one decision, L = 200 ms, {label}): "
            f"kept + add {kept.requests} requests (<= 4), {kept.input_tokens:,} input tokens (<= 1,500), "
            f"{_l(kept.committed)} L (<= 2.2); updated + add {updated.input_tokens:,} tokens (<= 4,500), "
            f"{_l(updated.committed)} L (<= 3.2); small talk {small.requests} request, "
            f"{small.input_tokens} tokens (<= 350); twelve in the profile, kept + add "
            f"{_l(after['12 kept + add (10 read)'].committed)} L"
        )
    for latency in LATENCIES[:-1]:
        cells = []
        for factor, label in EMBEDDING_SPEEDS:
            kept, updated = (table[("one decision", c, latency, factor)] for c in ("10 kept + add", "10 updated + add"))
            cells.append(f"{label}: kept + add {_l(kept.committed)} L, updated + add {_l(updated.committed)} L")
        print(
            f"At L = {latency * 1000:.0f} ms: " + "; ".join(cells) + f" (the shape's floor on this machine: "
            f"{floors[latency][1]:.2f} L)"
        )


if __name__ == "__main__":
    main()
