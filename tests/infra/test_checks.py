"""cdk-nag, cfn-lint, the staged assets, and the stack under non-default context."""

from __future__ import annotations

import json
import tempfile

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

from infra import nag
from infra.code_asset import CODE_GOAL_BYTES, LAYER_GOAL_BYTES
from infra.settings import StackConfig
from synth_shapes import CDK_CLI, CONCRETE_ACCOUNT, CONCRETE_REGIONS, SHAPES


def _acknowledgements(construct) -> dict[str, dict[str, str]]:
    """Construct path -> {acknowledged id: reason} for the construct and its descendants."""
    found: dict[str, dict[str, str]] = {}
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(node.node.path, {}).update(entry.data)
    return found


# -- cdk-nag --------------------------------------------------------------------------------


PACKS = ("AwsSolutions", "NIST.800.53.R5")


@pytest.mark.parametrize("shape", SHAPES)
def test_synth_passed_both_nag_packs_with_no_unacknowledged_finding(synth_of, shape):
    """Agnostic (plain `cdk synth`) and concrete (`cdk deploy` with credentials, in two regions)."""
    synth = synth_of(shape)
    # The app registers AwsSolutionsChecks and NIST80053R5Checks; any unacknowledged finding fails the synth.
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    assert sorted(plugin["pluginName"] for plugin in report["pluginReports"]) == sorted(PACKS)
    violations = [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])]
    assert violations == []
    assert all(plugin["conclusion"] == "success" for plugin in report["pluginReports"])
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    environment = manifest["artifacts"]["MemoryBot"]["environment"]
    expected = f"aws://{CONCRETE_ACCOUNT}/{shape}" if synth.region else "aws://unknown-account/unknown-region"
    assert environment == expected


def test_a_concrete_synth_writes_the_account_and_region_where_an_agnostic_one_has_tokens(synth_of):
    """What made the acknowledgements shape-dependent: the map's execution ARNs."""
    executions = ":states:ap-northeast-1:123456789012:execution:"
    assert executions in json.dumps(synth_of("ap-northeast-1").template)
    agnostic = json.dumps(synth_of("agnostic").template)
    assert ":states:" in agnostic and executions not in agnostic and '{"Ref": "AWS::AccountId"}' in agnostic


def test_the_acknowledgements_follow_the_stacks_environment():
    from aws_cdk import App, Environment

    agnostic = Stack(App(), "Agnostic")
    assert nag.arn_region_and_account(agnostic) == ("<AWS::Region>", "<AWS::AccountId>")
    concrete = Stack(App(), "Concrete", env=Environment(account="123456789012", region="ap-northeast-1"))
    assert nag.arn_region_and_account(concrete) == ("ap-northeast-1", "123456789012")


@pytest.mark.skipif(not CDK_CLI.exists(), reason="the CDK CLI is not installed (run `npm ci` in the repo root)")
def test_the_operators_cdk_cli_synthesizes_a_concrete_environment(synth_of):
    """`cdk synth` through the pinned CLI, with AWS_REGION exported as the README says and an account."""
    synth = synth_of(CONCRETE_REGIONS[0])
    assert synth.via == "cdk-cli"
    assert f":states:{CONCRETE_REGIONS[0]}:{CONCRETE_ACCOUNT}:execution:" in json.dumps(synth.template)


def test_the_checks_are_live_an_unacknowledged_finding_fails_synth():
    """Negative control: the same plugin wiring rejects a queue with no DLQ and no SSL policy."""
    app = App(outdir=tempfile.mkdtemp(prefix="nag-control-"))
    stack = Stack(app, "Control")
    sqs.Queue(stack, "Plain")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="AwsSolutions-SQS4"):
        app.synth()


def test_the_nist_checks_are_live_an_unacknowledged_finding_fails_synth():
    """Negative control: the NIST 800-53 rev 5 pack rejects a table without point-in-time recovery."""
    app = App(outdir=tempfile.mkdtemp(prefix="nist-control-"))
    stack = Stack(app, "Control")
    dynamodb.Table(stack, "Plain", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING))
    Validations.of(app).add_plugins(NIST80053R5Checks(app))
    with pytest.raises(Exception, match="NIST.800.53.R5-DynamoDBPITREnabled"):
        app.synth()


