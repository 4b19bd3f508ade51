"""The operator's cockpit on the synthesized template: the dashboard over the functions, tables,
state machine, API and the bot's own metrics; its URL as an output; the alarms; the night's
schedule in the deployment's time zone and the scheduler's least-privilege role."""

from __future__ import annotations

import json
import re
import tempfile

import pytest

from memorybot.core.record import metrics as names

PRICES = '{"anthropic.claude-3-5-haiku-20241022-v1:0": [0.8, 4]}'
BOT_METRICS = (
    names.TURNS,
    *names.TURN_OUTCOMES.values(),
    names.MEMORIES_ADDED,
    names.MEMORIES_UPDATED,
    names.MEMORIES_DELETED,
    names.MEMORIES_DECAYED,
    names.MEMORIES_FORGOTTEN,
    names.MODEL_REQUESTS,
    names.INPUT_TOKENS,
    names.OUTPUT_TOKENS,
    names.ESTIMATED_COST,
    names.MODEL_THROTTLES,
    names.MODEL_RETRIES,
    names.NIGHT_RUNS,
    names.NIGHT_SPEAKERS,
    names.NIGHT_FAILED_SPEAKERS,
    names.NIGHT_CHUNKS,
    names.NIGHT_REVIEWS,
    names.NIGHT_DIARIES,
)


def dashboard_body(template: dict) -> tuple[dict, str]:
    """The one dashboard and its body, with each reference written as ``<Ref:id>``."""
    [dashboard] = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = "".join(p if isinstance(p, str) else f"<Ref:{p.get('Ref') or p.get('Fn::GetAtt', ['?'])[0]}>" for p in parts)
    return dashboard, body


def test_the_dashboard_shows_the_bot_metrics_a_day_and_the_model_latency_percentiles(synth):
    _, body = dashboard_body(synth.template)
    widgets = json.loads(re.sub(r"<Ref:[^>]+>", "ref", body))["widgets"]
    expressions = [
        m[0]["expression"]
        for w in widgets
        for m in w.get("properties", {}).get("metrics", [])
        if isinstance(m[0], dict) and "expression" in m[0]
    ]
    for metric in BOT_METRICS:
        daily = f"SUM(SEARCH('Namespace=\"MemoryBot\" MetricName=\"{metric}\"', 'Sum', 86400))"
        assert daily in expressions, metric
    for percentile in ("p50", "p95"):
        assert f"SEARCH('Namespace=\"MemoryBot\" MetricName=\"ModelLatency\"', '{percentile}', 3600)" in expressions
    titles = {w.get("properties", {}).get("title") for w in widgets}
    assert {"Turns a day and what learning made of them", "Memories a day", "Model tokens a day"} <= titles
    assert "The last nights" in titles
    assert any(t and t.startswith("Estimated model cost a day") for t in titles)
    assert any(t and t.startswith("Model latency p50 and p95") for t in titles)


def test_the_dashboard_covers_every_function_table_the_state_machine_and_the_api(synth):
    _, body = dashboard_body(synth.template)
    referenced = set(re.findall(r"<Ref:([^>]+)>", body))
    for kind in ("AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::StepFunctions::StateMachine"):
        resources = set(synth.of_type(kind))
        assert resources and resources <= referenced, (kind, resources - referenced)
    [api_id] = synth.of_type("AWS::ApiGateway::RestApi")
    api_name = synth.resources[api_id]["Properties"]["Name"]
    assert f'"ApiName","{api_name}"' in body  # the REST API's metrics are named by the API's name
    [queue_id] = synth.of_type("AWS::SQS::Queue")
    assert queue_id in referenced


def test_a_stack_output_gives_the_dashboards_url(synth):
    dashboard, _ = dashboard_body(synth.template)
    output = synth.template["Outputs"]["DashboardUrl"]["Value"]["Fn::Join"][1]
    url = "".join(p if isinstance(p, str) else "{region}" for p in output)
    name = dashboard["Properties"]["DashboardName"]
    assert url == f"https://{{region}}.console.aws.amazon.com/cloudwatch/home?region={{region}}#dashboards:name={name}"
    assert all(p == {"Ref": "AWS::Region"} for p in output if not isinstance(p, str))


