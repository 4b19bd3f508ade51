"""The command definitions against Discord's published limits (discord/discord-api-spec's
ApplicationCommandCreateRequest and its option schemas, and the developer docs' naming rules):
what Discord would refuse at `memorybot register-commands` fails here first."""

from __future__ import annotations

import unicodedata

import pytest

from memorybot.discord.requests import COMMANDS

# AvailableLocalesEnum: the keys a *_localizations dictionary may have.
DISCORD_LOCALES = frozenset(
    "ar bg cs da de el en-GB en-US es-419 es-ES fi fr he hi hr hu id it ja ko lt nl no pl pt-BR ro ru sv-SE th tr "
    "uk vi zh-CN zh-TW".split()
)
NAME_MAX, DESCRIPTION_MAX, CHOICE_NAME_MAX = 32, 100, 100
MAX_OPTIONS = MAX_CHOICES = 25
STRING_LENGTH_MAX = 6000  # min_length / max_length of a string option
COMMAND_TEXT_MAX = 4000  # a command's names, descriptions and choice values together
CONTEXT_TYPES, INTEGRATION_TYPES = {0, 1, 2}, {0, 1}
CHAT_INPUT, MESSAGE = 1, 3
OPTION_TYPES = set(range(1, 12))  # SUB_COMMAND .. ATTACHMENT


def _chat_input_name(name: str) -> bool:
    """^[-_'\\p{L}\\p{N}\\p{sc=Deva}\\p{sc=Thai}]{1,32}$, lower case where a letter has one."""
    allowed = all(c in "-_'" or unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Mn" for c in name)
    return 1 <= len(name) <= NAME_MAX and allowed and name == name.lower()


def _localizations_ok(values: dict | None, longest: int, check=None) -> None:
    assert isinstance(values, dict | None)
    for locale, value in (values or {}).items():
        assert locale in DISCORD_LOCALES, locale
        assert 1 <= len(value) <= longest, value
        assert check is None or check(value), value


def _text_of(option: dict) -> int:
    """The characters Discord counts toward a command's 4,000: names, descriptions, choices (every language)."""
    total = len(option["name"]) + len(option.get("description", ""))
    total += sum(len(v) for v in (option.get("name_localizations") or {}).values())
    total += sum(len(v) for v in (option.get("description_localizations") or {}).values())
    total += sum(len(c["name"]) + len(str(c["value"])) for c in option.get("choices") or [])
    return total + sum(_text_of(o) for o in option.get("options") or [])


def _check_option(option: dict) -> None:
    assert option["type"] in OPTION_TYPES
    assert _chat_input_name(option["name"]), option["name"]
    assert 1 <= len(option["description"]) <= DESCRIPTION_MAX
    _localizations_ok(option.get("name_localizations"), NAME_MAX, _chat_input_name)
    # every option and subcommand carries its Japanese description
    _localizations_ok(option["description_localizations"], DESCRIPTION_MAX)
    assert "ja" in option["description_localizations"]
    for bound in ("min_length", "max_length"):
        assert bound not in option or 0 <= option[bound] <= STRING_LENGTH_MAX
    choices = option.get("choices") or []
    assert len(choices) <= MAX_CHOICES
    for choice in choices:
        assert 1 <= len(choice["name"]) <= CHOICE_NAME_MAX
        _localizations_ok(choice["name_localizations"], CHOICE_NAME_MAX)
        assert "ja" in choice["name_localizations"]
    nested = option.get("options") or []
    assert len(nested) <= MAX_OPTIONS and len({o["name"] for o in nested}) == len(nested)
    for sub in nested:
        _check_option(sub)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c["name"])
def test_each_command_fits_discords_limits(command):
    assert command["type"] in (CHAT_INPUT, MESSAGE)
    assert set(command["contexts"]) <= CONTEXT_TYPES and len(set(command["contexts"])) == len(command["contexts"])
    assert set(command["integration_types"]) <= INTEGRATION_TYPES
    assert _text_of(command) <= COMMAND_TEXT_MAX
    if command["type"] == MESSAGE:  # mixed case and spaces allowed; no description, no options
        assert 1 <= len(command["name"]) <= NAME_MAX and command["description"] == ""
        assert "options" not in command and "description_localizations" not in command
        _localizations_ok(command["name_localizations"], NAME_MAX)
        return
    _check_option({**command, "type": 1})


def test_names_are_unique_per_type_and_the_counts_are_within_discords():
    for kind, most in ((CHAT_INPUT, 100), (MESSAGE, 5)):
        names = [c["name"] for c in COMMANDS if c["type"] == kind]
        assert len(names) == len(set(names)) and len(names) <= most


def test_the_checks_refuse_what_discord_refuses():
    # The limits above are not vacuous: each of these is a definition Discord answers with 400.
    assert not _chat_input_name("Memory") and not _chat_input_name("forget all") and not _chat_input_name("x" * 33)
    assert _chat_input_name("記憶") and _chat_input_name("forget-all")
    with pytest.raises(AssertionError):
        _localizations_ok({"jp": "記憶"}, NAME_MAX)  # Discord's key is "ja"
    with pytest.raises(AssertionError):
        _check_option({"type": 3, "name": "id", "description": "x" * 101, "description_localizations": {"ja": "x"}})
    with pytest.raises(AssertionError):
        _check_option({"type": 3, "name": "id", "description": "The id", "description_localizations": {}})
