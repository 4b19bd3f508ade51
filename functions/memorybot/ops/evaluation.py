"""`memorybot eval`: the generated English and Japanese turns (benchmarks/data/eval_{en,ja}.jsonl,
made by benchmarks/generate_eval.py) asked of the configured decision and chat models, through
the adapters a deployment builds (the composition root, from the same settings), and scored
against the data's labels.

Each turn asks what a turn of the bot asks: the decision model's worth and its one decision
over the memories shown, the chat model's memory where the labels expect one, and the reply.
Every question is asked whatever the answer before it, so each is scored on its own:

- worth: precision and recall of "keep it" (probability >= 0.5, the extraction's threshold)
  against the labels (a forget request carries no worth label); an answer that failed counts
  as "not kept", as the extraction treats it;
- verdicts: the share of memories given their labelled verdict, keep, update and delete apart
  (a decision that failed leaves each of its memories wrong);
- ends: the share of written memories whose end (``validUntil``) is the labelled one, a date or
  none;
- unparsed: answers that came back but not in the form asked (``UnusableAnswer``; a decision with
  a verdict or its ``add`` missing or not one of the allowed values); errors: calls that failed
  otherwise (HTTP errors, timeouts, throttles past the deadline);
- requests and tokens as the provider counted them (``ops/model_meter.py``), per 1,000 turns, and
  their estimated cost at the settings' price per model; latency per question, p50 and p95.

Dates in the data are days in Japan's time zone, so the models' prompts are dated there, on the
data's own "now", whatever MEMORYBOT_TIMEZONE says.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from ..config import DEFAULT_TIMEZONE, Settings, estimated_cost
from ..core.prompting.prompts import build_reply_prompt
from ..core.record.domain import (
    WORTH_THRESHOLD,
    Exchange,
    Memory,
    Message,
    Speaker,
    Verdict,
    parse_iso,
    snowflake_at,
)
from ..core.record.ports import ChatModel, DecisionModel, UnusableAnswer
from .model_meter import MeteringRelay, ModelUsage, UsageBook, metered_bedrock, since

LANGUAGES = ("en", "ja")
DEFAULT_SAMPLE = 24  # turns a language: four people's six kinds of turn; the stand-ins take a second
DATA_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "data"  # the repository's data
VERDICTS = (Verdict.KEEP, Verdict.UPDATE, Verdict.DELETE)
PER_TURNS = 1000

# The one person and channel every turn is said in (the scores do not depend on who).
SPEAKER = Speaker("1000000000000000001", "member")
CHANNEL = "1000000000000000002"
SCOPE = "eval"

T = TypeVar("T")


# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class ExpectedWrite:
    current: str | None  # the memory rewritten; None: a new one
    valid_until: date | None  # the end it should carry; None: durable


@dataclass(frozen=True)
class Turn:
    """One labelled turn (see benchmarks/generate_eval.py)."""

    id: str
    person: str
    lang: str
    kind: str
    said: str
    said_at: datetime
    now: datetime
    memories: tuple[Memory, ...]
    worth: bool | None
    verdicts: dict[str, Verdict]
    write: ExpectedWrite | None

    @property
    def message(self) -> Message:
        return Message(
            CHANNEL, snowflake_at(self.said_at), SPEAKER.user_id, SPEAKER.name, self.said, False, SCOPE, SPEAKER.user_id
        )

    @property
    def exchange(self) -> Exchange:
        exchange = Exchange.of(SPEAKER, SCOPE, [self.message])
        assert exchange is not None  # one line of the speaker's own
        return exchange


def _date(text: object) -> date | None:
    return date.fromisoformat(text) if isinstance(text, str) else None


def turn_from(row: dict[str, Any]) -> Turn:
    memories = tuple(
        Memory(
            SPEAKER.user_id,
            m["id"],
            m["text"],
            parse_iso(m["created_at"]),
            parse_iso(m["updated_at"]),
            SCOPE,
            valid_until=_date(m.get("valid_until")),
        )
        for m in row["memories"]
    )
    write = row.get("write")
    return Turn(
        id=row["id"],
        person=row["person"],
        lang=row["lang"],
        kind=row["kind"],
        said=row["said"],
        said_at=parse_iso(row["said_at"]),
        now=parse_iso(row["now"]),
        memories=memories,
        worth=row["worth"],
        verdicts={memory_id: Verdict(v) for memory_id, v in row["verdicts"].items()},
        write=ExpectedWrite(write["current"], _date(write["valid_until"])) if write else None,
    )


def load_turns(data_dir: Path, lang: str, sample: int) -> tuple[list[Turn], int]:
    """The first ``sample`` turns of the language's file (its order mixes every kind), and how many
    it holds."""
    path = data_dir / f"eval_{lang}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"no eval data at {path}: run from the repository (or give --data benchmarks/data); "
            "python -m benchmarks.generate_eval writes it"
        )
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [turn_from(r) for r in rows[:sample]], len(rows)


# ---------------------------------------------------------------- scoring


@dataclass
class Tally:
    right: int = 0
    total: int = 0

    def add(self, right: bool) -> None:
        self.right += right
        self.total += 1

    @property
    def share(self) -> float | None:
        return self.right / self.total if self.total else None


@dataclass
class LanguageScore:
    """Everything measured for one language; the table's row and the JSON's object."""

    lang: str
    turns: int = 0
    worth_tp: int = 0  # kept, and worth keeping
    worth_fp: int = 0  # kept, not worth keeping
    worth_fn: int = 0  # not kept (or no answer), worth keeping
    worth_tn: int = 0
    verdicts: dict[str, Tally] = field(default_factory=lambda: {v.value: Tally() for v in VERDICTS})
    ends: Tally = field(default_factory=Tally)
    questions: int = 0
    unparsed: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, one per question
    usage: dict[str, ModelUsage] = field(default_factory=dict)
    prices: dict[str, tuple[float, float] | None] = field(default_factory=dict)

    # -- worth
    @property
    def worth_precision(self) -> float | None:
        kept = self.worth_tp + self.worth_fp
        return self.worth_tp / kept if kept else None

    @property
    def worth_recall(self) -> float | None:
        worth = self.worth_tp + self.worth_fn
        return self.worth_tp / worth if worth else None

    @property
    def verdict_accuracy(self) -> float | None:
        right = sum(t.right for t in self.verdicts.values())
        total = sum(t.total for t in self.verdicts.values())
        return right / total if total else None

    # -- spend
    @property
    def requests(self) -> int:
        return sum(u.requests for u in self.usage.values())

    @property
    def tokens_known(self) -> bool:
        return all(u.counted == u.requests for u in self.usage.values())

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens for u in self.usage.values())

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in self.usage.values())

    @property
    def cost_usd(self) -> float | None:
        """Tokens times each model's price; None when a model's tokens or price are unknown."""
        cost = 0.0
        for model, usage in self.usage.items():
            price = self.prices.get(model)
            if price is None or usage.counted != usage.requests:
                return None
            cost += estimated_cost(price, usage.input_tokens, usage.output_tokens)
        return cost

    def per_turns(self, value: float | None) -> float | None:
        return value * PER_TURNS / self.turns if value is not None and self.turns else None

    def latency(self, share: float) -> float | None:
        return percentile(self.latencies, share)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lang": self.lang,
            "turns": self.turns,
            "worth": {
                "precision": self.worth_precision,
                "recall": self.worth_recall,
                "truePositives": self.worth_tp,
                "falsePositives": self.worth_fp,
                "falseNegatives": self.worth_fn,
                "trueNegatives": self.worth_tn,
            },
            "verdicts": {
                "accuracy": self.verdict_accuracy,
                **{v: {"right": t.right, "total": t.total, "share": t.share} for v, t in self.verdicts.items()},
            },
            "ends": {"right": self.ends.right, "total": self.ends.total, "share": self.ends.share},
            "answers": {"questions": self.questions, "unparsed": self.unparsed, "errors": self.errors},
            "per1000Turns": {
                "requests": self.per_turns(self.requests),
                "inputTokens": self.per_turns(self.input_tokens) if self.tokens_known and self.requests else None,
                "outputTokens": self.per_turns(self.output_tokens) if self.tokens_known and self.requests else None,
                "costUsd": self.per_turns(self.cost_usd) if self.requests else None,
            },
            "latencyMs": {"p50": _ms(self.latency(0.5)), "p95": _ms(self.latency(0.95))},
            "models": {
                model: {
                    "requests": u.requests,
                    "inputTokens": u.input_tokens if u.counted == u.requests else None,
                    "outputTokens": u.output_tokens if u.counted == u.requests else None,
                    "pricePerMillion": list(price) if (price := self.prices.get(model)) else None,
                }
                for model, u in sorted(self.usage.items())
            },
        }


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile: the smallest value at or above ``share`` of them."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)), 1) - 1]


def _ms(seconds: float | None) -> float | None:
    return round(seconds * 1000, 1) if seconds is not None else None


# ---------------------------------------------------------------- asking


@dataclass
class Outcome:
    """One question's fate: its answer, or why there is none."""

    answer: Any = None
    unparsed: bool = False
    error: bool = False

    @property
    def answered(self) -> bool:
        return not (self.unparsed or self.error)


