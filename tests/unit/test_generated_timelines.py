"""The time-aware benchmark's data files are what its generator makes with its seed, and consistent:
plans that end (half of them by ``now``), facts that change, each person one of the profiles'."""

from __future__ import annotations

import hashlib
import json
from datetime import date

import pytest

from benchmarks.generate_profiles import LANGS
from benchmarks.generate_timelines import CHANGES, PLANS, data_path, generate, profiles_path
from memorybot.core.record.domain import JST, parse_iso


@pytest.mark.parametrize("code", sorted(LANGS))
def test_committed_file_is_what_the_seeded_generator_makes(code: str) -> None:
    committed = data_path(code).read_text(encoding="utf-8")
    assert hashlib.sha256(committed.encode()).digest() == hashlib.sha256(generate(code).encode()).digest(), (
        f"{data_path(code).name} differs from the generator's output: run `python -m benchmarks.generate_timelines`"
    )


@pytest.mark.parametrize("code", sorted(LANGS))
def test_every_person_has_plans_half_ended_and_changes_resolved_against_the_lines_day(code: str) -> None:
    people = [json.loads(line) for line in data_path(code).read_text(encoding="utf-8").splitlines()]
    profiles = [json.loads(line)["person"] for line in profiles_path(code).read_text(encoding="utf-8").splitlines()]
    assert [p["person"] for p in people] == profiles
    for person in people:
        today = person["now"][:10]
        plans, changes = person["plans"], person["changes"]
        assert len(plans) == PLANS and len(changes) == CHANGES
        assert sum(p["ended"] for p in plans) == PLANS // 2
        for plan in plans:
            assert plan["ended"] == (plan["valid_until"] < today) and plan["said_at"][:10] <= plan["valid_until"]
            date.fromisoformat(plan["valid_until"])
        for change in changes:
            assert change["old_at"] < change["said_at"] and change["resolved"] in change["new_text"]
            said_on = parse_iso(change["said_at"]).astimezone(JST).date()  # the line's own day, in JST
            assert (said_on - date.fromisoformat(change["resolved"])).days in (0, 7, 14)
            assert all(r["said_at"] > change["said_at"] for r in change["re_mentions"])
