"""What docs/deploy.md counts and names is what the synthesized template holds: the tables, the
routes, the outputs, the alarms, the functions, the secrets and the models; the tables it says
are retained on tear-down and encrypted with the personal-data key. So the page cannot drift
from the stack again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memorybot import tables

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
# The model settings every function's environment may carry: one per model the stack configures.
MODEL_VARIABLES = re.compile(r"^MEMORYBOT_[A-Z]+_MODEL$")


@pytest.fixture(scope="module")
def page() -> str:
    return " ".join(DEPLOY.read_text(encoding="utf-8").split())  # sentences may wrap anywhere


def stated(page: str, pattern: str) -> int:
    """The number the page states where ``pattern`` (with one group for it) matches: exactly once."""
    found = re.findall(pattern, page)
    assert len(set(found)) == 1, (pattern, found)
    word = found[0].lower()
    return int(word) if word.isdigit() else NUMBERS[word]


def named_tables(page: str, pattern: str) -> set[str]:
    [listed] = re.findall(pattern, page)
    return set(re.findall(r"`([a-z_]+)`", listed))


def test_the_counts_on_the_page_are_the_templates(synth, page):
    template = synth.template
    assert stated(page, r"(\w+) DynamoDB tables") == len(synth.of_type("AWS::DynamoDB::Table"))
    assert stated(page, r"REST API with (\w+) routes") == len(synth.of_type("AWS::ApiGateway::Method"))
    assert stated(page, r"it prints (\w+) outputs") == len(template["Outputs"])
    assert stated(page, r"(\d+) CloudWatch alarms") == len(synth.of_type("AWS::CloudWatch::Alarm"))
    assert stated(page, r"(\d+) alarms \(\$") == len(synth.of_type("AWS::CloudWatch::Alarm"))
    assert stated(page, r"(\w+) Lambda functions") == len(synth.of_type("AWS::Lambda::Function"))
    assert stated(page, r"(\w+) Secrets Manager secrets") == len(synth.of_type("AWS::SecretsManager::Secret"))
    models = {
        name
        for function in synth.of_type("AWS::Lambda::Function").values()
        for name in function["Properties"].get("Environment", {}).get("Variables", {})
        if MODEL_VARIABLES.match(name)
    }
    assert stated(page, r"(\w+) models are configured") == len(models), models


def test_every_output_is_on_the_page(synth, page):
    for output in synth.template["Outputs"]:
        # CDK names the API's own output with a hash: the page names its stable start.
        name = output if output in page else re.sub(r"[0-9A-F]{8}$", "", output)
        assert f"`MemoryBot.{name}" in page, output


def test_the_tables_the_page_names_are_the_templates(synth, page):
    names = {spec.logical_name for spec in tables.ALL_TABLES}
    assert named_tables(page, r"seven DynamoDB tables \(([^)]*)\)") == names
    retained = {spec.logical_name for spec in tables.ALL_TABLES if _retained(synth, spec)}
    assert named_tables(page, r"The data tables \(([^)]*)\) have a \*\*Retain\*\*") == retained
    personal = {spec.logical_name for spec in tables.ALL_TABLES if spec.personal_data}
    assert named_tables(page, r"about them — (.*?) — use one customer-managed KMS key") == personal


def _retained(synth, spec: tables.TableSpec) -> bool:
    construct = "".join(part.capitalize() for part in spec.logical_name.split("_")) + "Table"
    [table] = [
        t
        for t in synth.of_type("AWS::DynamoDB::Table").values()
        if t.get("Metadata", {}).get("aws:cdk:path") == f"MemoryBot/{construct}/Resource"
    ]
    return table.get("DeletionPolicy") == "Retain"
