"""The embedding adapters over real HTTP against loopback servers: Bedrock Titan Text Embeddings V2
(signed InvokeModel) and an OpenAI-compatible /v1/embeddings; retries, throttling and the
process's limiter as for every model call; and the factory."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

from loopback.bedrock_server import BedrockServer
from loopback.openai_server import OpenAIServer
from memorybot.adapters.bedrock import bedrock_client
from memorybot.adapters.embeddings import BedrockTitanEmbeddings, OpenAIEmbeddings
from memorybot.adapters.embeddings_offline import OfflineEmbeddingModel
from memorybot.adapters.limiter import ModelCallLimiter, process_limiter
from memorybot.adapters.models import build_chat_model, build_embedding_model
from memorybot.adapters.retry import Retrier, RetryPolicy
from memorybot.config import Settings
from memorybot.core.prompting.selection import cosine
from memorybot.core.record.ports import ModelError, ModelUnavailable
from retrying import quick_retrier

TITAN = "amazon.titan-embed-text-v2:0"
SETTINGS = Settings(table_names={}, model_timeout_seconds=2.0)


def _session() -> boto3.Session:
    return boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")


@pytest.fixture
def bedrock():
    with BedrockServer() as server:
        yield server


@pytest.fixture
def openai():
    with OpenAIServer(api_key="sk-test") as server:
        yield server


def titan(server: BedrockServer, dimensions: int = 256, retrier: Retrier | None = None) -> BedrockTitanEmbeddings:
    client = bedrock_client(SETTINGS, session=_session(), endpoint_url=server.url)
    return BedrockTitanEmbeddings(client, TITAN, dimensions, retrier or quick_retrier())


def unit(vector) -> bool:
    return math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-9)


# ---------------------------------------------------------------- Bedrock Titan V2


@pytest.mark.parametrize("dimensions", [256, 512, 1024])
def test_titan_is_invoked_signed_with_its_body_and_answers_normalised_stamped_vectors(bedrock, dimensions):
    [a, b] = titan(bedrock, dimensions).embed(["Loves hiking in the Alps", "妹は大阪に住んでいる"])
    sent = bedrock.requests_to(BedrockServer.invoke_path(TITAN))
    assert len(sent) == 2  # one text per InvokeModel call
    assert sent[0].headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert sorted(r.json["inputText"] for r in sent) == sorted(["Loves hiking in the Alps", "妹は大阪に住んでいる"])
    assert all(r.json["dimensions"] == dimensions and r.json["normalize"] is True for r in sent)
    assert a.model == b.model == f"{TITAN}@{dimensions}"
    assert len(a.vector) == dimensions and unit(a.vector) and unit(b.vector)
    assert a.vector == OfflineEmbeddingModel(dimensions).embed_one("Loves hiking in the Alps").vector  # order kept


def test_titan_refuses_a_size_it_does_not_make():
    with pytest.raises(ValueError, match="256, 512, 1024"):
        BedrockTitanEmbeddings(object(), TITAN, 300)


@pytest.mark.parametrize(
    "status, code",
    [(429, "ThrottlingException"), (503, "ServiceUnavailableException"), (500, "InternalServerException")],
)
def test_titan_throttles_and_transient_errors_are_retried(bedrock, status, code):
    path = BedrockServer.invoke_path(TITAN)
    bedrock.answer_once(path, {"message": "slow down"}, status=status, headers={"x-amzn-ErrorType": code})
    [vector] = titan(bedrock).embed(["likes tea"])
    assert unit(vector.vector) and len(bedrock.requests_to(path)) == 2


def test_titan_throttled_past_the_deadline_is_unavailable_and_other_errors_fail_at_once(bedrock):
    path = BedrockServer.invoke_path(TITAN)
    bedrock.answer(path, {"message": "slow"}, status=429, headers={"x-amzn-ErrorType": "ThrottlingException"})
    with pytest.raises(ModelUnavailable, match="ThrottlingException"):
        titan(bedrock).embed(["likes tea"])
    bedrock.clear()
    bedrock.answer(path, {"message": "no"}, status=403, headers={"x-amzn-ErrorType": "AccessDeniedException"})
    with pytest.raises(ModelError) as caught:
        titan(bedrock).embed(["likes tea"])
    assert not isinstance(caught.value, ModelUnavailable) and len(bedrock.requests) == 1


@pytest.mark.parametrize("body", [{"embedding": []}, {"embedding": "x"}, {"nothing": 1}, {"embedding": [0.1, 0.2]}])
def test_titan_answers_without_a_usable_vector_are_failures(bedrock, body):
    bedrock.answer(BedrockServer.invoke_path(TITAN), body)
    with pytest.raises(ModelError):
        titan(bedrock).embed(["likes tea"])


def test_titan_under_a_quota_every_text_is_embedded_through_the_retries(bedrock):
    bedrock.set_quota(120, period=1.0)
    model = titan(
        bedrock,
        retrier=Retrier(RetryPolicy(deadline_seconds=10.0, base_delay=0.02, max_delay=0.2), ModelCallLimiter(8)),
    )
    texts = [f"fact number {i}" for i in range(60)]
    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(model.embed, [texts[i : i + 15] for i in range(0, 60, 15)]))
    assert [len(b) for b in batches] == [15] * 4
    assert bedrock.throttled > 0 and bedrock.served == 60


# ---------------------------------------------------------------- OpenAI-compatible


def openai_model(server: OpenAIServer, dimensions: int = 0, **kw) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(
        server.url,
        "text-embedding-3-small",
        dimensions=dimensions,
        timeout_seconds=2.0,
        api_key="sk-test",
        retrier=kw.pop("retrier", quick_retrier()),
    )


def test_openai_embeds_a_batch_in_one_call_in_input_order_normalised(openai):
    texts = ["Loves hiking in the Alps", "went hiking in the alps", "妹は大阪に住んでいる"]
    vectors = openai_model(openai, dimensions=128).embed(texts)
    [sent] = openai.embedding_requests()
    assert sent == {"model": "text-embedding-3-small", "input": texts, "encoding_format": "float", "dimensions": 128}
    assert [v.model for v in vectors] == ["text-embedding-3-small@128"] * 3
    assert all(unit(v.vector) and len(v.vector) == 128 for v in vectors)  # normalised here: the server did not
    # the server answered in reverse order: the index decides
    assert cosine(vectors[0].vector, vectors[1].vector) > cosine(vectors[0].vector, vectors[2].vector)


def test_openai_without_dimensions_sends_none_and_stamps_the_native_size(openai):
    [vector] = openai_model(openai).embed(["likes tea"])
    assert "dimensions" not in openai.embedding_requests()[0] and vector.model == "text-embedding-3-small@native"


def test_openai_throttle_is_retried_with_retry_after_and_a_refusal_fails_at_once(openai):
    openai.answer_once(OpenAIServer.EMBEDDINGS_PATH, {"error": {}}, status=429, headers={"retry-after-ms": "1"})
    assert len(openai_model(openai).embed(["likes tea"])) == 1
    assert len(openai.requests_to(OpenAIServer.EMBEDDINGS_PATH)) == 2
    openai.clear()
    openai.answer(OpenAIServer.EMBEDDINGS_PATH, {"error": {"message": "bad model"}}, status=400)
    with pytest.raises(ModelError) as caught:
        openai_model(openai).embed(["likes tea"])
    assert not isinstance(caught.value, ModelUnavailable)
    assert len(openai.requests_to(OpenAIServer.EMBEDDINGS_PATH)) == 1


@pytest.mark.parametrize("raw", [b"{broken", b'{"data": [{"index": 0, "embedding": [0, 0]}]}', b'{"data": []}'])
def test_openai_unusable_answers_are_failures(openai, raw):
    openai.answer(OpenAIServer.EMBEDDINGS_PATH, raw=raw)
    with pytest.raises(ModelError):
        openai_model(openai).embed(["likes tea"])


# ---------------------------------------------------------------- the factory


def test_the_factory_builds_each_backend_and_none_means_lexical_only(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert build_embedding_model(Settings(table_names={}, embedding_model="none")) is None
    offline = build_embedding_model(Settings(table_names={}, embedding_model="offline", embedding_dimensions=64))
    assert offline is not None and offline.model_id == "offline-hashed-ngrams-v1@64"
    titan_model = build_embedding_model(Settings(table_names={}, embedding_model="bedrock", embedding_dimensions=512))
    assert titan_model is not None and titan_model.model_id == f"{TITAN}@512"
    with pytest.raises(ValueError, match="MEMORYBOT_EMBEDDING_MODEL"):
        build_embedding_model(Settings(table_names={}, embedding_model="word2vec"))


def test_settings_are_read_once_from_the_environment():
    settings = Settings.from_env(
        {
            "MEMORYBOT_EMBEDDING_MODEL": "bedrock",
            "MEMORYBOT_EMBEDDING_DIMENSIONS": "1024",
            "BEDROCK_EMBEDDING_MODEL_ID": "amazon.titan-embed-text-v2:0",
            "OPENAI_EMBEDDING_MODEL": "nomic-embed-text",
        }
    )
    assert (settings.embedding_model, settings.embedding_dimensions, settings.openai_embedding_model) == (
        "bedrock",
        1024,
        "nomic-embed-text",
    )
    assert Settings.from_env({}).embedding_model == "offline" and Settings.from_env({}).embedding_dimensions == 256


def test_embeddings_share_the_processes_limiter_with_the_other_models():
    settings = Settings(
        table_names={}, chat_model="openai", embedding_model="openai", model_max_in_flight=5, model_rpm=50
    )
    embeddings, chat = build_embedding_model(settings), build_chat_model(settings)
    assert embeddings._service.retrier.limiter is chat._client._service.retrier.limiter is process_limiter(settings)
