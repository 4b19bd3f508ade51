"""The recall benchmark's data files are what its generator makes with its seed, and consistent."""

from __future__ import annotations

import hashlib
import json

import pytest

from benchmarks.generate_profiles import LANGS, MAX_FACTS, MIN_FACTS, data_path, generate


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("code", sorted(LANGS))
def test_committed_file_is_what_the_seeded_generator_makes(code: str) -> None:
    committed = data_path(code).read_bytes()
    assert hashlib.sha256(committed).hexdigest() == sha256(generate(code)), (
        f"{data_path(code).name} differs from the generator's output: run `python -m benchmarks.generate_profiles`"
    )


def test_another_seed_makes_other_profiles() -> None:
    assert sha256(generate("en", seed=1)) != sha256(generate("en"))


@pytest.mark.parametrize("code", sorted(LANGS))
def test_every_evidence_id_and_re_mentioned_fact_exists(code: str) -> None:
    people = [json.loads(line) for line in data_path(code).read_text(encoding="utf-8").splitlines()]
    assert people
    for person in people:
        ids = [f["id"] for f in person["facts"]]
        assert len(ids) == len(set(ids)), person["person"]
        assert MIN_FACTS <= len(ids) <= MAX_FACTS
        assert person["questions"] and person["re_mentions"]
        for question in person["questions"]:
            assert question["evidence"] and set(question["evidence"]) <= set(ids), (person["person"], question["id"])
        for re_mention in person["re_mentions"]:
            assert re_mention["fact"] in ids, (person["person"], re_mention["id"])
        for fact in person["facts"]:
            assert fact["created_at"] <= fact["updated_at"] <= person["now"]


def test_japanese_facts_are_written_without_spaces() -> None:
    people = [json.loads(line) for line in data_path("ja").read_text(encoding="utf-8").splitlines()]
    texts = [f["text"] for p in people for f in p["facts"]]
    assert not [t for t in texts if " " in t]
    assert all(any("\u3040" <= ch <= "\u9fff" for ch in t) for t in texts)
