"""The read path for the reply prompt: the speaker's memories, and no one else's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, tzinfo

from ..prompting.prompts import build_reply_prompt
from ..prompting.recall import Recall, reply_query
from ..record.domain import JST, Actor, Memory, Message, Owner, PromptMessage, Speaker, utcnow
from ..record.person import Person
from ..record.ports import ChatModel, EmbeddingModel, PeopleStore, ProfileReader


class ReplyWriter:
    def __init__(
        self,
        memories: ProfileReader,
        chat_model: ChatModel,
        people: PeopleStore | None = None,
        *,
        embeddings: EmbeddingModel | None = None,
        zone: tzinfo = JST,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._recall = Recall(memories, embeddings)
        self._chat = chat_model
        self._people = people
        self._zone = zone  # the deployment's: "today" is its date
        self._clock = clock

    def prompt_for(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> list[PromptMessage]:
        """Only this owner's memories (this person, this scope) reach the prompt: the ten most
        relevant to what they are saying (their new message with their own recent lines)."""
        return self.read(owner, speaker_name, conversation)[1]

    def read(
        self,
        owner: Owner,
        speaker_name: str,
        conversation: Sequence[Message],
        *,
        read_id: str = "",
        use_memories: bool = True,
        persona: str = "",
    ) -> tuple[Person, list[PromptMessage]]:
        """The person's record and the prompt. The record is read alongside the profile, not
        before it (no extra round trip): a paused person's memories are read, never used, no
        read row is written for them, and their words are never embedded as the query."""
        memories: list[Memory] = []
        if not use_memories:  # the server's memory is off: no profile read, no read row, no embedding
            person = self._people.get(owner.user_id) if self._people is not None else Person(owner.user_id)
        elif self._people is None:
            person, memories = Person(owner.user_id), self._profile(owner, conversation, entry_id=read_id)
        else:
            with ThreadPoolExecutor(max_workers=1) as pool:
                record = pool.submit(self._people.get, owner.user_id)
                memories = self._profile(
                    owner, conversation, unused_if=lambda: record.result().paused, entry_id=read_id
                )
                person = record.result()
        prompt = build_reply_prompt(
            Speaker(owner.user_id, speaker_name),
            memories,
            conversation,
            now=self._clock(),
            zone=self._zone,
            persona=persona,
        )
        return person, prompt

    def _profile(self, owner: Owner, conversation: Sequence[Message], **kw) -> list[Memory]:
        # Past its end a memory is not used, nor counted among the ten (a plan that is over).
        query = self._recall.start(reply_query(conversation, owner.user_id))
        today = self._clock().astimezone(self._zone).date()
        return self._recall.read(
            owner, query, actor=Actor.REPLY, reason="reply prompt", usable=lambda m: not m.ended(today), **kw
        )

    def write(
        self,
        owner: Owner,
        speaker_name: str,
        conversation: Sequence[Message],
        *,
        read_id: str = "",
        use_memories: bool = True,
        persona: str = "",
    ) -> tuple[str, Person]:
        """The chat model's answer and the person's record; raises if the model fails (the caller
        apologises). ``read_id`` names the read row of the memories the prompt holds (core/rights/why.py);
        ``use_memories`` False: the server's memory is off; ``persona``: its admins' instructions."""
        person, prompt = self.read(
            owner, speaker_name, conversation, read_id=read_id, use_memories=use_memories, persona=persona
        )
        return self._chat.write_reply(prompt), person

    def reply(self, owner: Owner, speaker_name: str, conversation: Sequence[Message]) -> str:
        return self.write(owner, speaker_name, conversation)[0]
