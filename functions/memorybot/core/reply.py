"""The read path for the reply prompt: the speaker's memories, and no one else's."""

from __future__ import annotations

from collections.abc import Sequence

from .domain import PROFILE_LIMIT, Actor, Message, Owner, PromptMessage, Speaker
from .ports import ChatModel, MemoryStore
from .prompts import build_reply_prompt


class ReplyWriter:
    def __init__(self, memories: MemoryStore, chat_model: ChatModel) -> None:
        self._memories = memories
        self._chat = chat_model

    def prompt_for(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> list[PromptMessage]:
        """Only this owner's memories (this person, this scope) reach the prompt."""
        memories = self._memories.read_profile(owner, actor=Actor.REPLY, reason="reply prompt", limit=PROFILE_LIMIT)
        return build_reply_prompt(Speaker(owner.user_id, speaker_name), memories, conversation)

    def reply(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> str:
        """The chat model's answer; raises if the model fails (the caller apologises)."""
        return self._chat.write_reply(self.prompt_for(owner, speaker_name, conversation))
