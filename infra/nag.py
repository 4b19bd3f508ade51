"""cdk-nag acknowledgements: each finding this design accepts, on the construct it concerns, with why.

Two rule packs run on every synth: AWS Solutions and NIST 800-53 rev 5. Acknowledgements are
scoped to the construct that raises the finding (and for IAM5 to the exact wildcard), never to
the whole stack, so a new resource is checked afresh. The app hands over the parts it acknowledges
findings on, by name (``acknowledge_findings``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Acknowledgment, Stack, Token, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from .grants import cross_region_models
from .nightly import NightlyRun
from .parts import Stores
from .settings import StackConfig

LATEST_PYTHON = lambda_.Runtime.PYTHON_3_14.name

REASONS: dict[str, Any] = {
    "AwsSolutions-SMG4": (
        "The Discord public key and bot token are issued by Discord and change only when the operator "
        "resets them in the developer portal; the admin secret is rotated by putting a new value "
        "(README, Deploy). Secrets Manager has no rotation function for either."
    ),
    "AwsSolutions-SQS3": (
        "This queue is the dead-letter queue itself (failed async invocations and schedule deliveries)."
    ),
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
        "Ed25519 signature, and the admin routes (/memory/rollback, erase, import) by the admin secret compared "
        "in constant time, in the function."
    ),
    "AwsSolutions-COG4": "No end users sign in: see AwsSolutions-APIG4 for how each route authenticates its caller.",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]": (
        "The account-level role API Gateway uses to write execution logs; this AWS managed policy is the "
        "documented way and grants only CloudWatch Logs writes."
    ),
    "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]": (
        "DynamoDB, not the function, picks the GenerateDataKey variant it calls on the caller's behalf; the "
        "statement names the one personal-data key and holds only through DynamoDB (kms:ViaService)."
    ),
    # -- NIST 800-53 rev 5 --
    "NIST.800.53.R5-DynamoDBInBackupPlan": (
        "Every table has point-in-time recovery (35 days of continuous backups, restorable to any second); "
        "an AWS Backup plan would be a second, paid copy. The operator can add the tables to an "
        "organisation-wide plan without changing this stack."
    ),
    "NIST.800.53.R5-SecretsManagerRotationEnabled": (
        "The Discord public key and bot token are issued by Discord and change only when the operator resets "
        "them in the developer portal; the admin secret is rotated by putting a new value (README, Deploy). "
        "Secrets Manager has no rotation function for either."
    ),
    "NIST.800.53.R5-SecretsManagerUsingKMSKey": (
        "The secrets are Discord credentials and the admin secret, not personal data; the AWS managed key "
        "aws/secretsmanager is usable only through Secrets Manager in this account, and each function may "
        "read only its own secrets."
    ),
    "NIST.800.53.R5-CloudWatchLogGroupEncrypted": (
        "CloudWatch Logs encrypts every log group at rest; log lines carry ids only, never message or memory "
        "text (the privacy end-to-end test checks every line), so a customer-managed key would protect no "
        "personal text and cost a key and its requests."
    ),
    "NIST.800.53.R5-IAMNoInlinePolicy": (
        "Each function has its own role whose one policy is written for that function alone and proven "
        "against its real requests (IAM contract test); a managed policy could be attached to other principals, "
        "which is what this design avoids."
    ),
    "NIST.800.53.R5-LambdaConcurrency": {
        "Interactions": (
            "Bounded by the API stage's throttling (api_rate_limit, api_burst_limit), which answers 429 above "
            "it; a reservation would take from the account's unreserved pool for no further bound."
        ),
        "Reply": (
            "Opt-in: reply_reserved_concurrency caps it (0 by default, because a new account's concurrency "
            "limit may leave nothing to reserve); invocations above a cap wait in Lambda's async queue."
        ),
        "Extraction": (
            "Opt-in: extraction_reserved_concurrency caps it (0 by default, because a new account's concurrency "
            "limit may leave nothing to reserve); invocations above a cap wait in Lambda's async queue."
        ),
        "Nightly": (
            "A step of the nightly state machine, started once a day by the schedule; the map's MaxConcurrency "
            "(nightly_max_concurrency) bounds the speaker steps and the others run one at a time, so a "
            "reservation would only take from the account's unreserved pool."
        ),
        "Admin": (
            "Bounded by the admin routes' own throttling (rollback_rate_limit, rollback_burst_limit) and the "
            "admin secret; a reservation would take from the account's unreserved pool for no further bound."
        ),
    },
    "NIST.800.53.R5-LambdaDLQ": {
        "sync": (
            "Invoked synchronously by API Gateway: the caller gets the error and a dead-letter queue, which "
            "applies only to asynchronous invocations, would never receive anything."
        ),
        "async": (
            "Failed asynchronous invocations go to the DeadLetters queue through the on-failure destination "
            "(EventInvokeConfig), which records the error and the request as a dead-letter queue would not."
        ),
        "state machine": (
            "Invoked synchronously by the nightly state machine: its Retry and Catch handle a failure, a failed "
            "execution is alarmed and can be redriven, and a dead-letter queue would never receive anything."
        ),
    },
    "NIST.800.53.R5-LambdaInsideVPC": (
        "The functions call public APIs (Discord, Bedrock) and AWS services over TLS; a VPC would need NAT "
        "gateways (about $32 a month each, far more than the bot costs) and add cold-start time, and they "
        "expose no network endpoint of their own."
    ),
    "NIST.800.53.R5-APIGWAssociatedWithWAF": (
        "Callers are Discord (every request Ed25519-signed and verified) and one operator; stage and route "
        "throttling bound abuse, and a WAF web ACL (from $5 a month plus rules and requests) would cost more "
        "than the whole bot at this scale."
    ),
    "NIST.800.53.R5-APIGWCacheEnabledAndEncrypted": (
        "Every request is a unique, signed POST whose answer belongs to one person: a cache would never hit, "
        "could only risk serving one person's answer to another, and is billed by the hour."
    ),
    "NIST.800.53.R5-APIGWSSLEnabled": (
        "A client certificate authenticates API Gateway to an HTTP backend; both routes are Lambda proxy "
        "integrations, invoked through the Lambda API with the integration's IAM permission."
    ),
    "NIST.800.53.R5-CloudWatchAlarmAction": (
        "No address to notify is configured (alarm_email is empty); the alarms still record state in "
        "CloudWatch. With alarm_email set, every alarm notifies it and this acknowledgement is not made."
    ),
}


CROSS_REGION_REASON = (
    "A cross-region inference profile may route a request to the model in any region of its geography, "
    "so the model's ARN is granted in every region; the action is still only bedrock:InvokeModel on this "
    "one model and its profile."
)


ASYNC_FUNCTIONS = ("Reply", "Extraction")  # invoked asynchronously, with an on-failure destination


def plugin_of(rule: str) -> str:
    """ "AwsSolutions-L1" -> "AwsSolutions"; "NIST.800.53.R5-LambdaDLQ" -> "NIST.800.53.R5"."""
    return rule.split("-", 1)[0]


def _cfn(construct: IConstruct) -> Any:
    """The L1 resource behind an L2 construct (every construct acknowledged here has one)."""
    child = construct.node.default_child
    assert child is not None, construct.node.path
    return child


def _role(function: lambda_.Function) -> iam.IRole:
    assert function.role is not None, function.node.path
    return function.role


def _ack(construct: IConstruct | None, rule: str, reason: str | None = None) -> None:
    assert construct is not None, rule
    # "<plugin>::<rule>" is the id the synth report asks for; it names the plugin explicitly.
    reason = reason or REASONS[rule]
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{plugin_of(rule)}::{rule}", reason=reason))


NIGHTLY_REASONS = {
    "schedule": (
        "The nightly schedule's own role: one policy written for it alone (start this state machine, leave "
        "an undeliverable start in the dead-letter queue); a managed policy could be attached elsewhere."
    ),
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
    "copies": (
        "The manifest is a plan of ids written once per night, expiring after 15 days, and rewritten by the "
        "plan step whenever a run is redriven: versions or a replica in another region would keep copies "
        "that recover nothing."
    ),
    "sse": (
        "The manifest holds ids only (owner keys and message ids), never text; S3's own encryption (SSE-S3), "
        "SSL-only access and blocked public access protect it, and a KMS key would add cost for no data."
    ),
}


def arn_region_and_account(stack: Stack) -> tuple[str, str]:
    """How cdk-nag prints this stack's region and account inside an ARN.

    Environment-agnostic (plain synth) they are the pseudo parameters, which cdk-nag writes
    "<AWS::Region>" and "<AWS::AccountId>"; with a concrete environment (``cdk deploy`` sets
    CDK_DEFAULT_ACCOUNT/REGION from the credentials) CDK writes the literal values into the ARN.
    An acknowledgement id must match exactly, so it is built from the stack's own environment.
    """
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    return region, account


def _acknowledge_nightly(
    stack: Stack, manifests: s3.Bucket, functions: Mapping[str, lambda_.Function], run: NightlyRun
) -> None:
    """The nightly state machine's findings (kept apart, so that merges stay small)."""
    bucket = stack.resolve(_cfn(manifests).logical_id)
    _ack(manifests, "AwsSolutions-S1", NIGHTLY_REASONS["S1"])
    for name in ("NightlyPlan", "NightlyFinish"):
        _ack(functions[name].role, f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/*]", NIGHTLY_REASONS["objects"])
    _ack(run.role, "AwsSolutions-IAM5[Resource::*]", NIGHTLY_REASONS["star"])
    _ack(run.role, f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::<{bucket}>/*]", NIGHTLY_REASONS["objects"])
    for name, function in functions.items():
        if name.startswith("Nightly"):
            fid = stack.resolve(_cfn(function).logical_id)
            _ack(run.role, f"AwsSolutions-IAM5[Resource::<{fid}.Arn>:*]", NIGHTLY_REASONS["versions"])
    machine = stack.resolve(_cfn(run.state_machine).logical_id)
    region, account = arn_region_and_account(stack)
    executions = (
        f"arn:<AWS::Partition>:states:{region}:{account}:execution:"
        f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine}"}}]}}]}}'
    )
    for suffix in (":*", "/*:*"):
        _ack(run.state_machine, f"AwsSolutions-IAM5[Resource::{executions}{suffix}]", NIGHTLY_REASONS["map"])
    # NIST 800-53 rev 5, as for the rest of the stack.
    _ack(manifests, "NIST.800.53.R5-S3BucketLoggingEnabled", NIGHTLY_REASONS["S1"])
    for rule in ("S3BucketReplicationEnabled", "S3BucketVersioningEnabled"):
        _ack(manifests, f"NIST.800.53.R5-{rule}", NIGHTLY_REASONS["copies"])
    _ack(manifests, "NIST.800.53.R5-S3DefaultEncryptionKMS", NIGHTLY_REASONS["sse"])
    _ack(run.log_group, "NIST.800.53.R5-CloudWatchLogGroupEncrypted")
    for policy in (c for c in run.node.find_all() if isinstance(c, iam.Policy)):
        _ack(policy, "NIST.800.53.R5-IAMNoInlinePolicy")
    schedule_role = stack.node.try_find_child("NightlyScheduleRole")
    if schedule_role is not None:
        _ack(
            schedule_role.node.find_child("DefaultPolicy"),
            "NIST.800.53.R5-IAMNoInlinePolicy",
            NIGHTLY_REASONS["schedule"],
        )


def acknowledge_findings(
    stack: Stack,
    config: StackConfig,
    *,
    runtime: lambda_.Runtime,
    stores: Stores,
    dead_letters: sqs.Queue,
    functions: Mapping[str, lambda_.Function],
    api: apigw.RestApi,
    api_access_logs: logs.LogGroup,
    nightly_run: NightlyRun,
    alarms: Sequence[cloudwatch.AlarmBase],
) -> None:
    """Every finding the design accepts, on the part that raises it (``stack`` only resolves ids and
    says how ARNs name its region and account)."""
    _acknowledge_nightly(stack, stores.manifests, functions, nightly_run)
    for secret in stores.secrets.values():
        _ack(secret, "AwsSolutions-SMG4")
    _ack(dead_letters, "AwsSolutions-SQS3")
    for function in functions.values():
        if function.role is not None:
            _ack(function.role, "AwsSolutions-IAM5[Resource::*]")
            for base in cross_region_models(config):
                rule = f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base}]"
                _ack(function.role, rule, CROSS_REGION_REASON)
        if runtime.name != LATEST_PYTHON:
            _ack(function, "AwsSolutions-L1")
    _ack(api, "AwsSolutions-APIG2")
    _ack(api.deployment_stage, "AwsSolutions-APIG3")
    for method in api.methods:
        _ack(method, "AwsSolutions-APIG4")
        _ack(method, "AwsSolutions-COG4")
    role = api.node.try_find_child("CloudWatchRole")
    if role is not None:
        _ack(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        )
    if stores.personal_data_key is not None:
        for function in functions.values():
            _ack(_role(function), "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]")
    acknowledge_nist_findings(
        config, stores=stores, functions=functions, api=api, api_access_logs=api_access_logs, alarms=alarms
    )


def acknowledge_nist_findings(
    config: StackConfig,
    *,
    stores: Stores,
    functions: Mapping[str, lambda_.Function],
    api: apigw.RestApi,
    api_access_logs: logs.LogGroup,
    alarms: Sequence[cloudwatch.AlarmBase],
) -> None:
    """NIST 800-53 rev 5: what the stack does not fix, each on its resource (see REASONS)."""
    for table in stores.tables.values():
        _ack(table, "NIST.800.53.R5-DynamoDBInBackupPlan")
    for secret in stores.secrets.values():
        _ack(secret, "NIST.800.53.R5-SecretsManagerRotationEnabled")
        _ack(secret, "NIST.800.53.R5-SecretsManagerUsingKMSKey")
    for log_group in [f.log_group for f in functions.values()] + [api_access_logs]:
        _ack(log_group, "NIST.800.53.R5-CloudWatchLogGroupEncrypted")
    _acknowledge_nist_functions(functions)
    stage = api.deployment_stage
    for rule in ("APIGWAssociatedWithWAF", "APIGWCacheEnabledAndEncrypted", "APIGWSSLEnabled"):
        _ack(stage, f"NIST.800.53.R5-{rule}")
    if not config.alarm_email:
        for alarm in alarms:
            _ack(alarm, "NIST.800.53.R5-CloudWatchAlarmAction")


def _acknowledge_nist_functions(functions: Mapping[str, lambda_.Function]) -> None:
    """Each function's inline policy, concurrency, dead letters and VPC, with the reason of how it is invoked."""
    for name, function in functions.items():
        _ack(_role(function).node.find_child("DefaultPolicy"), "NIST.800.53.R5-IAMNoInlinePolicy")
        # Every step of the nightly state machine shares one reason per rule.
        # The admin routes (rollback and import, erase) share theirs.
        kind = "Nightly" if name.startswith("Nightly") else "Admin" if name == "Erase" else name
        if _cfn(function).reserved_concurrent_executions is None:
            _ack(function, "NIST.800.53.R5-LambdaConcurrency", REASONS["NIST.800.53.R5-LambdaConcurrency"][kind])
        invoked = "state machine" if kind == "Nightly" else "async" if name in ASYNC_FUNCTIONS else "sync"
        dlq = REASONS["NIST.800.53.R5-LambdaDLQ"][invoked]
        _ack(function, "NIST.800.53.R5-LambdaDLQ", dlq)
        _ack(function, "NIST.800.53.R5-LambdaInsideVPC")