def test_every_acknowledgement_sits_on_a_resource_and_gives_its_reason(app_and_stack):
    _, stack = app_and_stack
    acks = _acknowledgements(stack)
    assert stack.node.path not in acks, "no stack-wide acknowledgement"
    assert acks, "the stack acknowledges its known findings"
    for path, rules in acks.items():
        for rule, reason in rules.items():
            pack, _, name = rule.partition("::")
            assert pack in PACKS and name.startswith(f"{pack}-"), (path, rule)
            assert len(reason) > 60, (path, rule, reason)
    # IAM5 is acknowledged only for the exact X-Ray wildcard, and only on the function roles.
    iam5 = {p for p, rules in acks.items() if any("IAM5" in r for r in rules)}
    # ... and, with their own reasons (infra/nag.py), on the nightly state machine's role and its map's policy.
    nightly = {f"{stack.node.path}/NightlyRun/Role", f"{stack.node.path}/NightlyRun/StateMachine"}
    assert iam5 == {f"{stack.node.path}/{name}Role" for name in stack.functions} | nightly
    nightly_reasons = set(nag.NIGHTLY_REASONS.values())
    for path in iam5 - nightly:
        own = [r for r, why in acks[path].items() if "IAM5" in r and why not in nightly_reasons]
        assert own == ["AwsSolutions::AwsSolutions-IAM5[Resource::*]"], path
    for path in nightly:
        assert all("IAM5" in r and acks[path][r] in nightly_reasons for r in acks[path]), path
    assert set(nag.REASONS) >= {
        r.partition("::")[2] for rules in acks.values() for r, why in rules.items() if why not in nightly_reasons
    }


def _built(context: dict):
    """The construct tree (acknowledgements are made while building; no synth needed)."""
    from infra.app import build_app

    return build_app(outdir=tempfile.mkdtemp(prefix="cdk-acks-"), context=context | {"aws:cdk:bundling-stacks": []})[1]


def test_fixed_findings_are_not_acknowledged_an_alarm_with_an_action_a_worker_with_reserved_concurrency():
    stack = _built({"alarm_email": "ops@example.com", "reply_reserved_concurrency": "5"})
    acks = _acknowledgements(stack)
    alarm_action = "NIST.800.53.R5::NIST.800.53.R5-CloudWatchAlarmAction"
    concurrency = "NIST.800.53.R5::NIST.800.53.R5-LambdaConcurrency"
    assert not any(alarm_action in rules for rules in acks.values())
    assert concurrency not in acks.get(f"{stack.node.path}/ReplyFunction", {})
    assert concurrency in acks[f"{stack.node.path}/ExtractionFunction"]  # not reserved: still acknowledged
    # Without an address, each alarm carries the acknowledgement itself.
    default = _built({})
    alarmed = {p for p, rules in _acknowledgements(default).items() if alarm_action in rules}
    assert alarmed == {alarm.node.path for alarm in default.alarms}


