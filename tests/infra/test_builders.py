"""The CDK builders take what they use (docs/infra-layout.md): none imports the stack, the modules of
infra/ import one another without a circle, a builder builds on a plain Stack from its parts alone, and
a function's table grants are checked against the tables before anything is granted."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs

from infra.alarms import build_alarms
from infra.api import access_log_group, build_api
from infra.function_specs import FUNCTIONS, access
from infra.functions import platform
from infra.grants import check_table_access
from infra.nightly import NightlyRun
from infra.settings import StackConfig
from memorybot import tables

INFRA = Path(__file__).resolve().parents[2] / "infra"


def _imports() -> dict[str, set[str]]:
    """Each module of infra/ -> the modules of infra/ it imports, TYPE_CHECKING imports included."""
    graph: dict[str, set[str]] = {}
    for path in sorted(INFRA.glob("*.py")):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                imported.update([node.module] if node.module else [a.name for a in node.names])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("infra."):
                imported.add((node.module or "").split(".")[1])
            elif isinstance(node, ast.ImportFrom) and node.module == "infra":
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                imported.update(a.name.split(".")[1] for a in node.names if a.name.startswith("infra."))
        graph[path.stem] = {m.split(".")[0] for m in imported}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the path of modules around it, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done or module not in graph:
            return None
        for imported in sorted(graph[module]):
            if found := visit(imported, path + [module]):
                return found
        done.add(module)
        return None

    for module in graph:
        if found := visit(module, []):
            return found
    return None


def test_no_module_of_the_cdk_app_but_the_app_imports_the_stack():
    graph = _imports()
    assert graph["app"] >= {"stack"}, "the reading of the imports found the app's own"
    assert sorted(m for m, imported in graph.items() if "stack" in imported) == ["app"]


def test_the_modules_of_the_cdk_app_import_one_another_without_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # the check finds one
    assert _circle(_imports()) is None


def test_the_parts_the_builders_share_import_nothing_of_the_app():
    graph = _imports()
    assert graph["parts"] == set()
    # nightly.py takes the retries it shares with functions.py, and nothing else, from the leaves.
    assert graph["nightly"] <= {"parts", "settings", "function_specs"}


def _stand_in(scope: Stack, name: str) -> lambda_.Function:
    return lambda_.Function(
        scope,
        f"{name}Function",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
    )


def test_the_api_the_nightly_run_and_the_alarms_build_on_a_plain_stack_from_their_parts_alone():
    config = StackConfig()
    stack = Stack(App(), "Parts")
    names = ("Interactions", "Admin", "Erase", "NightlyClaim", "NightlyPlan", "NightlySpeaker")
    names += ("NightlySpeakerFailed", "NightlyReview", "NightlyFinish")
    functions = {name: _stand_in(stack, name) for name in names}
    retention = platform(config).log_retention
    api = build_api(stack, config, access_logs=access_log_group(stack, retention), functions=functions)
    run = NightlyRun(
        stack,
        "NightlyRun",
        config=config,
        functions=functions,
        manifests=s3.Bucket(stack, "Manifests"),
        log_retention=retention,
    )
    alarms = build_alarms(stack, config, functions=functions, dead_letters=sqs.Queue(stack, "Dlq"), nightly_run=run)

    assert sorted(m.resource.path for m in api.methods) == [
        "/interactions",
        "/memory/erase",
        "/memory/import",
        "/memory/rollback",
    ]
    assert run.state_machine.node.scope is run
    # Errors and throttles per function, the dead letters, lost decisions, and two for the nightly run.
    assert len(alarms) == 2 * len(functions) + 2 + 2
    # Built through the monitoring facade; the nightly run's two watch its state machine.
    paths = {a.node.path for a in alarms}
    nightly = {
        "Parts/Monitoring/MemoryBot-Nightly-Failure-Count-Failed",
        "Parts/Monitoring/MemoryBot-Nightly-TimedOut-Count-TimedOut",
    }
    assert nightly <= paths


@pytest.mark.parametrize(
    "table, grant, message",
    [
        (
            tables.MEMORY_LOG,
            access("PutItem", "UpdateItem"),
            r"the ledger is append-only, \[.PutItem., .UpdateItem.\] is not",
        ),
        (tables.MEMORY_LOG, access("DeleteItem"), "the ledger is append-only"),
        (tables.MEMORIES, access("Query", indexes=("by_user", "by_colour")), r"memories has no index \['by_colour'\]"),
    ],
)
def test_a_spec_that_would_change_the_ledger_or_query_a_missing_index_is_refused(table, grant, message):
    with pytest.raises(ValueError, match=f"Reply: {message}"):
        check_table_access("Reply", table, grant)


def test_the_specs_of_the_stack_pass_the_check():
    by_name = {t.logical_name: t for t in tables.ALL_TABLES}
    for spec in FUNCTIONS:
        for logical_name, grant in spec.tables.items():
            check_table_access(spec.name, by_name[logical_name], grant)
    check_table_access("Erase", tables.MEMORY_LOG, access("PutItem", "GetItem", "Query", indexes=("by_user",)))
