"""Amazon Bedrock Runtime ``converse`` through boto3: the default backend when deployed.

Decisions are forced through a tool: the request offers exactly one tool whose input
schema is the answer's JSON schema, and ``toolChoice`` names it, so the model must
answer with a ``toolUse`` block; its ``input`` is parsed strictly (``core/prompting/prompts.py``).
Forcing a specific tool needs a model that supports it (the API reference names
Anthropic Claude 3 and later, and Amazon Nova); with another model the call fails
with a ValidationException, which is a ModelError like any other.

Texts come from the reply's text blocks. The reply prompt's system message goes into
``system``; conversation turns alternate (consecutive same-role turns are merged) and
start with a user turn, as Converse requires.

The client's timeouts are ``settings.model_timeout_seconds`` and botocore itself does not
retry: the shared policy (``retry.py``) does, through the process's limiter.
``ThrottlingException`` and ``ModelNotReadyException`` (the model is loading: come back later)
are throttles, "not yet" (``ModelUnavailable``) once the deadline is spent;
``ServiceUnavailableException``, ``InternalServerException`` and connection errors or timeouts
are transient: a few quick retries, then the call has failed (``ModelFailed``). Any other
error, and any unusable answer, is a ``ModelError`` at once. (Botocore's read timeout cannot
shrink to the deadline's rest, so a call may end up to one model timeout past its deadline.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from ..core.prompting import prompts
from ..core.prompting.prompts import Question, TextTask
from ..core.record.domain import PromptMessage
from ..core.record.metrics import purpose_of
from ..core.record.ports import ModelError, UnusableAnswer
from . import llm_backend
from .metering import NO_METER, ModelMeter
from .retry import Retrier, Throttled, Transient, retrier_for, retry_after_seconds

if TYPE_CHECKING:
    from ..config import Settings

T = TypeVar("T")

# Stop reasons after which the content is not the model's answer.
_REFUSED = frozenset({"guardrail_intervened", "content_filtered"})
# Asked again under the retry policy: throttles until the deadline ("not yet"), transient
# errors a few times (then the call has failed).
_THROTTLE_CODES = frozenset({"ThrottlingException", "ModelNotReadyException"})
_TRANSIENT_CODES = frozenset({"ServiceUnavailableException", "InternalServerException"})
_TRANSPORT_ERRORS = (BotoConnectionError, ReadTimeoutError, ConnectionClosedError)


def bedrock_client(settings: Settings, *, session: Any = None, endpoint_url: str | None = None) -> Any:
    """A bedrock-runtime client with the model timeout on connect and read, no retries of its own
    (``retry.py`` retries), and a pool as large as the process's limiter lets calls be in flight."""
    config = Config(
        connect_timeout=settings.model_timeout_seconds,
        read_timeout=settings.model_timeout_seconds,
        retries={"total_max_attempts": 1, "mode": "standard"},
        max_pool_connections=max(settings.model_max_in_flight, 1),
    )
    return (session or boto3).client("bedrock-runtime", config=config, endpoint_url=endpoint_url)


