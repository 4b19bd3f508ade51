"""The read path for the reply prompt: the speaker's memories, and no one else's."""

from __future__ import annotations

from typing import Sequence

from .decisions import render_memories
from .domain import PROFILE_LIMIT, Actor, Memory, Message, PromptMessage
from .ports import ChatModel, MemoryStore

PERSONA = (
    "You are memorybot, a friendly member of a Discord server. Answer briefly and in the "
    "language the person wrote in. Do not mention that you keep memories unless asked."
)


def build_reply_prompt(speaker_name: str, memories: Sequence[Memory], conversation: Sequence[Message]) -> list[PromptMessage]:
    """ONE system message (persona plus the speaker's memories), then the conversation."""
    if memories:
        about = f"What you remember about {speaker_name} (the person you are answering):\n{render_memories(memories)}"
    else:
        about = f"You remember nothing yet about {speaker_name}."
    prompt = [PromptMessage("system", f"{PERSONA}\n\n{about}")]
    for message in conversation:
        if message.is_bot:
            prompt.append(PromptMessage("assistant", message.content))
        else:
            prompt.append(PromptMessage("user", f"{message.author_name}: {message.content}"))
    return prompt


class ReplyWriter:
    def __init__(self, memories: MemoryStore, chat_model: ChatModel) -> None:
        self._memories = memories
        self._chat = chat_model

    def prompt_for(self, speaker_id: str, speaker_name: str, conversation: Sequence[Message]) -> list[PromptMessage]:
        memories = self._memories.read_profile(speaker_id, actor=Actor.REPLY, reason="reply prompt", limit=PROFILE_LIMIT)
        return build_reply_prompt(speaker_name, memories, conversation)

    def reply(self, speaker_id: str, speaker_name: str, conversation: Sequence[Message]) -> str:
        """The chat model's answer; raises if the model fails (the caller apologises)."""
        return self._chat.write_reply(self.prompt_for(speaker_id, speaker_name, conversation))
