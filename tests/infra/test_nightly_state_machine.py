"""The nightly state machine's definition, read from the synthesized template. The same definition
is executed (its Distributed Map included) by moto's Step Functions interpreter over the real step
handlers in tests/infra/test_nightly_execution.py; the local stack runs the same steps in process
(POST /local/nightly, see tests/e2e/test_nightly_e2e.py)."""

from __future__ import annotations

import json

import pytest

from infra.nightly import MANIFEST_EXPIRY
from infra.settings import StackConfig
from memorybot.core.night import nightly_steps
from memorybot.core.record.domain import NIGHTLY_EXECUTION_TIMEOUT
from synth_shapes import alarm_metric


def _resolve(part, synth) -> str:
    """A Fn::Join part of the definition: literal text, or a marker naming the resource it refers to."""
    if isinstance(part, str):
        return part
    if "Fn::GetAtt" in part:
        return f"@{part['Fn::GetAtt'][0]}"
    if "Ref" in part:
        return f"@{part['Ref']}"
    return "@other"


@pytest.fixture(scope="module")
def machine(synth) -> tuple[dict, dict]:
    [(machine_id, resource)] = synth.of_type("AWS::StepFunctions::StateMachine").items()
    separator, parts = resource["Properties"]["DefinitionString"]["Fn::Join"]
    definition = json.loads(separator.join(_resolve(p, synth) for p in parts))
    return resource["Properties"], definition


def _function_of(synth, state: dict) -> str:
    target = state["Resource"].removeprefix("@")
    return next(k for k, v in synth.resources.items() if k == target and v["Type"] == "AWS::Lambda::Function")


def test_the_steps_in_order_each_one_lambda(synth, machine):
    _, definition = machine
    states = definition["States"]
    assert definition["StartAt"] == "ClaimDay"
    assert states["ClaimDay"]["Next"] == "Claimed?"
    [choice] = states["Claimed?"]["Choices"]
    assert choice == {"Variable": "$.status", "StringEquals": "claimed", "Next": "PlanSpeakers"}
    assert states[states["Claimed?"]["Default"]]["Type"] == "Succeed"
    assert states["PlanSpeakers"]["Next"] == "Speakers"
    assert states["Speakers"]["Next"] == "ReviewAndDiary"
    assert states["ReviewAndDiary"]["Next"] == "FinishRun"
    assert states["FinishRun"]["End"] is True
    assert definition["TimeoutSeconds"] == NIGHTLY_EXECUTION_TIMEOUT.total_seconds()
    for name, function in (
        ("ClaimDay", "NightlyClaim"),
        ("PlanSpeakers", "NightlyPlan"),
        ("ReviewAndDiary", "NightlyReview"),
        ("FinishRun", "NightlyFinish"),
    ):
        assert _function_of(synth, states[name]).startswith(f"{function}Function"), name
    assert states["ClaimDay"]["Parameters"] == {"time.$": "$.time"}


