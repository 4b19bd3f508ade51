"""Choosing backends from configuration, and keeping the lean paths lean."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from exchanges import said
from fakes import memory
from loopback import LoopbackServer
from loopback.jev_server import JevServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.bedrock import BedrockChatModel, BedrockDecisionModel
from memorybot.adapters.jev_http import JevHttpDecisionModel
from memorybot.adapters.models import build_chat_model, build_decision_model
from memorybot.adapters.offline import OfflineChatModel, OfflineDecisionModel
from memorybot.adapters.openai_chat import OpenAIChatModel, OpenAIDecisionModel
from memorybot.config import Settings
from memorybot.core.record.domain import MemoryDraft, Verdict

I_LIKE_TEA = said("I like tea", bot_reply=None)


def settings(**env: str) -> Settings:
    return Settings.from_env(env)


def _converse_answer(block: dict) -> dict:
    return {
        "output": {"message": {"role": "assistant", "content": [block]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def test_offline_is_the_default():
    assert isinstance(build_decision_model(settings()), OfflineDecisionModel)
    assert isinstance(build_chat_model(settings()), OfflineChatModel)


def test_choice_ignores_case_and_spaces():
    s = settings(MEMORYBOT_DECISION_MODEL=" Offline ", MEMORYBOT_CHAT_MODEL="OFFLINE")
    assert isinstance(build_decision_model(s), OfflineDecisionModel)
    assert isinstance(build_chat_model(s), OfflineChatModel)


@pytest.mark.parametrize("name", ["", "jev", "gpt", "local", "https"])
def test_unknown_backends_are_a_clear_error(name):
    with pytest.raises(ValueError, match="MEMORYBOT_DECISION_MODEL.*http, bedrock, openai, offline"):
        build_decision_model(settings(MEMORYBOT_DECISION_MODEL=name))
    with pytest.raises(ValueError, match="MEMORYBOT_CHAT_MODEL.*bedrock, openai, offline"):
        build_chat_model(settings(MEMORYBOT_CHAT_MODEL=name))


def test_http_is_decision_only():
    with pytest.raises(ValueError, match="only decides"):
        build_chat_model(settings(MEMORYBOT_CHAT_MODEL="http"))


def test_http_needs_a_url():
    with pytest.raises(ValueError, match="JEV_URL"):
        build_decision_model(settings(MEMORYBOT_DECISION_MODEL="http"))


def test_http_is_wired_to_jev_url_key_and_timeout():
    with JevServer(api_key="jk") as jev:
        jev.set_delay(1.0, path="/review")
        model = build_decision_model(
            settings(
                MEMORYBOT_DECISION_MODEL="http",
                JEV_URL=jev.url + "/",
                JEV_API_KEY="jk",
                MEMORYBOT_MODEL_TIMEOUT="0.2",
                MEMORYBOT_MODEL_DEADLINE="0.5",
            )  # retried within the deadline, then given up
        )
        assert isinstance(model, JevHttpDecisionModel)
        assert model.worth(I_LIKE_TEA) == 0.9
        assert jev.last("/worth").headers["authorization"] == "Bearer jk"
        from memorybot.core.record.ports import ModelError

        with pytest.raises(ModelError, match="timed out"):
            model.review(memory("u1", "k3x9a"))


def test_openai_is_wired_to_base_url_model_and_key():
    with OpenAIServer(api_key="sk") as llm:
        env = dict(
            MEMORYBOT_DECISION_MODEL="openai",
            MEMORYBOT_CHAT_MODEL="openai",
            OPENAI_BASE_URL=llm.url,
            OPENAI_MODEL="llama-3.1-8b",
            OPENAI_API_KEY="sk",
        )
        decisions, chat = build_decision_model(settings(**env)), build_chat_model(settings(**env))
        assert isinstance(decisions, OpenAIDecisionModel) and isinstance(chat, OpenAIChatModel)
        assert decisions.decide(I_LIKE_TEA, [memory("u1", "k3x9a")]).verdicts == {"k3x9a": Verdict.KEEP}
        assert chat.write_diary("alice: hi") == "(fake llm) ok"
        assert {b["model"] for b in llm.completions()} == {"llama-3.1-8b"}
        assert {r.headers["authorization"] for r in llm.requests} == {"Bearer sk"}


def test_bedrock_is_wired_to_the_model_ids_in_settings(monkeypatch):
    """Both Bedrock backends, built by the factory, reach a Bedrock endpoint with their own model id."""
    with LoopbackServer() as endpoint:
        endpoint.answer(
            "/model/decider/converse",
            _converse_answer({"toolUse": {"toolUseId": "t1", "name": "answer_worth", "input": {"probability": 0.7}}}),
        )
        endpoint.answer("/model/writer/converse", _converse_answer({"text": "Likes tea"}))
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", endpoint.url)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        env = dict(
            MEMORYBOT_DECISION_MODEL="bedrock",
            MEMORYBOT_CHAT_MODEL="bedrock",
            BEDROCK_DECISION_MODEL_ID="decider",
            BEDROCK_CHAT_MODEL_ID="writer",
        )
        decisions, chat = build_decision_model(settings(**env)), build_chat_model(settings(**env))
        assert isinstance(decisions, BedrockDecisionModel) and isinstance(chat, BedrockChatModel)
        assert decisions.worth(I_LIKE_TEA) == 0.7
        assert chat.write_memory(I_LIKE_TEA, None) == MemoryDraft("Likes tea")
        assert [r.path for r in endpoint.requests] == ["/model/decider/converse", "/model/writer/converse"]


def test_building_offline_models_imports_neither_httpx_nor_boto3():
    backend = "offline"
    code = textwrap.dedent(
        f"""
        import sys
        from memorybot.config import Settings
        from memorybot.adapters.models import build_chat_model, build_decision_model
        from memorybot.core.record.domain import Exchange, Message, Speaker
        s = Settings.from_env({{"MEMORYBOT_DECISION_MODEL": "{backend}", "MEMORYBOT_CHAT_MODEL": "{backend}"}})
        tea = Exchange(Speaker("u1", "alice"), "global", (Message("c1", "1", "u1", "alice", "I like tea"),))
        build_decision_model(s).worth(tea)
        build_chat_model(s).write_diary("alice: I like tea")
        heavy = sorted(m for m in ("httpx", "boto3", "botocore") if m in sys.modules)
        print(",".join(heavy))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == ""


def test_building_the_http_backend_imports_httpx_but_not_boto3():
    code = textwrap.dedent(
        """
        import sys
        from memorybot.config import Settings
        from memorybot.adapters.models import build_decision_model
        build_decision_model(Settings.from_env({"MEMORYBOT_DECISION_MODEL": "http", "JEV_URL": "http://127.0.0.1:9"}))
        print("httpx" in sys.modules, "boto3" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "False"]
