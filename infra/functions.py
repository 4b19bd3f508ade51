"""The Lambda functions: runtime, the dependency layer, one function with its own logs and role per
spec (function_specs.py), the workers' asynchronous wiring and their dead-letter queue.

Everything is built on the stack's own scope with the ids it was deployed with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from memorybot import tables

from .function_specs import FunctionSpec
from .grants import grant_function
from .layer import LayerTarget, layer_code
from .parts import ASYNC_RETRIES, Platform, Stores
from .secrets_manager import secret_name
from .settings import StackConfig

# The interaction token lives 15 minutes; a reply older than this can no longer be posted.
REPLY_MAX_EVENT_AGE = Duration.minutes(10)
EXTRACTION_MAX_EVENT_AGE = Duration.hours(1)

RUNTIMES = {
    "3.12": lambda_.Runtime.PYTHON_3_12,
    "3.13": lambda_.Runtime.PYTHON_3_13,
    "3.14": lambda_.Runtime.PYTHON_3_14,
}
ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}
LOG_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def platform(config: StackConfig) -> Platform:
    return Platform(RUNTIMES[config.python_version], ARCHITECTURES[config.architecture], log_retention(config))


def log_retention(config: StackConfig) -> logs.RetentionDays:
    if config.log_retention_days not in LOG_RETENTION:
        raise ValueError(f"log_retention_days must be one of {sorted(LOG_RETENTION)}")
    return LOG_RETENTION[config.log_retention_days]


def dead_letter_queue(scope: Construct) -> sqs.Queue:
    """Failed asynchronous work: the workers' invocations and the nightly schedule's deliveries."""
    return sqs.Queue(
        scope,
        "DeadLetters",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )


def dependencies_layer(scope: Construct, config: StackConfig, platform: Platform) -> lambda_.LayerVersion:
    return lambda_.LayerVersion(
        scope,
        "Dependencies",
        code=layer_code(LayerTarget(config.architecture, config.python_version)),
        compatible_runtimes=[platform.runtime],
        compatible_architectures=[platform.architecture],
        description="memorybot dependencies: Powertools, PyNaCl, httpx (boto3 from the runtime)",
    )


def build_functions(
    stack: Stack,
    specs: Iterable[FunctionSpec],
    *,
    config: StackConfig,
    platform: Platform,
    code: lambda_.Code,
    layer: lambda_.ILayerVersion,
    stores: Stores,
) -> dict[str, lambda_.Function]:
    """One function per spec, by its name, in the specs' order (the template's order)."""
    return {
        spec.name: build_function(stack, spec, config=config, platform=platform, code=code, layer=layer, stores=stores)
        for spec in specs
    }


def build_function(
    stack: Stack,
    spec: FunctionSpec,
    *,
    config: StackConfig,
    platform: Platform,
    code: lambda_.Code,
    layer: lambda_.ILayerVersion,
    stores: Stores,
) -> lambda_.Function:
    """The function with its own log group and role, granted what its spec declares."""
    log_group = logs.LogGroup(
        stack,
        f"{spec.name}Logs",
        retention=platform.log_retention,
        removal_policy=RemovalPolicy.DESTROY,
    )
    # An own role per function: no managed policy, only what this function touches.
    role = iam.Role(
        stack,
        f"{spec.name}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"memorybot {spec.name} function",
    )
    role.add_to_policy(
        iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn])
    )
    env = environment(config, stores.tables)
    env["MEMORYBOT_FUNCTION"] = spec.name  # the metrics' function dimension
    for key in spec.secrets:
        env[f"{key}_SECRET_NAME"] = secret_name(config, key)  # the name, never the value
    function = lambda_.Function(
        stack,
        f"{spec.name}Function",
        description=spec.description,
        runtime=platform.runtime,
        architecture=platform.architecture,
        handler=spec.handler,
        code=code,
        layers=[layer],
        memory_size=spec.memory_mb,
        timeout=spec.timeout,
        environment=env,
        role=role,
        log_group=log_group,
        tracing=lambda_.Tracing.ACTIVE,
    )
    grant_function(stack, config, stores, function, role, spec)
    return function


def environment(c: StackConfig, built_tables: Mapping[str, dynamodb.Table]) -> dict[str, str]:
    """What every function is configured with (memorybot.config.Settings reads it)."""
    env = {
        "POWERTOOLS_SERVICE_NAME": c.service_name,
        "POWERTOOLS_METRICS_NAMESPACE": c.metrics_namespace,
        "POWERTOOLS_LOG_LEVEL": c.log_level,
        # Privacy: events and return values can carry message or memory text; keep them out
        # of logs and traces (log lines carry ids only).
        "POWERTOOLS_LOGGER_LOG_EVENT": "false",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "MEMORYBOT_DECISION_MODEL": c.decision_model,
        "MEMORYBOT_CHAT_MODEL": c.chat_model,
        "BEDROCK_DECISION_MODEL_ID": c.bedrock_decision_model_id,
        "BEDROCK_CHAT_MODEL_ID": c.bedrock_chat_model_id,
        "MEMORYBOT_EMBEDDING_MODEL": c.embedding_model,
        "MEMORYBOT_EMBEDDING_DIMENSIONS": str(c.embedding_dimensions),
        "BEDROCK_EMBEDDING_MODEL_ID": c.bedrock_embedding_model_id,
        "DISCORD_API_BASE": c.discord_api_base,
        "DISCORD_APPLICATION_ID": c.discord_application_id,
        "MEMORYBOT_FETCH_CHANNEL_HISTORY": "true" if c.fetch_channel_history else "false",
        "MEMORYBOT_MEMORY_SCOPE": c.memory_scope,
        "MEMORYBOT_DIARY_LANGUAGE": c.diary_language,
        "MEMORYBOT_TIMEZONE": c.timezone,
        "MEMORYBOT_LEDGER_READ_RETENTION_DAYS": str(c.ledger_read_retention_days),
    }
    env.update(_model_quota_environment(c))
    if c.model_prices:
        env["MEMORYBOT_MODEL_PRICES"] = c.model_prices
    if c.jev_url:
        env["JEV_URL"] = c.jev_url
    for spec in tables.ALL_TABLES:
        env[spec.env_var] = built_tables[spec.logical_name].table_name
    return env


def _model_quota_environment(c: StackConfig) -> dict[str, str]:
    return {
        "MEMORYBOT_MODEL_MAX_IN_FLIGHT": str(c.model_max_in_flight),
        "MEMORYBOT_MODEL_RPM": str(c.model_rpm),
        "MEMORYBOT_MODEL_DEADLINE": str(c.model_deadline_seconds),
        # The workers learn from it when Lambda has no retry left for a job (adapters/attempts.py).
        "MEMORYBOT_ASYNC_RETRIES": str(ASYNC_RETRIES),
    }


def reserve_worker_concurrency(config: StackConfig, functions: Mapping[str, lambda_.Function]) -> None:
    """Caps the workers' instances, so the model calls of all of them stay within a quota;
    invocations above it wait in Lambda's async queue. 0: no reservation (an account's
    default concurrency limit may be too small to reserve any)."""
    for name, reserved in (
        ("Reply", config.reply_reserved_concurrency),
        ("Extraction", config.extraction_reserved_concurrency),
    ):
        if reserved > 0:
            cfn = functions[name].node.default_child
            assert isinstance(cfn, lambda_.CfnFunction)
            cfn.reserved_concurrent_executions = reserved


def wire_async(functions: Mapping[str, lambda_.Function], dead_letters: sqs.IQueue) -> None:
    """Interactions -> Reply -> Extraction, each invoked asynchronously, retried, then dead-lettered;
    and Interactions -> Extraction: "Remember this" and a confirmed forget-all's deletes."""
    f = functions
    _invoke(f["Interactions"], f["Reply"], "REPLY_FUNCTION_NAME")
    _invoke(f["Interactions"], f["Extraction"], "EXTRACTION_FUNCTION_NAME")
    _invoke(f["Reply"], f["Extraction"], "EXTRACTION_FUNCTION_NAME")
    on_failure = destinations.SqsDestination(dead_letters)
    f["Reply"].configure_async_invoke(
        retry_attempts=ASYNC_RETRIES, max_event_age=REPLY_MAX_EVENT_AGE, on_failure=on_failure
    )
    f["Extraction"].configure_async_invoke(
        retry_attempts=ASYNC_RETRIES, max_event_age=EXTRACTION_MAX_EVENT_AGE, on_failure=on_failure
    )


def _invoke(caller: lambda_.Function, callee: lambda_.Function, env_var: str) -> None:
    caller.add_environment(env_var, callee.function_name)
    # The function itself, not its versions: no wildcard.
    caller.add_to_role_policy(iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[callee.function_arn]))
