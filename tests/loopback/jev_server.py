"""A fake Jev service speaking the HTTP contract (POST /worth, /decide, /verdict, /add, /review).

Unscripted requests get well-formed answers from settable defaults; per-memory
verdicts are looked up by the ``memory.id`` the request carries:

    with JevServer() as jev:
        jev.set_worth(0.9)                          # /worth -> {"probability": 0.9}
        jev.set_verdict("update", memory_id="k3x9a")  # only for that memory
        jev.set_verdict("keep")                     # every other memory
        jev.set_add(0.2)                            # /add -> {"probability": 0.2}
        jev.set_review("delete", memory_id="k3x9a")
        jev.decide_offered = False                  # /decide answers 404, as a service written before it
        # /decide -> {"verdicts": {id: the verdict set for it, ...}, "add": the add's probability}
        jev.answer("/verdict", status=500)          # scripted answers win over the defaults
        jev.fail("/verdict", "k3x9a", status=500)   # one memory's verdict (or review) always fails
        jev.questions()                             # ["worth", "verdict", ...] in arrival order
        jev.bodies("/verdict")                      # the parsed request bodies, in arrival order
        jev.clear()                                 # back to the constructor's defaults, no requests

One server per test module (``clear()`` between tests) keeps a suite fast.

A request whose body is not JSON gets 400, as a strict service would.
See ``loopback`` (the package docstring) for the common API: delays, one-shot
answers, recorded requests, ``api_key``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from . import Answer, LoopbackServer, Recorded

PATHS = ("/worth", "/decide", "/verdict", "/add", "/review")


class JevServer(LoopbackServer):
    def __init__(
        self,
        *,
        api_key: str | None = None,
        worth: float = 0.9,
        add: float = 0.9,
        verdict: str = "keep",
        review: str = "keep",
    ) -> None:
        super().__init__(api_key=api_key)
        self._defaults_lock = threading.Lock()
        self._initial = (worth, add, verdict, review)
        self._reset_defaults()

    def _reset_defaults(self) -> None:
        with self._defaults_lock:
            self.worth_probability, self.add_probability, self.default_verdict, self.default_review = self._initial
            self.verdicts: dict[str, Any] = {}
            self.reviews: dict[str, Any] = {}
            self.failing: dict[tuple[str, str], int] = {}
            self.decide_offered = True

    def clear(self) -> None:
        """Also puts the default answers back to those given to the constructor."""
        super().clear()
        self._reset_defaults()

    def set_worth(self, probability: Any) -> None:
        with self._defaults_lock:
            self.worth_probability = probability

    def set_add(self, probability: Any) -> None:
        with self._defaults_lock:
            self.add_probability = probability

    def set_verdict(self, verdict: Any, memory_id: str | None = None) -> None:
        with self._defaults_lock:
            if memory_id is None:
                self.default_verdict = verdict
            else:
                self.verdicts[memory_id] = verdict

    def set_review(self, verdict: Any, memory_id: str | None = None) -> None:
        with self._defaults_lock:
            if memory_id is None:
                self.default_review = verdict
            else:
                self.reviews[memory_id] = verdict

    def fail(self, path: str, memory_id: str, status: int = 500) -> None:
        """Every ``path`` question about that memory is answered ``status`` (a poison record)."""
        with self._defaults_lock:
            self.failing[(path, memory_id)] = status

    def questions(self) -> list[str]:
        return [r.path.lstrip("/") for r in self.requests if r.path in PATHS]

    def bodies(self, path: str | None = None) -> list[Any]:
        """The parsed JSON bodies of the questions asked (of one path, if given), in arrival order."""
        return [r.json for r in self.requests if r.path in PATHS and (path is None or r.path == path)]

    def default_answer(self, request: Recorded) -> Answer:
        if (
            request.method != "POST"
            or request.path not in PATHS
            or (request.path == "/decide" and not self.decide_offered)
        ):
            return Answer(404, {"error": "no such question"})
        try:
            body = json.loads(request.body)
        except ValueError:
            return Answer(400, {"error": "body is not JSON"})
        memory = body.get("memory") if isinstance(body, dict) else None
        memory_id = memory.get("id") if isinstance(memory, dict) else None
        with self._defaults_lock:
            if (request.path, memory_id) in self.failing:
                return Answer(self.failing[(request.path, memory_id)], {"error": "failing"})
            if request.path == "/worth":
                return Answer(body={"probability": self.worth_probability})
            if request.path == "/decide":
                shown = [m.get("id") for m in body.get("memories", []) if isinstance(m, dict)]
                verdicts = {i: self.verdicts.get(i, self.default_verdict) for i in shown}
                return Answer(body={"verdicts": verdicts, "add": self.add_probability})
            if request.path == "/add":
                return Answer(body={"probability": self.add_probability})
            if request.path == "/verdict":
                return Answer(body={"verdict": self.verdicts.get(memory_id, self.default_verdict)})
            return Answer(body={"verdict": self.reviews.get(memory_id, self.default_review)})
