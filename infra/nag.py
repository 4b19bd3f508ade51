"""cdk-nag acknowledgements: each finding this design accepts, on the construct it concerns, with why.

Acknowledgements are scoped to the construct that raises the finding (and for IAM5 to the
exact wildcard), never to the whole stack, so a new resource is checked afresh.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from .stack import MemoryBotStack

LATEST_PYTHON = lambda_.Runtime.PYTHON_3_14.name

REASONS = {
    "AwsSolutions-SMG4": (
        "The Discord public key and bot token are issued by Discord and change only when the operator "
        "resets them in the developer portal; the admin secret is rotated by putting a new value "
        "(README, Deploy). Secrets Manager has no rotation function for either."
    ),
    "AwsSolutions-SQS3": "This queue is the dead-letter queue itself (failed async invocations and schedule deliveries).",
    "AwsSolutions-IAM5[Resource::*]": (
        "X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level "
        "permissions, so the resource must be '*'."
    ),
    "AwsSolutions-L1": (
        "The runtime is pinned by the python_version context value because the dependency layer's binary "
        "wheels (PyNaCl, cffi, wrapt) are built and import-tested for exactly that version; moving to the "
        "newest runtime is a one-line context change once verified."
    ),
    "AwsSolutions-APIG2": (
        "The functions validate every request themselves and must answer 401 (not API Gateway's 400) to a "
        "missing or bad signature header, which Discord probes for; an API Gateway validator would change that."
    ),
    "AwsSolutions-APIG3": (
        "Callers are Discord (every request Ed25519-signed and verified) and one operator; stage and route "
        "throttling bound abuse, and a WAF web ACL would cost more than the whole bot at this scale."
    ),
    "AwsSolutions-APIG4": (
        "Discord cannot present IAM or Cognito credentials: /interactions authenticates each request by its "
        "Ed25519 signature, and /memory/rollback by the admin secret compared in constant time, in the function."
    ),
    "AwsSolutions-COG4": "No end users sign in: see AwsSolutions-APIG4 for how each route authenticates its caller.",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]": (
        "The account-level role API Gateway uses to write execution logs; this AWS managed policy is the "
        "documented way and grants only CloudWatch Logs writes."
    ),
}


PLUGIN = "AwsSolutions"


CROSS_REGION_REASON = (
    "A cross-region inference profile may route a request to the model in any region of its geography, "
    "so the model's ARN is granted in every region; the action is still only bedrock:InvokeModel on this "
    "one model and its profile."
)


def _ack(construct: IConstruct, rule: str, reason: str | None = None) -> None:
    # "<plugin>::<rule>" is the id the synth report asks for; it names the plugin explicitly.
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{PLUGIN}::{rule}", reason=reason or REASONS[rule]))


NIGHTLY_REASONS = {
    "objects": (
        "The manifest bucket's objects are named per run (runs/<id>/speakers.json), so the steps that "
        "write or read them are granted that one action on the bucket's objects; nothing else is in the bucket."
    ),
    "versions": (
        "Step Functions' Lambda task is granted the function and its versions (<arn>:*) by CDK; the state "
        "machine invokes only the unqualified function, and only the nightly step functions."
    ),
    "map": (
        "A Distributed Map starts its children as executions of this very state machine; their ARNs are "
        "only known as this state machine's execution ARNs (execution:<name>:*)."
    ),
    "star": (
        "Vended log delivery (logs:CreateLogDelivery and its kin) and X-Ray (xray:PutTraceSegments ...) "
        "support no resource-level permissions, so the resource must be '*'."
    ),
    "S1": (
        "The manifest bucket holds one object per night of ids only, written and read by this stack's own "
        "roles and expiring after 15 days; CloudTrail records its API calls, and an access-log bucket "
        "would hold more than it."
    ),
}


def _acknowledge_nightly(stack: MemoryBotStack) -> None:
    """The nightly state machine's findings (kept apart, so that merges stay small)."""
    bucket = stack.resolve(stack.manifests.node.default_child.logical_id)
    _ack(stack.manifests, "AwsSolutions-S1", NIGHTLY_REASONS["S1"])
    for name in ("NightlyPlan", "NightlyFinish"):
        _ack(stack.functions[name].role, f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/*]", NIGHTLY_REASONS["objects"])
    run = stack.nightly_run
    _ack(run.role, "AwsSolutions-IAM5[Resource::*]", NIGHTLY_REASONS["star"])
    _ack(run.role, f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::<{bucket}>/*]", NIGHTLY_REASONS["objects"])
    for name, function in stack.functions.items():
        if name.startswith("Nightly"):
            fid = stack.resolve(function.node.default_child.logical_id)
            _ack(run.role, f"AwsSolutions-IAM5[Resource::<{fid}.Arn>:*]", NIGHTLY_REASONS["versions"])
    machine = stack.resolve(run.state_machine.node.default_child.logical_id)
    executions = (
        "arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine}"}}]}}]}}'
    )
    for suffix in (":*", "/*:*"):
        _ack(run.state_machine, f"AwsSolutions-IAM5[Resource::{executions}{suffix}]", NIGHTLY_REASONS["map"])


def acknowledge_findings(stack: MemoryBotStack) -> None:
    _acknowledge_nightly(stack)
    for secret in stack.secrets.values():
        _ack(secret, "AwsSolutions-SMG4")
    _ack(stack.dead_letters, "AwsSolutions-SQS3")
    for function in stack.functions.values():
        if function.role is not None:
            _ack(function.role, "AwsSolutions-IAM5[Resource::*]")
            for base in stack.cross_region_models:
                rule = f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base}]"
                _ack(function.role, rule, CROSS_REGION_REASON)
        if stack.runtime.name != LATEST_PYTHON:
            _ack(function, "AwsSolutions-L1")
    api = stack.api
    _ack(api, "AwsSolutions-APIG2")
    _ack(api.deployment_stage, "AwsSolutions-APIG3")
    for method in api.methods:
        _ack(method, "AwsSolutions-APIG4")
        _ack(method, "AwsSolutions-COG4")
    role = api.node.try_find_child("CloudWatchRole")
    if role is not None:
        _ack(role, "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]")