def _dated(model: object, now: datetime) -> None:
    """The data's own "now" for a model whose prompts are dated (an LLM backend, the stand-in chat)."""
    if getattr(model, "zone", None) is not None:
        model.clock = lambda: now  # type: ignore[attr-defined]


class Evaluator:
    """Asks each turn's questions of the two models and adds the answers to a language's score."""

    def __init__(self, decision: DecisionModel, chat: ChatModel, settings: Settings) -> None:
        self._decision = decision
        self._chat = chat
        self._settings = settings

    def _ask(self, score: LanguageScore, call: Callable[[], T]) -> Outcome:
        score.questions += 1
        started = time.perf_counter()
        try:
            outcome = Outcome(call())
        except UnusableAnswer:
            outcome = Outcome(unparsed=True)
        except Exception:  # noqa: BLE001 (any failure is the question's alone, as in the bot)
            outcome = Outcome(error=True)
        score.latencies.append(time.perf_counter() - started)
        score.unparsed += outcome.unparsed
        score.errors += outcome.error
        return outcome

    def run(self, turn: Turn, score: LanguageScore) -> None:
        _dated(self._decision, turn.now)
        _dated(self._chat, turn.now)
        exchange = turn.exchange
        score.turns += 1

        worth = self._ask(score, lambda: self._decision.worth(exchange))
        if turn.worth is not None:
            kept = worth.answered and worth.answer >= WORTH_THRESHOLD
            if turn.worth:
                score.worth_tp += kept
                score.worth_fn += not kept
            else:
                score.worth_fp += kept
                score.worth_tn += not kept

        decision = self._ask(score, lambda: self._decision.decide(exchange, list(turn.memories)))
        given = decision.answer.verdicts if decision.answered else {}
        if decision.answered and (any(m.memory_id not in given for m in turn.memories) or decision.answer.add is None):
            decision.unparsed = True  # answered, but not every part in the form asked
            score.unparsed += 1
        for memory_id, expected in turn.verdicts.items():
            score.verdicts[expected.value].add(given.get(memory_id) is expected)

        if turn.write is not None:
            current = next((m for m in turn.memories if m.memory_id == turn.write.current), None)
            written = self._ask(score, lambda: self._chat.write_memory(exchange, current))
            score.ends.add(written.answered and written.answer.valid_until == turn.write.valid_until)

        zone = self._settings.zone
        prompt = build_reply_prompt(SPEAKER, turn.memories, [turn.message], now=turn.now, zone=zone)
        self._ask(score, lambda: self._chat.write_reply(prompt))


