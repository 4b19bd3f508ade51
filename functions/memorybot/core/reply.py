"""The read path for the reply prompt: the speaker's memories, and no one else's."""

from __future__ import annotations

from collections.abc import Sequence

from .domain import Actor, Message, Owner, PromptMessage, Speaker
from .ports import ChatModel, EmbeddingModel, MemoryStore
from .prompts import build_reply_prompt
from .recall import Recall, reply_query


class ReplyWriter:
    def __init__(self, memories: MemoryStore, chat_model: ChatModel, embeddings: EmbeddingModel | None = None) -> None:
        self._recall = Recall(memories, embeddings)
        self._chat = chat_model

    def prompt_for(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> list[PromptMessage]:
        """Only this owner's memories (this person, this scope) reach the prompt: the ten most
        relevant to what they are saying (their new message with their own recent lines)."""
        query = self._recall.start(reply_query(conversation, owner.user_id))  # embeds beside the read
        memories = self._recall.read(owner, query, actor=Actor.REPLY, reason="reply prompt")
        return build_reply_prompt(Speaker(owner.user_id, speaker_name), memories, conversation)

    def reply(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> str:
        """The chat model's answer; raises if the model fails (the caller apologises)."""
        return self._chat.write_reply(self.prompt_for(owner, speaker_name, conversation))
