"""The catalog: every text in English and Japanese, with the same fields, and none worded elsewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memorybot.core.record import catalog, texts_admins, texts_receipts
from memorybot.core.record.catalog import (
    COMMAND_DESCRIPTIONS,
    COMMAND_NAMES,
    TEXTS,
    Language,
    fields_of,
    language_of,
    text,
)

PACKAGE = Path(catalog.__file__).resolve().parents[2]  # memorybot/core/record/catalog.py
EVERY_TABLE = {"TEXTS": TEXTS, "COMMAND_DESCRIPTIONS": COMMAND_DESCRIPTIONS, "COMMAND_NAMES": COMMAND_NAMES}
JAPANESE = re.compile(r"[\u3000-\u30ff\u4e00-\u9fff]")  # Japanese punctuation, kana or kanji


@pytest.mark.parametrize("table", EVERY_TABLE)
def test_every_key_has_both_languages_with_the_same_fields(table):
    for key, texts in EVERY_TABLE[table].items():
        assert set(texts) == set(Language), key
        assert all(t.strip() for t in texts.values()), key
        assert fields_of(texts[Language.EN]) == fields_of(texts[Language.JA]), key


@pytest.mark.parametrize("table", EVERY_TABLE)
def test_the_japanese_texts_are_japanese_and_the_english_ones_are_not(table):
    for key, texts in EVERY_TABLE[table].items():
        assert JAPANESE.search(texts[Language.JA]), key
        assert not JAPANESE.search(texts[Language.EN]), key


def test_the_catalog_holds_every_text_of_its_split_tables():
    # catalog.py reads the receipts' and the admins' tables as part of its own.
    for table, parts in {
        "TEXTS": (texts_receipts.RECEIPTS_TEXTS, texts_admins.ADMINS_TEXTS),
        "COMMAND_DESCRIPTIONS": (texts_receipts.RECEIPTS_DESCRIPTIONS, texts_admins.ADMINS_DESCRIPTIONS),
    }.items():
        for part in parts:
            assert part and {key: EVERY_TABLE[table][key] for key in part} == part, table


def test_a_key_written_in_two_tables_is_an_error_not_one_text_over_the_other():
    first = {"same": {Language.EN: "One.", Language.JA: "一。"}}
    second = {"same": {Language.EN: "Two.", Language.JA: "二。"}}
    assert catalog.one_table(first, {"other": second["same"]}) == {"same": first["same"], "other": second["same"]}
    with pytest.raises(ValueError, match="same"):
        catalog.one_table(first, second)


def test_the_language_is_japanese_for_ja_and_english_for_everything_else():
    assert [language_of(loc) for loc in ("ja", "JA", "ja-JP")] == [Language.JA] * 3
    others = ("en-US", "en-GB", "", "zh-TW", "ko", "jav", "pt-BR")
    assert [language_of(loc) for loc in others] == [Language.EN] * len(others)
    assert text("forgotten", "ja", memory_id="ab12c") == "忘れました：記憶 ab12c を削除しました。"
    assert text("forgotten", "fr", memory_id="ab12c") == "Forgotten: memory ab12c is deleted."


@pytest.mark.parametrize("table", EVERY_TABLE)
def test_japanese_names_a_memory_with_one_word(table):
    """記憶, as every answer about a person's memories says it; never メモ (a note) beside it."""
    for key, texts in EVERY_TABLE[table].items():
        assert "メモ" not in texts[Language.JA].replace("メモリ", ""), key


def test_a_missing_field_is_an_error_not_a_text_with_braces():
    with pytest.raises(KeyError):
        text("forgotten", "ja")


# ---- no answer worded outside the catalog

# The modules whose output a person reads: the answers, DMs, replies and notices.
ANSWERING = [
    *sorted((PACKAGE / "discord").glob("*.py")),
    *sorted((PACKAGE / "core" / "turn").glob("*.py")),
    *sorted((PACKAGE / "core" / "rights").glob("*.py")),
    *sorted((PACKAGE / "handlers").glob("*.py")),
]
_WORDS = re.compile(r"[A-Za-z']+")


def _prose(literal: str) -> bool:
    """Looks like words for a person: two or more words, a capital first or a sentence's end."""
    stripped = literal.strip()
    words = [w for w in stripped.split() if _WORDS.search(w)]
    return len(words) >= 2 and (stripped[:1].isupper() or stripped[-1:] in ".!?:")


def _worded(tree: ast.AST) -> list[tuple[int, str]]:
    """Prose string literals (and f-strings) that are not a docstring, a log line, an exception's
    message or an HTTP error body for Discord or an operator (``{"error": ...}``)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "logger"
        ):
            skipped.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "error":
                    skipped.update(id(n) for n in ast.walk(value))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _prose(node.value):
            found.append((node.lineno, node.value))
        if isinstance(node, ast.JoinedStr):
            literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            skipped.update(id(v) for v in node.values)
            if _prose(literal):
                found.append((node.lineno, literal))
    return found


@pytest.mark.parametrize("path", ANSWERING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_answer_is_worded_outside_the_catalog(path):
    assert _worded(ast.parse(path.read_text(encoding="utf-8"))) == []


def test_the_scan_finds_a_sentence_worded_in_code():
    # The guard above would pass on any module if it found nothing at all: it finds these.
    source = 'logger.info("Fine to log.")\nTEXT = "Sorry, nothing here."\nanswer = f"Memory {x} is gone."\n'
    assert [line for line, _ in _worded(ast.parse(source))] == [2, 3]