class BedrockConverse:
    """One model id on one client: converse calls with every failure turned into ModelError."""

    def __init__(
        self, client: Any, model_id: str, retrier: Retrier | None = None, *, meter: ModelMeter = NO_METER
    ) -> None:
        if not model_id:
            raise ValueError("a Bedrock model id is required")
        self._client = client
        self.model_id = model_id
        self._retrier = retrier or Retrier()
        self._meter = meter

    @classmethod
    def from_settings(cls, settings: Settings, model_id: str) -> BedrockConverse:
        retrier = retrier_for(settings)
        return cls(bedrock_client(settings), model_id, retrier, meter=retrier.meter or NO_METER)

    def converse(self, purpose: str = "", **request: Any) -> dict[str, Any]:
        """``purpose`` (worth, decide, write, reply, review, diary) labels the call's metrics."""
        with self._meter.call(purpose, self.model_id) as metered:
            response = self._retrier.call(lambda _remaining: self._attempt(request), "bedrock converse")
            usage = response.get("usage")
            if isinstance(usage, dict):  # Converse's own token counts
                metered.usage(usage.get("inputTokens"), usage.get("outputTokens"))
        if response.get("stopReason") in _REFUSED:
            raise ModelError(f"bedrock converse: stopped ({response['stopReason']})")
        content = ((response.get("output") or {}).get("message") or {}).get("content")
        if not isinstance(content, list):
            raise ModelError("bedrock converse: no message content")
        return response

    def _attempt(self, request: dict[str, Any]) -> dict[str, Any]:
        return classified("bedrock converse", lambda: self._client.converse(modelId=self.model_id, **request))

    def tool_input(self, question: Question) -> object:
        """Ask ``question`` forcing its one tool; the toolUse input the model gave."""
        response = self.converse(
            purpose_of(question.name),
            system=[{"text": question.system}],
            messages=[{"role": "user", "content": [{"text": question.user}]}],
            inferenceConfig={"maxTokens": question.max_tokens, "temperature": 0.0},
            toolConfig={
                "tools": [
                    {
                        "toolSpec": {
                            "name": question.tool_name,
                            "description": f"Record the answer to the {question.name} question.",
                            "inputSchema": {"json": question.schema},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": question.tool_name}},
            },
        )
        for block in response["output"]["message"]["content"]:
            use = block.get("toolUse") if isinstance(block, dict) else None
            if use and use.get("name") == question.tool_name:
                return use.get("input")
        raise UnusableAnswer("bedrock converse: no toolUse answer")

    def text(
        self,
        system: list[str],
        turns: Sequence[PromptMessage],
        *,
        max_tokens: int,
        temperature: float,
        purpose: str = "",
    ) -> tuple[str, bool]:
        """The answer's text, and whether the model stopped at ``max_tokens``."""
        request: dict[str, Any] = {
            "messages": [{"role": t.role, "content": [{"text": t.content}]} for t in turns],
            "inferenceConfig": {"maxTokens": max_tokens, "temperature": temperature},
        }
        if system:
            request["system"] = [{"text": s} for s in system]
        response = self.converse(purpose, **request)
        texts = [
            block["text"]
            for block in response["output"]["message"]["content"]
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        if not texts:
            raise UnusableAnswer("bedrock converse: no text answer")
        return "".join(texts), response.get("stopReason") == "max_tokens"


class BedrockDecisionModel(llm_backend.AskingDecisionModel):
    def __init__(self, converse: BedrockConverse) -> None:
        self._converse = converse

    def _ask(self, question: Question) -> Any:
        return question.parse(self._converse.tool_input(question))


class BedrockChatModel(llm_backend.WritingChatModel):
    def __init__(self, converse: BedrockConverse) -> None:
        self._converse = converse

    def _write(self, task: TextTask) -> str:
        text, cut_off = self._converse.text(
            [task.system],
            [PromptMessage("user", task.user)],
            max_tokens=task.max_tokens,
            temperature=0.0,
            purpose=purpose_of(task.name),
        )
        return llm_backend.first_line(text, cut_off=cut_off)

    def write_reply(self, prompt: Sequence[PromptMessage]) -> str:
        system, turns = llm_backend.split_system(prompt)
        turns = llm_backend.alternating_turns(turns)
        if not turns:
            raise ModelError("reply prompt has no conversation")
        text, _ = self._converse.text(
            system,
            turns,
            max_tokens=prompts.REPLY_MAX_TOKENS,
            temperature=prompts.REPLY_TEMPERATURE,
            purpose="reply",
        )
        return llm_backend.reply_text(text)  # a reply cut short is still worth sending


def classified(what: str, call: Callable[[], T]) -> T:
    """One Bedrock runtime call, its errors classified for the retry policy: a throttle (or a
    transient error that came with a Retry-After) is ``Throttled``, a server error or a transport
    failure ``Transient``, anything else (bad responses, invalid parameters) a ``ModelError``."""
    try:
        return call()
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        retry_after = retry_after_seconds(headers)
        if code in _THROTTLE_CODES or (code in _TRANSIENT_CODES and retry_after is not None):
            raise Throttled(f"{what}: {code}", retry_after) from exc
        if code in _TRANSIENT_CODES:
            raise Transient(f"{what}: {code}") from exc
        raise ModelError(f"{what}: {code}") from exc
    except _TRANSPORT_ERRORS as exc:
        timed_out = isinstance(exc, ReadTimeoutError)
        raise Transient(f"{what}: {type(exc).__name__}", timed_out=timed_out) from exc
    except (BotoCoreError, ValueError, KeyError) as exc:  # a body that does not parse is no better next time
        raise ModelError(f"{what}: {type(exc).__name__}") from exc
