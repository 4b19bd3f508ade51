"""`memorybot eval`'s table on the offline stand-ins and on loopback chat models served as an
OpenAI-compatible server (`python -m benchmarks eval`), through the real adapters and the
metering relay, as an operator's run would go:

- the stand-ins (the local stack's keyword rules);
- a loopback model that knows the labels and answers every question right, then one that
  answers every other turn wrong (worth flipped, verdicts wrong, ends wrong);
- a loopback model that drifts from the answer's form unless the request carries its JSON
  schema, on a server that takes the schema, on one that refuses it (JSON mode: any object),
  and on one that refuses both (plain text): the unparsed column is the difference.

The loopback models' token counts are the server's (a token every four bytes), so the cost
column shows the arithmetic, not a real model's price.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from memorybot.config import Settings
from memorybot.ops import evaluation
from tests.loopback.eval_model import DriftingModel, LabelledModel
from tests.loopback.openai_server import OpenAIServer

SAMPLE = evaluation.DEFAULT_SAMPLE


def _table(title: str, settings: Settings) -> None:
    scores = evaluation.evaluate(settings, sample=SAMPLE, progress=io.StringIO())
    print(evaluation.render_table(scores, f"-- {title}"), end="\n\n", flush=True)


def _loopback(title: str, model: Callable[[list[evaluation.Turn]], Callable[..., str]], **flags: object) -> None:
    turns = [t for lang in evaluation.LANGUAGES for t in evaluation.load_turns(evaluation.DATA_DIR, lang, SAMPLE)[0]]
    with OpenAIServer() as llm:
        llm.responder = model(turns)
        for name, value in flags.items():
            setattr(llm, name, value)
        settings = Settings.from_env(
            {"MEMORYBOT_DECISION_MODEL": "openai", "MEMORYBOT_CHAT_MODEL": "openai", "OPENAI_BASE_URL": llm.url}
        )
        _table(title, settings)


def main() -> None:
    _table("offline stand-ins", Settings.from_env({}))
    _loopback("loopback model, every answer right", LabelledModel)

    _loopback("loopback model, half the turns answered wrong", LabelledModel.half_wrong)
    _loopback("drifting loopback model, server takes json_schema", DriftingModel)
    _loopback(
        "drifting loopback model, server refuses json_schema (JSON mode)",
        DriftingModel,
        refused_formats={"json_schema"},
    )
    _loopback(
        "drifting loopback model, server refuses response_format (plain text)",
        DriftingModel,
        reject_response_format=True,
    )


if __name__ == "__main__":
    main()