def test_a_distributed_map_over_the_s3_manifest_with_the_configured_concurrency(synth, machine):
    _, definition = machine
    speakers = definition["States"]["Speakers"]
    assert speakers["Type"] == "Map"
    assert speakers["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    reader = speakers["ItemReader"]
    assert reader["Resource"].endswith(":states:::s3:getObject") and reader["ReaderConfig"]["InputType"] == "JSON"
    [bucket_id] = synth.of_type("AWS::S3::Bucket")
    assert reader["Parameters"] == {"Bucket": f"@{bucket_id}", "Key.$": "$.manifest"}
    assert speakers["MaxConcurrency"] == StackConfig().nightly_max_concurrency == 10
    assert speakers["ToleratedFailurePercentage"] == StackConfig().nightly_tolerated_failure_percentage
    assert speakers["ResultPath"] is None  # results live in the speakers' marks, not in the state
    assert speakers["ItemSelector"] == {
        "run_id.$": "$.run_id",
        "scope.$": "$$.Map.Item.Value.scope",
        "user_id.$": "$$.Map.Item.Value.user_id",
        "messages.$": "$$.Map.Item.Value.messages",
    }


def test_a_speaker_is_retried_with_backoff_on_throttling_then_recorded_failed(synth, machine):
    _, definition = machine
    processor = definition["States"]["Speakers"]["ItemProcessor"]
    child = processor["States"][processor["StartAt"]]
    assert _function_of(synth, child).startswith("NightlySpeakerFunction")
    refused, throttled, other = child["Retry"]
    assert refused == {"ErrorEquals": ["BadJob"], "MaxAttempts": 0}  # a payload that cannot parse is not retried
    assert set(throttled["ErrorEquals"]) == {"ModelUnavailable", "Lambda.TooManyRequestsException"}
    assert throttled["BackoffRate"] == 2 and throttled["IntervalSeconds"] >= 30 and throttled["MaxAttempts"] >= 3
    assert throttled["JitterStrategy"] == "FULL" and throttled["MaxDelaySeconds"] == 300
    assert other["ErrorEquals"] == ["States.ALL"] and other["MaxAttempts"] >= 1
    [catch] = child["Catch"]
    assert catch == {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordSpeakerFailed"}
    failed = processor["States"]["RecordSpeakerFailed"]
    assert failed["End"] is True and _function_of(synth, failed).startswith("NightlySpeakerFailedFunction")


@pytest.mark.parametrize(
    ("state", "retry"),
    [
        ("ClaimDay", nightly_steps.CLAIM_RETRY),
        ("PlanSpeakers", nightly_steps.PLAN_RETRY),
        ("ConsolidateSpeaker", nightly_steps.SPEAKER_RETRY),
        ("RecordSpeakerFailed", nightly_steps.SPEAKER_FAILED_RETRY),
        ("ReviewAndDiary", nightly_steps.REVIEW_RETRY),
        ("FinishRun", nightly_steps.FINISH_RETRY),
    ],
)
def test_each_states_retry_is_the_one_the_in_process_run_follows(machine, state, retry):
    _, definition = machine
    states = {**definition["States"], **definition["States"]["Speakers"]["ItemProcessor"]["States"]}
    assert states[state]["Retry"] == [
        {"ErrorEquals": ["BadJob"], "MaxAttempts": 0},
        {
            "ErrorEquals": ["ModelUnavailable", "Lambda.TooManyRequestsException"],
            "IntervalSeconds": retry.throttle_interval,
            "MaxAttempts": retry.throttled,
            "BackoffRate": retry.backoff_rate,
            "MaxDelaySeconds": retry.throttle_max_delay,
            "JitterStrategy": "FULL",
        },
        {
            "ErrorEquals": ["States.ALL"],
            "IntervalSeconds": retry.other_interval,
            "MaxAttempts": retry.other,
            "BackoffRate": retry.backoff_rate,
        },
    ]


def test_logging_tracing_and_its_own_role(synth, machine):
    props, _ = machine
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == "ALL" and logging["IncludeExecutionData"] is False
    assert props["TracingConfiguration"] == {"Enabled": True}
    role = synth.resources[props["RoleArn"]["Fn::GetAtt"][0]]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "states.amazonaws.com"
    }
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    invoked = set()
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "lambda:InvokeFunction" in actions:
                invoked |= {
                    r["Fn::GetAtt"][0] for r in statement["Resource"] if isinstance(r, dict) and "Fn::GetAtt" in r
                }
            assert not any(a.startswith("dynamodb:") or a == "*" for a in actions)
    assert invoked and all(i.startswith("Nightly") for i in invoked)  # only the nightly steps


def test_alarms_on_failed_and_timed_out_executions(synth):
    [machine_id] = synth.of_type("AWS::StepFunctions::StateMachine")
    watched = set()
    for alarm in synth.of_type("AWS::CloudWatch::Alarm").values():
        metric = alarm_metric(alarm["Properties"])
        if metric["Namespace"] == "AWS/States":
            [dimension] = metric["Dimensions"]
            assert dimension["Value"] == {"Ref": machine_id}
            watched.add(metric["MetricName"])
    assert watched == {"ExecutionsFailed", "ExecutionsTimedOut"}


def test_the_manifest_bucket_is_private_encrypted_ssl_only_and_expires(synth):
    [(bucket_id, bucket)] = synth.of_type("AWS::S3::Bucket").items()
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    [sse] = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    [rule] = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == MANIFEST_EXPIRY.to_days()
    [policy] = [
        p for p in synth.of_type("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    [deny] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_only_the_plan_writes_and_only_the_finish_reads_the_manifest(synth):
    [bucket_id] = synth.of_type("AWS::S3::Bucket")
    from test_stack import FUNCTION_NAMES, function, policy_statements

    for name in FUNCTION_NAMES:
        s3 = {
            a
            for st in policy_statements(synth, name)
            for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
            if a.startswith("s3:")
        }
        assert s3 == {"NightlyPlan": {"s3:PutObject"}, "NightlyFinish": {"s3:GetObject"}}.get(name, set()), name
        env = function(synth, name)["Environment"]["Variables"]
        assert ("MEMORYBOT_MANIFEST_BUCKET" in env) == (name in ("NightlyPlan", "NightlyFinish"))