# ---------------------------------------------------------------- progress and the table


class Progress:
    """Turns done so far, on stderr: a bar redrawn in place on a terminal, else a line a quarter."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._total = max(total, 1)
        self._done = 0
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())

    def step(self, lang: str) -> None:
        self._done += 1
        if self._tty:
            filled = round(30 * self._done / self._total)
            bar = "#" * filled + "." * (30 - filled)
            self._stream.write(f"\reval [{bar}] {self._done}/{self._total} turns ({lang})")
            if self._done == self._total:
                self._stream.write("\n")
        elif self._done == self._total or self._done % max(self._total // 4, 1) == 0:
            self._stream.write(f"eval: {self._done}/{self._total} turns ({lang})\n")
        self._stream.flush()


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.0f} %"


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


COLUMNS = (
    "lang",
    "turns",
    "worth P",
    "worth R",
    "verdicts",
    "keep",
    "update",
    "delete",
    "ends",
    "unparsed",
    "errors",
    "requests/1k",
    "tokens in/1k",
    "tokens out/1k",
    "$/1k turns",
    "p50 ms",
    "p95 ms",
)


def table_rows(scores: Sequence[LanguageScore]) -> list[list[str]]:
    rows = []
    for s in scores:
        known = s.tokens_known and s.requests > 0
        rows.append(
            [
                s.lang,
                str(s.turns),
                _pct(s.worth_precision),
                _pct(s.worth_recall),
                _pct(s.verdict_accuracy),
                *(_pct(s.verdicts[v.value].share) for v in VERDICTS),
                _pct(s.ends.share),
                f"{s.unparsed}/{s.questions}",
                str(s.errors),
                _num(s.per_turns(s.requests)),
                _num(s.per_turns(s.input_tokens)) if known else "—",
                _num(s.per_turns(s.output_tokens)) if known else "—",
                _num(s.per_turns(s.cost_usd), 4) if s.requests else "—",
                _num(_ms(s.latency(0.5)), 1),
                _num(_ms(s.latency(0.95)), 1),
            ]
        )
    return rows


def render_table(scores: Sequence[LanguageScore], heading: str) -> str:
    rows = [list(COLUMNS), *table_rows(scores)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [heading]
    for k, row in enumerate(rows):
        cells = [cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(
        "worth P/R: precision and recall of keeping (p >= 0.5); verdicts: memories given their labelled verdict\n"
        "(keep, update, delete apart); ends: memories written with the labelled end (validUntil); unparsed:\n"
        "answers not in the form asked / questions asked; errors: failed calls; latency: per question (docs/eval.md)."
    )
    unpriced = sorted({m for s in scores for m, u in s.usage.items() if u.requests and s.prices.get(m) is None})
    if unpriced:
        lines.append(f"no price for {', '.join(unpriced)}: set MEMORYBOT_MODEL_PRICES for a cost.")
    return "\n".join(lines)


# ---------------------------------------------------------------- the command


@contextmanager
def metered(settings: Settings, book: UsageBook) -> Iterator[Settings]:
    """``settings`` with each HTTP model backend reached through a metering relay, and Bedrock's
    calls booked, for as long as the block lasts."""
    kinds = {settings.decision_model.strip().lower(), settings.chat_model.strip().lower()}
    timeout = settings.model_timeout_seconds + 5.0
    with ExitStack() as stack:
        if "openai" in kinds:
            relay = stack.enter_context(MeteringRelay(settings.openai_base_url, book, label="openai", timeout=timeout))
            settings = dataclasses.replace(settings, openai_base_url=relay.url)
        if "http" in kinds and settings.jev_url:
            relay = stack.enter_context(MeteringRelay(settings.jev_url, book, label="jev", timeout=timeout))
            settings = dataclasses.replace(settings, jev_url=relay.url)
        if "bedrock" in kinds:
            stack.enter_context(metered_bedrock(book))
        yield settings


def describe(settings: Settings) -> str:
    def which(kind: str, bedrock_id: str) -> str:
        kind = kind.strip().lower()
        name = {"openai": settings.openai_model, "bedrock": bedrock_id, "http": settings.jev_url}.get(kind)
        return f"{kind} ({name})" if name else kind

    return (
        f"decision model {which(settings.decision_model, settings.bedrock_decision_model_id)}, "
        f"chat model {which(settings.chat_model, settings.bedrock_chat_model_id)}"
    )


def evaluate(
    settings: Settings,
    *,
    languages: Sequence[str] = LANGUAGES,
    sample: int = DEFAULT_SAMPLE,
    data_dir: Path = DATA_DIR,
    progress: IO[str] | None = None,
) -> list[LanguageScore]:
    """Each language's turns through the models the composition root builds from ``settings``."""
    from ..bootstrap import Container

    settings = dataclasses.replace(settings, timezone=DEFAULT_TIMEZONE)  # the data's days are Japan's
    turns = {lang: load_turns(data_dir, lang, sample)[0] for lang in languages}
    bar = Progress(sum(map(len, turns.values())), progress)
    book = UsageBook()
    scores = []
    with metered(settings, book) as reached:
        container = Container(reached)
        evaluator = Evaluator(container.decision_model, container.chat_model, reached)
        for lang, batch in turns.items():
            score = LanguageScore(lang)
            before = book.snapshot()
            for turn in batch:
                evaluator.run(turn, score)
                bar.step(lang)
            score.usage = since(before, book.snapshot())
            score.prices = {model: settings.price(model) for model in score.usage}
            scores.append(score)
    return scores


def main(
    settings: Settings,
    *,
    languages: Sequence[str],
    sample: int,
    data_dir: Path,
    as_json: bool,
    out: IO[str] | None = None,
) -> int:
    out = out if out is not None else sys.stdout
    scores = evaluate(settings, languages=languages, sample=sample, data_dir=data_dir)
    if as_json:
        document = {"models": describe(settings), "sample": sample, "languages": [s.to_dict() for s in scores]}
        out.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    else:
        heading = f"memorybot eval: {describe(settings)}; {sample} turns a language at most"
        out.write(render_table(scores, heading) + "\n")
    return 0
