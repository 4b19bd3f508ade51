"""`memorybot eval`: its data, its arithmetic against a loopback model that answers right, wrong or
unparseably on purpose (every figure known in advance from the labels), the answer-format
fallback's effect on the parse-failure column, and the command on the stand-ins as CI runs it."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from benchmarks import generate_eval
from loopback.eval_model import DriftingModel, LabelledModel, question_of
from loopback.openai_server import OpenAIServer, usage_of
from memorybot import cli
from memorybot.config import DEFAULT_MODEL_PRICES, Settings
from memorybot.core.record.domain import Verdict
from memorybot.ops import evaluation
from memorybot.ops.evaluation import LanguageScore, Progress, Turn, load_turns, percentile

SAMPLE = 12  # two people's six kinds of turn
MODEL = "gpt-4o-mini"


def _turns(lang: str, sample: int = SAMPLE) -> list[Turn]:
    return load_turns(evaluation.DATA_DIR, lang, sample)[0]


@pytest.fixture(scope="module")
def _server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def llm(_server: OpenAIServer) -> OpenAIServer:
    _server.clear()
    return _server


def _settings(url: str) -> Settings:
    return Settings.from_env(
        {
            "MEMORYBOT_DECISION_MODEL": "openai",
            "MEMORYBOT_CHAT_MODEL": "openai",
            "OPENAI_BASE_URL": url,
            "OPENAI_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-eval",
            "MEMORYBOT_MODEL_TIMEOUT": "5",
        }
    )


def _run(llm: OpenAIServer, lang: str = "en", sample: int = SAMPLE) -> LanguageScore:
    [score] = evaluation.evaluate(_settings(llm.url), languages=[lang], sample=sample, progress=io.StringIO())
    return score


# ------------------------------------------------------------------ the data


@pytest.mark.parametrize("code", ["en", "ja"])
def test_committed_file_is_what_the_seeded_generator_makes(code: str) -> None:
    assert generate_eval.data_path(code).read_text(encoding="utf-8") == generate_eval.generate(code), (
        f"{generate_eval.data_path(code).name} differs: run `python -m benchmarks.generate_eval`"
    )


@pytest.mark.parametrize("code", ["en", "ja"])
def test_every_turn_is_labelled_and_its_line_is_its_own(code: str) -> None:
    turns, total = load_turns(evaluation.DATA_DIR, code, 10_000)
    assert total == len(turns) == 60
    assert len({t.said for t in turns}) == len(turns)  # the loopback model tells turns by their line
    ids = [m.memory_id for t in turns for m in t.memories]
    assert len(ids) == len(set(ids))
    timelines = [json.loads(line) for line in (evaluation.DATA_DIR / f"timelines_{code}.jsonl").open()]
    plan_ends = {(t["person"], p["said"]): p["valid_until"] for t in timelines for p in t["plans"]}
    for turn in turns:
        assert set(turn.verdicts) == {m.memory_id for m in turn.memories}, turn.id
        labels = sorted(v.value for v in turn.verdicts.values() if v is not Verdict.KEEP)
        assert labels == {"change": ["update"], "forget": ["delete"]}.get(turn.kind, []), turn.id
        assert turn.worth == {"plan": True, "change": True, "forget": None}.get(turn.kind, False), turn.id
        if turn.kind == "plan":  # the timeline data's own end for the line
            assert turn.write is not None and str(turn.write.valid_until) == plan_ends[(turn.person, turn.said)]
        elif turn.kind == "change":
            assert turn.write is not None and turn.write.valid_until is None
            assert turn.verdicts[turn.write.current or ""] is Verdict.UPDATE
        else:
            assert turn.write is None
    # the first six turns are one of each kind: a small sample is a mixed one
    assert sorted(t.kind for t in turns[:6]) == sorted(["plan", "plan", "change", "question", "forget", "small_talk"])


# ------------------------------------------------------------------ arithmetic


def test_percentile_is_the_nearest_rank() -> None:
    values = [0.4, 0.1, 0.3, 0.2]
    assert percentile(values, 0.5) == 0.2 and percentile(values, 0.95) == 0.4
    assert percentile([0.7], 0.95) == 0.7 and percentile([], 0.5) is None
    assert percentile(list(range(1, 101)), 0.95) == 95


def test_cost_is_tokens_times_each_models_price_and_unknown_without_one() -> None:
    from memorybot.ops.model_meter import ModelUsage

    score = LanguageScore("en", turns=4)
    score.usage = {"a": ModelUsage(2, 2, 1_000_000, 500_000), "b": ModelUsage(2, 2, 2_000_000, 0)}
    score.prices = {"a": (0.15, 0.60), "b": (1.0, 2.0)}
    assert score.cost_usd == pytest.approx(0.15 + 0.30 + 2.0)
    assert score.per_turns(score.cost_usd) == pytest.approx(2.45 * 1000 / 4)
    assert score.per_turns(score.requests) == 1000.0
    score.prices["b"] = None
    assert score.cost_usd is None
    score.prices["b"] = (1.0, 2.0)
    score.usage["b"] = ModelUsage(2, 1, 5, 5)  # one answer without token counts
    assert score.cost_usd is None and not score.tokens_known


def test_all_right_scores_everything_right_and_counts_each_request_and_token(llm: OpenAIServer) -> None:
    turns = _turns("en")
    llm.responder = LabelledModel(turns)
    score = _run(llm)
    assert (score.worth_precision, score.worth_recall, score.verdict_accuracy, score.ends.share) == (1, 1, 1, 1)
    writes = sum(t.write is not None for t in turns)
    assert score.questions == 3 * len(turns) + writes and (score.unparsed, score.errors) == (0, 0)
    bodies = llm.completions()
    assert score.requests == len(bodies) == score.questions  # the schema was taken: one request a question
    assert {b["response_format"]["type"] for b in bodies if question_of(b) in ("worth", "decide")} == {"json_schema"}
    # tokens as the server counted them
    usages = [usage_of(b, llm.responder(b)) for b in bodies]
    assert score.input_tokens == sum(u["prompt_tokens"] for u in usages) > 0
    assert score.output_tokens == sum(u["completion_tokens"] for u in usages) > 0
    price_in, price_out = DEFAULT_MODEL_PRICES[MODEL]
    cost = (score.input_tokens * price_in + score.output_tokens * price_out) / 1e6
    assert score.per_turns(score.cost_usd) == pytest.approx(cost * 1000 / len(turns))
    assert len(score.latencies) == score.questions and 0 < score.latency(0.5) <= score.latency(0.95)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_half_wrong_scores_exactly_what_the_labels_say(llm: OpenAIServer, lang: str) -> None:
    turns = _turns(lang)
    llm.responder = model = LabelledModel.half_wrong(turns)
    wrong = model.wrong
    assert len(wrong) == len(turns) // 2
    score = _run(llm, lang)

    judged = [t for t in turns if t.worth is not None]
    tp = sum(t.worth and t.id not in wrong for t in judged)
    fp = sum(not t.worth and t.id in wrong for t in judged)
    fn = sum(t.worth and t.id in wrong for t in judged)
    assert (score.worth_tp, score.worth_fp, score.worth_fn) == (tp, fp, fn)
    assert score.worth_precision == tp / (tp + fp) and score.worth_recall == tp / (tp + fn)
    for verdict in ("keep", "update", "delete"):
        labelled = [(t, m) for t in turns for m, v in t.verdicts.items() if v.value == verdict]
        right = sum(t.id not in wrong for t, _ in labelled)
        assert (score.verdicts[verdict].right, score.verdicts[verdict].total) == (right, len(labelled)), verdict
    writes = [t for t in turns if t.write is not None]
    assert (score.ends.right, score.ends.total) == (sum(t.id not in wrong for t in writes), len(writes))
    assert (score.unparsed, score.errors) == (0, 0)
    # every kind is wrong for one of the two people: half of each verdict and end
    assert score.verdicts["update"].share == score.verdicts["delete"].share == score.ends.share == 0.5
    # the table shows it
    row = dict(zip(evaluation.COLUMNS, evaluation.table_rows([score])[0], strict=True))
    assert row["worth P"] == f"{100 * tp / (tp + fp):.0f} %" and row["unparsed"] == f"0/{score.questions}"
    assert row["ends"] == f"{100 * score.ends.share:.0f} %"


def test_unparseable_answers_are_counted_and_score_as_no_answer(llm: OpenAIServer) -> None:
    turns = _turns("en")
    broken = {turns[0].id, turns[1].id}  # a plan and a change: all four questions each
    llm.responder = LabelledModel(turns, unparseable=broken)
    score = _run(llm)
    assert score.unparsed == 8 and score.errors == 0
    assert score.worth_fn == 2 and score.worth_recall == (score.worth_tp) / (score.worth_tp + 2)
    assert score.verdicts["update"].right == score.verdicts["update"].total - 1
    writes = sum(t.write is not None for t in turns)
    assert (score.ends.right, score.ends.total) == (writes - 2, writes)


def test_a_model_that_drifts_parses_only_with_its_schema(llm: OpenAIServer) -> None:
    turns = _turns("en")
    llm.responder = DriftingModel(turns)
    with_schema = _run(llm)
    assert with_schema.unparsed == 0 and with_schema.verdict_accuracy == 1

    llm.clear()
    llm.responder = DriftingModel(turns)
    llm.refused_formats = {"json_schema"}  # a server without schemas: JSON mode, any object
    json_mode = _run(llm)
    writes = [t for t in turns if t.write is not None]
    assert json_mode.unparsed == 2 * len(turns) + len(writes)  # every worth, decision and memory
    # the refused schema, asked once by each client (the decision model's and the writer's)
    assert json_mode.requests == json_mode.questions + 2
    assert json_mode.tokens_known  # the refusal spent none
    assert json_mode.worth_tp == 0 and json_mode.verdict_accuracy == 0

    llm.clear()
    llm.responder = DriftingModel(turns)
    llm.reject_response_format = True  # neither: plain text, prose
    text = _run(llm)
    assert text.unparsed == 2 * len(turns) and text.requests == text.questions + 4
    # a memory in a plain line is taken, without an end: right only where none was due
    assert text.ends.right == sum(t.write.valid_until is None for t in writes if t.write) < len(writes)


def test_failed_calls_are_errors_not_parse_failures(llm: OpenAIServer) -> None:
    turns = _turns("en", 2)
    llm.responder = LabelledModel(turns)
    llm.answer(OpenAIServer.COMPLETIONS_PATH, {"error": {"message": "bad key"}}, status=401)
    score = _run(llm, sample=2)
    assert score.errors == score.questions and score.unparsed == 0
    assert score.worth_fn == 2 and score.requests == score.questions  # a 401 is not retried


# ------------------------------------------------------------------ the command


def test_the_command_on_the_stand_ins_prints_one_row_a_language(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "--sample", "6"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("memorybot eval: decision model offline, chat model offline")
    assert lines[1].split()[:4] == ["lang", "turns", "worth", "P"]
    assert [line.split()[:2] for line in lines[3:5]] == [["en", "6"], ["ja", "6"]]
    assert "eval: 12/12 turns (ja)" in err  # the progress, not a terminal: plain lines


def test_the_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "--sample", "6", "--lang", "ja", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    [ja] = document["languages"]
    assert ja["lang"] == "ja" and ja["turns"] == 6
    assert ja["answers"]["questions"] == 6 * 3 + 3  # two plans and a change are written
    assert ja["per1000Turns"]["requests"] == 0  # the stand-ins ask no server
    assert sum(v["total"] for k, v in ja["verdicts"].items() if k != "accuracy") == 18


def test_a_bad_sample_or_missing_data_is_refused_plainly(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["eval", "--sample", "0"])
    assert "not a sample size" in capsys.readouterr().err
    assert cli.main(["eval", "--data", str(tmp_path)]) != 0
    assert "no eval data" in capsys.readouterr().err


def test_progress_redraws_a_bar_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    bar = Progress(4, stream)
    for _ in range(4):
        bar.step("en")
    shown = stream.getvalue()
    assert shown.count("\r") == 4 and shown.endswith("4/4 turns (en)\n") and "[" + "#" * 30 + "]" in shown


# ------------------------------------------------------------------ prices


def test_prices_default_for_the_default_models_and_are_set_by_environment() -> None:
    default = Settings.from_env({})
    assert default.price(default.openai_model) == DEFAULT_MODEL_PRICES["gpt-4o-mini"]
    assert default.price(default.bedrock_chat_model_id) is not None
    assert default.price("us." + default.bedrock_chat_model_id) == default.price(default.bedrock_chat_model_id)
    assert default.price("some-local-model") is None
    given = Settings.from_env({"MEMORYBOT_MODEL_PRICES": '{"some-local-model": [0, 0], "gpt-4o-mini": [1, 2.5]}'})
    assert given.price("some-local-model") == (0.0, 0.0) and given.price("gpt-4o-mini") == (1.0, 2.5)


@pytest.mark.parametrize("text", ["[1, 2]", '{"m": [1]}', '{"m": [-1, 2]}', '{"m": ["1", 2]}', "{", '{"m": [1, NaN]}'])
def test_a_bad_price_setting_is_refused_with_its_name(text: str) -> None:
    with pytest.raises(ValueError, match="MEMORYBOT_MODEL_PRICES"):
        Settings.from_env({"MEMORYBOT_MODEL_PRICES": text})
    assert not math.isnan(0.0)


def test_the_installed_command_runs_it(tmp_path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "memorybot.cli", "eval", "--sample", "2", "--lang", "en"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # the repository's data is found from anywhere
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[3].split()[:2] == ["en", "2"]


# ------------------------------------------------------------------ the other backends, as deployed


def test_jev_over_http_is_counted_at_the_wire_without_tokens() -> None:
    from loopback.jev_server import JevServer

    with JevServer(api_key="jev-key") as jev:
        settings = Settings.from_env({"MEMORYBOT_DECISION_MODEL": "http", "JEV_URL": jev.url, "JEV_API_KEY": "jev-key"})
        [score] = evaluation.evaluate(settings, languages=["en"], sample=6, progress=io.StringIO())
        assert len(jev.requests) == 12 and {r.headers["authorization"] for r in jev.requests} == {"Bearer jev-key"}
    assert score.usage["jev"].requests == 12
    assert score.verdicts["keep"].right == score.verdicts["keep"].total == 16  # answered: the relay passed the key
    assert not score.tokens_known and score.cost_usd is None  # Jev's contract carries no usage
    row = dict(zip(evaluation.COLUMNS, evaluation.table_rows([score])[0], strict=True))
    assert (row["requests/1k"], row["tokens in/1k"], row["$/1k turns"]) == ("2,000", "—", "—")


def _converse_path(model_id: str) -> str:
    return f"/model/{quote(model_id, safe='')}/converse"  # as botocore sends it (":" is %3A)


def _converse(content: list[dict], tokens: tuple[int, int]) -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1], "totalTokens": sum(tokens)},
        "metrics": {"latencyMs": 1},
    }


def test_bedrock_is_counted_by_model_id_with_its_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopback.bedrock_server import BedrockServer

    decider, writer = "anthropic.claude-3-haiku-20240307-v1:0", "us.anthropic.claude-3-haiku-20240307-v1:0"
    with BedrockServer() as bedrock:
        for name, value in {
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        worth = {"toolUse": {"toolUseId": "t1", "name": "answer_worth", "input": {"probability": 0.9}}}
        bedrock.answer(_converse_path(decider), _converse([worth], (100, 10)))
        bedrock.answer(_converse_path(writer), _converse([{"text": "Has a plan"}], (50, 5)))
        settings = Settings.from_env(
            {
                "MEMORYBOT_DECISION_MODEL": "bedrock",
                "MEMORYBOT_CHAT_MODEL": "bedrock",
                "BEDROCK_DECISION_MODEL_ID": decider,
                "BEDROCK_CHAT_MODEL_ID": writer,
            }
        )
        [score] = evaluation.evaluate(settings, languages=["en"], sample=6, progress=io.StringIO())
    decisions, texts = score.usage[decider], score.usage[writer]
    assert (decisions.requests, decisions.input_tokens, decisions.output_tokens) == (12, 1200, 120)
    writes = 3  # two plans and a change among the first six turns
    assert (texts.requests, texts.input_tokens, texts.output_tokens) == (6 + writes, 50 * 9, 5 * 9)
    # every decision got worth's tool back: forced tools that do not match are unparsed, not errors
    assert score.unparsed == 6 and score.worth_tp == 3
    haiku_in, haiku_out = DEFAULT_MODEL_PRICES[decider]  # the inference profile: its base model's price
    assert score.cost_usd == pytest.approx(((1200 + 450) * haiku_in + (120 + 45) * haiku_out) / 1e6)


def test_a_throttle_passes_through_the_relay_and_is_one_more_request(llm: OpenAIServer) -> None:
    turns = _turns("en", 2)
    llm.responder = LabelledModel(turns)
    llm.answer_once(
        OpenAIServer.COMPLETIONS_PATH, {"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0"}
    )
    score = _run(llm, sample=2)
    assert (score.errors, score.unparsed, score.verdict_accuracy) == (0, 0, 1)  # retried, as deployed
    assert score.requests == score.questions + 1 == len(llm.completions())
    assert score.tokens_known  # the throttle spent none
