"""The writing answer in both forms: ``{"text", "validUntil"}`` gives the memory its end; a plain
line is the text with no end; an end that is not a date, or before the exchange, is no end."""

from __future__ import annotations

from datetime import date

import pytest

from memorybot.core.prompting.prompts import MemoryDraft, parse_memory_answer
from memorybot.core.record.ports import ModelError

SAID = date(2026, 11, 24)


@pytest.mark.parametrize(
    ("raw", "draft"),
    [
        (
            '{"text": "In Fukuoka until around 2026-12-24", "validUntil": "2026-12-24"}',
            MemoryDraft("In Fukuoka until around 2026-12-24", date(2026, 12, 24)),
        ),
        (
            '{"text": "Moved to Kyoto around 2026-11-17", "validUntil": null}',
            MemoryDraft("Moved to Kyoto around 2026-11-17"),
        ),
        (
            '```json\n{"text": "試験は2026-11-27", "validUntil": "2026-11-27"}\n```',
            MemoryDraft("試験は2026-11-27", date(2026, 11, 27)),
        ),
        ("Moved to Kyoto around 2026-11-17", MemoryDraft("Moved to Kyoto around 2026-11-17")),  # a plain line
        ('{"text": "Has an exam", "validUntil": "Friday"}', MemoryDraft("Has an exam")),  # not a date: no end
        ('{"text": "Has an exam", "validUntil": "2026-02-30"}', MemoryDraft("Has an exam")),
        ('{"text": "Has an exam", "validUntil": "2026-11-20"}', MemoryDraft("Has an exam")),  # before it was said
        ('{"text": "Has an exam"}', MemoryDraft("Has an exam")),
        # The calendar's last day is a day like any other; a day in another form, or with spaces, is none.
        ('{"text": "In Fukuoka", "validUntil": "9999-12-31"}', MemoryDraft("In Fukuoka", date(9999, 12, 31))),
        ('{"text": "Has an exam", "validUntil": "2026-W53-4"}', MemoryDraft("Has an exam")),
        ('{"text": "Has an exam", "validUntil": " 2026-12-01"}', MemoryDraft("Has an exam")),
    ],
)
def test_both_forms_are_read(raw, draft):
    assert parse_memory_answer(raw, said_on=SAID) == draft


@pytest.mark.parametrize("raw", ['{"text": "unclosed', '{"validUntil": "2026-12-01"}', '{"text": 7}', '{"text": null}'])
def test_an_object_that_is_not_the_form_is_no_answer(raw):
    with pytest.raises(ModelError):
        parse_memory_answer(raw, said_on=SAID)