def test_with_personal_data_encrypted_only_the_key_actions_wildcard_is_added_to_the_roles():
    stack = _built({"encrypt_personal_data": "true"})
    acks = _acknowledgements(stack)
    nightly_reasons = set(nag.NIGHTLY_REASONS.values())
    for name in stack.functions:
        role = acks[f"{stack.node.path}/{name}Role"]
        iam5 = sorted(r for r in role if "IAM5" in r and role[r] not in nightly_reasons)  # the manifest's own
        assert iam5 == [
            "AwsSolutions::AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        ]
    assert stack.stores.personal_data_key.node.path not in acks  # the key itself needs no acknowledgement


# -- cfn-lint -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_cfn_lint_finds_no_errors(synth_of, shape):
    from cfnlint.api import ManualArgs, lint_file

    synth = synth_of(shape)
    regions = [synth.region or "us-east-1"]
    matches = lint_file(synth.outdir / "MemoryBot.template.json", config=ManualArgs(regions=regions))
    errors = [f"{m.rule.id} {m.message}" for m in matches if m.rule.id.startswith("E")]
    assert errors == []
    # CDK puts DependsOn on each function's role next to the GetAtt; that warning is CDK's style.
    warnings = {m.rule.id for m in matches if not m.rule.id.startswith("E")}
    assert warnings <= {"W3005"}


# -- the staged assets ----------------------------------------------------------------------


def _size(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _zipped_size(folder) -> int:
    from benchmarks.asset_sizes_bench import folder_sizes

    return folder_sizes(folder)[2]


def test_code_asset_holds_only_the_package_with_every_handler(synth):
    [key] = {f["Properties"]["Code"]["S3Key"] for f in synth.of_type("AWS::Lambda::Function").values()}
    folder = synth.asset_dir(key)
    assert sorted(p.name for p in folder.iterdir()) == ["memorybot"]
    for name in ("interactions", "reply", "extraction", "nightly", "admin"):
        assert (folder / "memorybot" / "handlers" / f"{name}.py").is_file()
    assert (folder / "memorybot" / "tables.py").is_file()
    leftovers = [p for p in folder.rglob("*") if "egg-info" in p.name]
    assert leftovers == []
    assert not (folder / "memorybot" / "local").exists()  # the local stack needs moto: not deployed
    assert not (folder / "memorybot" / "ops").exists()  # `memorybot doctor` runs on the operator's machine
    assert not (folder / "memorybot" / "cli.py").exists()  # the `memorybot` command: the operator's and developer's
    assert _zipped_size(folder) < CODE_GOAL_BYTES


def test_layer_asset_is_the_bundled_dependencies_without_boto3(synth):
    [layer] = synth.of_type("AWS::Lambda::LayerVersion").values()
    site = synth.asset_dir(layer["Properties"]["Content"]["S3Key"]) / "python"
    for package in ("nacl", "aws_lambda_powertools", "httpx", "aws_xray_sdk", "cffi"):
        assert (site / package).is_dir(), package
    for runtime_provided in ("boto3", "botocore", "s3transfer"):
        assert not (site / runtime_provided).exists()
    for pruned in ("bin", ".lock", "wrapt-stubs"):
        assert not (site / pruned).exists()
    assert _zipped_size(site.parent) < LAYER_GOAL_BYTES
    assert _size(site) < 50 * 1024 * 1024  # far inside Lambda's 250 MB unzipped limit


# -- non-default context --------------------------------------------------------------------


@pytest.fixture(scope="module")
def variant():
    """x86_64, Python 3.12, a cross-region inference profile: bundling skipped, nag still on."""
    from infra.app import build_app

    app, stack = build_app(
        outdir=tempfile.mkdtemp(prefix="cdk-variant-"),
        context={
            "architecture": "x86_64",
            "python_version": "3.12",
            "bedrock_chat_model_id": "us.anthropic.claude-3-5-haiku-20241022-v1:0",
            "log_retention_days": "14",
            "alarm_email": "ops@example.com",
            "model_rpm": "900",
            "model_max_in_flight": "16",
            "reply_reserved_concurrency": "5",
            "extraction_reserved_concurrency": "20",
            "timezone": "Europe/Paris",
            "aws:cdk:bundling-stacks": [],
        },
        builtin_cloud_formation_validation=False,
    )
    app.synth()  # raises if cdk-nag finds anything unacknowledged
    return Template.from_stack(stack).to_json()


def test_context_changes_runtime_and_architecture_of_every_function_and_the_layer(variant):
    resources = variant["Resources"].values()
    functions = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 11
    assert {f["Runtime"] for f in functions} == {"python3.12"}
    assert {tuple(f["Architectures"]) for f in functions} == {("x86_64",)}
    [layer] = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::LayerVersion"]
    assert layer["CompatibleRuntimes"] == ["python3.12"] and layer["CompatibleArchitectures"] == ["x86_64"]
    retention = {r["Properties"].get("RetentionInDays") for r in resources if r["Type"] == "AWS::Logs::LogGroup"}
    assert retention == {14}


def test_an_inference_profile_is_granted_with_its_model_and_nothing_else(variant):
    policies = [r["Properties"] for r in variant["Resources"].values() if r["Type"] == "AWS::IAM::Policy"]
    bedrock = [s for p in policies for s in p["PolicyDocument"]["Statement"] if "bedrock" in json.dumps(s["Action"])]
    assert len(bedrock) == 4  # reply, extraction, the nightly speaker and review steps
    text = json.dumps(bedrock[0]["Resource"])
    assert "inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0" in text
    assert ":bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0" in text
    assert "::foundation-model/anthropic.claude-3-haiku-20240307-v1:0" in text  # the decision model


def test_alarm_email_gets_every_alarm_through_an_encrypted_ssl_only_topic(variant, synth):
    resources = variant["Resources"]
    [topic_id] = [k for k, r in resources.items() if r["Type"] == "AWS::SNS::Topic"]
    assert "KmsMasterKeyId" in resources[topic_id]["Properties"]
    [subscription] = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::SNS::Subscription"]
    assert subscription["Protocol"] == "email" and subscription["Endpoint"] == "ops@example.com"
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(alarms) == 26  # errors and throttles of 11 functions, dead letters, lost decisions, 2 on executions
    assert all(a["AlarmActions"] == [{"Ref": topic_id}] for a in alarms)
    # Without the context value: no topic, no actions.
    assert not synth.of_type("AWS::SNS::Topic")


@pytest.mark.parametrize(
    "context, message",
    [
        ({"architecture": "sparc"}, "architecture"),
        ({"python_version": "3.9"}, "python_version"),
        ({"chat_model": "openai"}, "chat_model"),
        ({"decision_model": "http"}, "jev_url"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "../etc/passwd"}, "timezone"),
    ],
)
def test_bad_context_is_refused_before_anything_is_built(context, message):
    with pytest.raises(ValueError, match=message):
        StackConfig.from_context(context.get)


def test_context_strings_from_the_command_line_are_typed():
    config = StackConfig.from_context(
        {"log_retention_days": "90", "fetch_channel_history": "true", "api_rate_limit": "5"}.get
    )
    assert config.log_retention_days == 90 and config.fetch_channel_history is True and config.api_rate_limit == 5
    assert StackConfig.from_context({}.get) == StackConfig()


def test_the_session_synth_is_the_operators_cdk_cli_when_node_is_present(synth):
    import shutil

    if shutil.which("node") and shutil.which("npm"):
        assert synth.via == "cdk-cli"
    else:
        assert synth.via == "app-command"
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    assert "MemoryBot" in manifest["artifacts"]


def test_the_workers_reserved_concurrency_and_model_quota_come_from_context(variant, synth):
    functions = {k: r["Properties"] for k, r in variant["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}
    reserved = {k.split("Function")[0]: p.get("ReservedConcurrentExecutions") for k, p in functions.items()}
    assert reserved["Reply"] == 5 and reserved["Extraction"] == 20
    assert reserved["Interactions"] is None and reserved["NightlySpeaker"] is None and reserved["Admin"] is None
    for props in functions.values():
        env = props["Environment"]["Variables"]
        assert env["MEMORYBOT_MODEL_RPM"] == "900" and env["MEMORYBOT_MODEL_MAX_IN_FLIGHT"] == "16"
        assert env["MEMORYBOT_MODEL_DEADLINE"] == "60" and env["MEMORYBOT_ASYNC_RETRIES"] == "2"
    # By default nothing is reserved (a new account's concurrency limit may not allow it).
    assert all(
        "ReservedConcurrentExecutions" not in f["Properties"] for f in synth.of_type("AWS::Lambda::Function").values()
    )


def test_the_time_zone_from_context_reaches_every_function_as_its_settings_read_it(variant, synth):
    """One context value, ``timezone``: every function's MEMORYBOT_TIMEZONE, which the functions'
    settings turn into the zone their prompts, history and memories' ends are read in."""
    from zoneinfo import ZoneInfo

    from memorybot.config import Settings

    for template, zone in ((variant, "Europe/Paris"), (synth.template, "Asia/Tokyo")):  # cdk.json's default
        functions = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
        assert len(functions) == 11
        for props in functions:
            env = props["Environment"]["Variables"]
            assert env["MEMORYBOT_TIMEZONE"] == zone
            plain = {k: v for k, v in env.items() if isinstance(v, str)}  # table names are references here
            assert Settings.from_env(plain).zone == ZoneInfo(zone)
