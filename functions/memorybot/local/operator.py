"""`memorybot rollback` and `memorybot erase`: the operator's two routes from a terminal.

Each asks the route for a dry run first, shows what would change, and acts only after the
operator confirms at a terminal (or passed --yes): a "yes" piped in is no confirmation. The same
routes answer on the local stack and on a deployed API (its base URL, e.g. https://…/prod, with
MEMORYBOT_ADMIN_SECRET set). Only ids and counts are printed, never memory text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ..ops.setup import SETUP_FAILED

# The answer to a question: True (yes), False (anything else), None (no terminal to ask at).
Confirm = Callable[[str], bool | None]
NO_TERMINAL = "Not confirmed: a confirmation is read only from a terminal. To go ahead without one, pass --yes."


def ask(question: str) -> bool | None:
    """True only for an explicit yes typed at a terminal; EOF or Ctrl-C is a no; no terminal: None."""
    if not sys.stdin.isatty():
        return None
    try:
        return input(f"{question} Type yes to go ahead: ").strip().lower() in ("y", "yes")
    except (EOFError, KeyboardInterrupt):
        print()
        return False


@dataclass
class Operator:
    http: httpx.Client
    url: str  # the stack's base URL (local) or the API's (deployed, with its stage)
    admin_secret: str
    confirm: Confirm = ask
    say: Callable[[str], None] = print
    complain: Callable[[str], None] = print

    def _post(self, route: str, body: dict) -> tuple[int, Any]:
        response = self.http.post(
            f"{self.url}/memory/{route}", json=body, headers={"Authorization": f"Bearer {self.admin_secret}"}
        )
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {}

    def _refused(self, status: int, answer: Any) -> int:
        error = answer.get("error") if isinstance(answer, dict) else None
        if status == 401:
            self.complain(
                f"The route at {self.url} refused the admin secret (HTTP 401). Locally it is read from the stack's "
                "state dir (--state-dir); for a deployed stack set MEMORYBOT_ADMIN_SECRET to the secret's value."
            )
        else:
            self.complain(f"Refused (HTTP {status}){f': {error}' if error else ''}.")
        return 1

    def _declined(self, question: str, yes: bool) -> int | None:
        """None to go ahead; else the exit code, with nothing changed (no terminal: SETUP_FAILED)."""
        answer = True if yes else self.confirm(question)
        if answer:
            return None
        if answer is None:
            self.complain(NO_TERMINAL)
        self.say("Nothing was changed.")
        return SETUP_FAILED if answer is None else 1

    def rollback(self, run_id: int | None, *, yes: bool = False) -> int:
        body: dict[str, Any] = {"dryRun": True} if run_id is None else {"runId": run_id, "dryRun": True}
        status, preview = self._post("rollback", body)
        if status == 409 and preview.get("alreadyRolledBack"):
            self.complain(f"Run {preview.get('runId')} is already rolled back: nothing to do.")
            return 1
        if status == 409:
            self.complain(f"Run {preview.get('runId')} is being rolled back right now: ask again in a minute.")
            return 1
        if status != 200:
            return self._refused(status, preview)
        run = preview["runId"]
        self.say(_rollback_lines(run, preview, dry_run=True))
        if (declined := self._declined(f"Roll back nightly run {run}?", yes)) is not None:
            return declined
        # The run that was previewed, by id: a run finishing meanwhile must not be rolled back instead.
        status, done = self._post("rollback", {"runId": run, "dryRun": False})
        if status != 200:
            return self._refused(status, done)
        self.say(_rollback_lines(run, done, dry_run=False))
        return 0

    def erase(self, user_id: str, *, yes: bool = False) -> int:
        status, preview = self._post("erase", {"userId": user_id, "dryRun": True})
        if status == 404:
            self.complain(f"Nothing is stored about user {user_id}: nothing to erase.")
            return 1
        if status != 200:
            return self._refused(status, preview)
        self.say(_erase_lines(preview, dry_run=True))
        question = f"Erase everything stored about user {user_id}? This cannot be undone."
        if (declined := self._declined(question, yes)) is not None:
            return declined
        status, done = self._post("erase", {"userId": user_id, "dryRun": False})
        if status != 200:
            return self._refused(status, done)
        self.say(_erase_lines(done, dry_run=False))
        return 0


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:20])
    return f" ({shown}{', …' if len(ids) > 20 else ''})" if ids else ""


def _rollback_lines(run: int, answer: dict, *, dry_run: bool) -> str:
    reverted, skipped, erased = (answer.get(k) or [] for k in ("reverted", "skipped", "erased"))
    head = f"Dry run: rolling back nightly run {run} would" if dry_run else f"Rolled back nightly run {run}: it did"
    lines = [
        f"{head} revert {len(reverted)} memor{'y' if len(reverted) == 1 else 'ies'}{_ids(reverted)}",
        f"  and skip {len(skipped)} changed or forgotten since{_ids(skipped)}",
    ]
    if erased:
        lines.append(f"  ({len(erased)} erased since cannot be restored{_ids(erased)})")
    return "\n".join(lines)


def _erase_lines(answer: dict, *, dry_run: bool) -> str:
    verb = "Dry run: erasing" if dry_run else "Erased"
    tail = "would delete" if dry_run else "deleted"
    return (
        f"{verb} user {answer.get('userId')}: {tail} {answer.get('memoriesDeleted', 0)} memories in "
        f"{answer.get('scopes', 0)} scope(s) and {answer.get('messagesDeleted', 0)} stored messages, "
        f"and {'would redact' if dry_run else 'redacted'} {answer.get('ledgerRowsRedacted', 0)} ledger rows."
    )