def test_the_alarms_are_the_stacks_26_each_at_least_one_in_five_minutes(synth):
    alarms = synth.of_type("AWS::CloudWatch::Alarm")
    functions = synth.of_type("AWS::Lambda::Function")
    # Errors and throttles of each function, the dead letters, lost decisions, failed and timed-out nights.
    assert len(alarms) == 2 * len(functions) + 4 == 26
    descriptions = [a["Properties"]["AlarmDescription"] for a in alarms.values()]
    assert len(set(descriptions)) == len(descriptions)
    assert not any("AlarmActions" in a["Properties"] for a in alarms.values())  # no alarm_email: nobody to tell


def test_the_scheduler_role_may_only_start_the_state_machine_and_dead_letter_a_start(synth):
    [schedule] = synth.of_type("AWS::Scheduler::Schedule").values()
    role_id = schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
    role = synth.resources[role_id]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert "ManagedPolicyArns" not in role and "Policies" not in role
    policies = [
        p["Properties"]
        for p in synth.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    [policy] = policies
    [machine_id] = synth.of_type("AWS::StepFunctions::StateMachine")
    [queue_id] = synth.of_type("AWS::SQS::Queue")
    statements = {(s["Effect"], s["Action"], json.dumps(s["Resource"])) for s in policy["PolicyDocument"]["Statement"]}
    assert statements == {
        ("Allow", "states:StartExecution", json.dumps({"Ref": machine_id})),
        ("Allow", "sqs:SendMessage", json.dumps({"Fn::GetAtt": [queue_id, "Arn"]})),
    }


@pytest.fixture(scope="module")
def new_york_with_alarm_email() -> dict:
    """The stack in another zone with an alarm address, synthesized in-process with both nag packs
    (bundling skipped): app.synth() raises on any unacknowledged finding."""
    from aws_cdk.assertions import Template

    from infra.app import build_app

    app, stack = build_app(
        outdir=tempfile.mkdtemp(prefix="cdk-cockpit-"),
        context={
            "timezone": "America/New_York",
            "alarm_email": "ops@example.com",
            "model_prices": PRICES,
            "aws:cdk:bundling-stacks": [],
        },
        builtin_cloud_formation_validation=False,
    )
    app.synth()
    return Template.from_stack(stack).to_json()


def test_the_night_runs_at_03_00_in_the_configured_zone(new_york_with_alarm_email):
    resources = new_york_with_alarm_email["Resources"]
    [schedule] = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Scheduler::Schedule"]
    # 03:00 New York time: 08:00 UTC in winter, 07:00 in summer; the scheduler keeps it 03:00 local.
    assert schedule["ScheduleExpression"] == "cron(0 3 * * ? *)"
    assert schedule["ScheduleExpressionTimezone"] == "America/New_York"
    functions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    for function in functions:
        env = function["Environment"]["Variables"]
        assert env["MEMORYBOT_TIMEZONE"] == "America/New_York"  # the night's window and label: the same zone
        assert env["MEMORYBOT_MODEL_PRICES"] == PRICES


def test_every_alarm_notifies_the_topic_when_an_address_is_given(new_york_with_alarm_email):
    resources = new_york_with_alarm_email["Resources"]
    [topic_id] = [k for k, r in resources.items() if r["Type"] == "AWS::SNS::Topic"]
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(alarms) == 26
    for alarm in alarms:
        assert alarm["AlarmActions"] == [{"Ref": topic_id}], alarm["AlarmName"]


def test_every_function_names_itself_for_the_metrics_function_dimension(synth):
    for logical_id, function in synth.of_type("AWS::Lambda::Function").items():
        env = function["Properties"]["Environment"]["Variables"]
        assert logical_id.startswith(env["MEMORYBOT_FUNCTION"] + "Function")
