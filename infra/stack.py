"""The memorybot stack: tables, functions, the dependency layer, the API, the schedule."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from memorybot import tables
from memorybot.config import SECRET_KEYS, inference_profile_base

from . import nightly
from .alarms import on_any
from .code_asset import function_code
from .layer import LayerTarget, layer_code
from .settings import StackConfig

NIGHTLY_SCHEDULE = "cron(0 18 * * ? *)"  # 03:00 JST
# The interaction token lives 15 minutes; a reply older than this can no longer be posted.
REPLY_MAX_EVENT_AGE = Duration.minutes(10)
EXTRACTION_MAX_EVENT_AGE = Duration.hours(1)
NIGHTLY_MAX_EVENT_AGE = Duration.hours(2)
ASYNC_RETRIES = 2

SECRET_SUFFIX = {
    "DISCORD_PUBLIC_KEY": "discord-public-key",
    "DISCORD_BOT_TOKEN": "discord-bot-token",
    "MEMORYBOT_ADMIN_SECRET": "admin-secret",
}

# DynamoDB access per function and table, action by action: exactly the requests the function's
# code makes (tests/infra/test_iam_contract.py records them and fails on any miss or any unused
# grant). A transaction needs the action of each of its items (Put -> PutItem, ...).
# Nothing may Scan, and nothing batches.
# Powertools idempotency on the dedup table: a conditional put (a duplicate gets the stored record
# back in the same answer, so no GetItem), the result stored by update, the record given back by
# delete when the work raised.
IDEMPOTENCY_ACTIONS = ("PutItem", "UpdateItem", "DeleteItem")
# The ledger is append-only: no role may change or remove a row once written.
LEDGER_ACTIONS_ALLOWED = frozenset({"PutItem", "GetItem", "Query"})
# Personal data at rest: what a function needs of the key follows from its table actions.
TABLE_WRITE_ACTIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
KEY_USE_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*")
# The KMS console's key-administrator set: manage, rotate, tag and schedule deletion; no use.
KEY_ADMIN_ACTIONS = (
    "kms:Create*",
    "kms:Describe*",
    "kms:Enable*",
    "kms:List*",
    "kms:Put*",
    "kms:Update*",
    "kms:Revoke*",
    "kms:Disable*",
    "kms:Get*",
    "kms:Delete*",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
)
# The one exception: the erase function redacts a person's ledger rows (before/after go, the
# skeleton stays). Its UpdateItem is conditioned to name only these attributes (the key, the
# two texts and the flag) and to return nothing; no role may delete a ledger row.
LEDGER_REDACTOR = "Erase"
LEDGER_REDACTION_ATTRIBUTES = (
    *(key.name for key in (tables.MEMORY_LOG.partition, tables.MEMORY_LOG.sort) if key),
    *tables.MEMORY_LOG_REDACTED,
)


@dataclass(frozen=True)
class TableAccess:
    actions: tuple[str, ...] = ()  # on the table itself, e.g. "GetItem", "Query"
    indexes: tuple[str, ...] = ()  # the indexes the function queries (dynamodb:Query on each)


def access(*actions: str, indexes: tuple[str, ...] = ()) -> TableAccess:
    return TableAccess(tuple(actions), tuple(indexes))


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # construct id, and the module under memorybot.handlers
    description: str
    memory_mb: int
    timeout: Duration
    tables: dict[str, TableAccess]  # logical table name -> what the function does there
    secrets: tuple[str, ...] = ()  # keys of SECRET_KEYS
    bedrock: bool = False
    entry: str = ""  # "module.function" under memorybot.handlers; default "<name lower>.handler"
    manifests: tuple[str, ...] = ()  # on the nightly manifest bucket's objects: "PutObject", "GetObject"

    @property
    def handler(self) -> str:
        return f"memorybot.handlers.{self.entry or self.name.lower() + '.handler'}"


FUNCTIONS = (
    FunctionSpec(
        "Interactions",
        "Discord interactions: verify, answer within 3 s, hand /chat to the reply worker",
        memory_mb=512,  # more memory is more CPU: a faster cold start
        timeout=Duration.seconds(10),
        tables={
            # /chat stores the message (in a transaction with the person's check); GetItem finds a
            # store whose answer was lost
            "messages": access("PutItem", "GetItem"),
            # ConditionCheckItem: /chat's line is stored only for a person not erased since; GetItem:
            # show says when memory is paused, export includes the switch; UpdateItem: pause and
            # resume (with their ledger row), the forget-all stamp
            "people": access("ConditionCheckItem", "GetItem", "UpdateItem"),
            # /memory show, why and the autocomplete read the profile; forget reads and deletes one,
            # and adds its sources to the owner's forgotten-sources item (UpdateItem, same transaction);
            # export finds the person's scopes (by_user) and reads that item
            "memories": access("GetItem", "DeleteItem", "UpdateItem", indexes=("by_updated", "by_user")),
            # read rows and the forget's row; GetItem finds a forget whose answer was lost;
            # export reads the person's rows (Query) in every scope they have rows in (by_user)
            "memory_log": access("PutItem", "GetItem", "Query", indexes=("by_user",)),
            "dedup": access(*IDEMPOTENCY_ACTIONS),  # a replayed /memory show sends no second DM
        },
        secrets=("DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN"),
    ),
    FunctionSpec(
        "Reply",
        "Reply worker: memories + channel log -> chat model -> Discord followup",
        memory_mb=512,
        timeout=Duration.seconds(90),
        tables={
            # PutItem: the reply, in a transaction with the person's check; GetItem: a store whose answer was lost
            "messages": access("PutItem", "GetItem", "Query"),
            "memories": access(indexes=("by_updated",)),
            "memory_log": access("PutItem"),
            # GetItem: the switch, read alongside the profile; UpdateItem: the first-use notice's
            # claim (and its release when the notice could not be sent); ConditionCheckItem: the reply
            # is stored only for a person not erased since the turn began
            "people": access("GetItem", "UpdateItem", "ConditionCheckItem"),
            "dedup": access(*IDEMPOTENCY_ACTIONS),
        },
        secrets=("DISCORD_BOT_TOKEN",),  # its Discord client carries the token (channel history)
        bedrock=True,
    ),
    FunctionSpec(
        "Extraction",
        "Extraction worker: decide, rewrite and log memory changes after a reply",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_conversation",)),  # the person's own exchange, nothing else
            # GetItem: the sources of the memories the person forgot (one item), never learned from again
            "memories": access("GetItem", "PutItem", "DeleteItem", indexes=("by_updated",)),
            "memory_log": access("PutItem", "GetItem"),
            # GetItem: paused? learned from what? (before any model call); ConditionCheckItem: each
            # write checks the record again in its own transaction
            "people": access("GetItem", "ConditionCheckItem"),
            "dedup": access(*IDEMPOTENCY_ACTIONS),
        },
        bedrock=True,
    ),
    # The nightly run: one thin Lambda per state of the state machine (see NightlyRun below).
    FunctionSpec(
        "NightlyClaim",
        "Nightly step: claim the JST day (03:00 JST)",
        memory_mb=256,
        timeout=Duration.seconds(30),
        tables={"nightly_runs": access("GetItem", "PutItem", "UpdateItem")},  # the claim's transaction and a takeover
        entry="nightly.claim",
    ),
    FunctionSpec(
        "NightlyPlan",
        "Nightly step: the day's speakers and their message ids, written as the map's manifest",
        memory_mb=512,
        timeout=Duration.minutes(2),
        tables={"messages": access(indexes=("by_jst_day",))},
        entry="nightly.plan",
        manifests=("PutObject",),
    ),
    FunctionSpec(
        "NightlySpeaker",
        "Nightly step: one speaker's newest chunks through the extraction path",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_conversation",)),  # the speaker's own lines, by id
            # GetItem: the sources of the speaker's forgotten memories (one item)
            "memories": access("GetItem", "PutItem", "DeleteItem", indexes=("by_updated",)),
            "memory_log": access("PutItem", "GetItem"),  # GetItem: a change whose answer was lost
            "nightly_runs": access("GetItem", "PutItem"),  # the speaker's mark: checked first, written once
            "people": access("GetItem", "ConditionCheckItem"),  # as the extraction worker
        },
        bedrock=True,
        entry="nightly.speaker",
    ),
    FunctionSpec(
        "NightlySpeakerFailed",
        "Nightly step: record a speaker that failed after its retries",
        memory_mb=256,
        timeout=Duration.seconds(30),
        tables={"nightly_runs": access("GetItem", "PutItem")},
        entry="nightly.speaker_failed",
    ),
    FunctionSpec(
        "NightlyReview",
        "Nightly step: the stale review (decay) and the diary",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_jst_day",)),  # the diary's last 30 lines
            # DeleteItem: a decay; UpdateItem: the review mark of a kept record
            "memories": access("DeleteItem", "UpdateItem", indexes=("stale", "review_queue")),
            "memory_log": access("PutItem", "GetItem"),
            "nightly_runs": access("GetItem", "PutItem"),
        },
        bedrock=True,
        entry="nightly.review",
    ),
    FunctionSpec(
        "NightlyFinish",
        "Nightly step: the run record (summary, decayed, model calls, failed speakers)",
        memory_mb=512,
        timeout=Duration.minutes(2),
        tables={
            "memory_log": access(indexes=("by_run",)),  # the run's changes, each once
            "nightly_runs": access("GetItem", "UpdateItem"),
        },
        entry="nightly.finish",
        manifests=("GetObject",),
    ),
    FunctionSpec(
        "Admin",
        "Admin rollback of a nightly run and operator import (admin secret)",
        memory_mb=512,
        timeout=Duration.seconds(29),  # API Gateway's own limit
        tables={
            # rollback: reverts; import: each memory with its marker (PutItem), a dry run's marker check (GetItem)
            "memories": access("GetItem", "PutItem", "DeleteItem"),
            # the rows of both; GetItem finds a change whose answer was lost
            "memory_log": access("PutItem", "GetItem", indexes=("by_run",)),
            "nightly_runs": access("GetItem", "UpdateItem"),  # the lease and the rolled-back mark
            # a restore is checked against the person's later forget-all or erasure, in its transaction
            "people": access("ConditionCheckItem"),
        },
        secrets=("MEMORYBOT_ADMIN_SECRET",),
    ),
    FunctionSpec(
        LEDGER_REDACTOR,
        "Erasure of one person (admin secret): memories, messages, and the text of their ledger rows",
        memory_mb=512,
        timeout=Duration.seconds(29),  # API Gateway's own limit
        tables={
            # every scope (by_user), each profile (by_updated), each memory deleted with its row
            "memories": access("GetItem", "DeleteItem", indexes=("by_updated", "by_user")),
            # UpdateItem: the redaction, granted apart and conditioned (see _grant_ledger_redaction)
            "memory_log": access("PutItem", "GetItem", "Query", indexes=("by_user",)),
            # their own lines (by_author) and the bot's replies to them (by_conversation_of)
            "messages": access("DeleteItem", indexes=("by_author", "by_conversation_of")),
            # GetItem: the switch counts as the person's data; PutItem: the record becomes the erasure's marker
            "people": access("GetItem", "PutItem"),
        },
        secrets=("MEMORYBOT_ADMIN_SECRET",),
    ),
)

_RETENTION = {
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


class MemoryBotStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, config: StackConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.runtime = {
            "3.12": lambda_.Runtime.PYTHON_3_12,
            "3.13": lambda_.Runtime.PYTHON_3_13,
            "3.14": lambda_.Runtime.PYTHON_3_14,
        }[config.python_version]
        self.architecture = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}[
            config.architecture
        ]
        if config.log_retention_days not in _RETENTION:
            raise ValueError(f"log_retention_days must be one of {sorted(_RETENTION)}")
        self.log_retention = _RETENTION[config.log_retention_days]

        self.personal_data_key = self._personal_data_key() if config.encrypt_personal_data else None
        self.tables = {spec.logical_name: self._table(spec) for spec in tables.ALL_TABLES}
        self.manifests = nightly.manifest_bucket(self)
        self.secrets = {key: self._secret(key) for key in SECRET_KEYS}
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=layer_code(LayerTarget(config.architecture, config.python_version)),
            compatible_runtimes=[self.runtime],
            compatible_architectures=[self.architecture],
            description="memorybot dependencies: Powertools, PyNaCl, httpx (boto3 from the runtime)",
        )
        self.code = function_code(config.python_version)  # the package, with bytecode for the runtime
        self.functions = {spec.name: self._function(spec) for spec in FUNCTIONS}
        self._reserve_worker_concurrency()
        self._wire_async()
        self.api = self._api()
        self.nightly_run = nightly.NightlyRun(self, "NightlyRun", self)
        self._schedule()
        self._alarms()

    # -- data -------------------------------------------------------------------------------

    def _table(self, spec: tables.TableSpec) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            _camel(spec.logical_name) + "Table",
            partition_key=_attribute(spec.partition),
            sort_key=_attribute(spec.sort) if spec.sort else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=spec.ttl_attribute,
            removal_policy=RemovalPolicy.RETAIN if spec.retain else RemovalPolicy.DESTROY,
            deletion_protection=spec.retain,
            **self._table_encryption(spec),
        )
        for index in spec.local_indexes:
            assert index.sort, "a local index sorts by another key"
            table.add_local_secondary_index(index_name=index.name, sort_key=_attribute(index.sort))
        for index in spec.global_indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attribute(index.partition),
                sort_key=_attribute(index.sort) if index.sort else None,
            )
        return table

    # -- personal data at rest --------------------------------------------------------------

    def _personal_data_key(self) -> kms.Key:
        """The customer-managed key of the personal-data tables. Its policy lets the account
        administer it (IAM policies in this account, e.g. the deploy role; without that a key can
        lock out everyone) and lets principals use it only through DynamoDB in this region, as far
        as their own IAM policies allow: the function roles get exactly their tables' key actions
        (_grant_table_key). Retained with the tables: a deleted key makes them unreadable."""
        account = iam.AccountRootPrincipal()
        via_dynamodb = {"StringEquals": {"kms:ViaService": self._dynamodb_service(), "kms:CallerAccount": self.account}}
        policy = iam.PolicyDocument(
            statements=[
                iam.PolicyStatement(
                    sid="AdministerByTheAccount",
                    principals=[account],
                    actions=list(KEY_ADMIN_ACTIONS),
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="UseOnlyThroughDynamoDB",
                    principals=[account],
                    actions=list(KEY_USE_ACTIONS),
                    resources=["*"],
                    conditions=via_dynamodb,
                ),
                # DynamoDB watches the key's state (e.g. disabled) to report an inaccessible table.
                iam.PolicyStatement(
                    sid="DynamoDBReadsKeyMetadata",
                    principals=[iam.ServicePrincipal("dynamodb.amazonaws.com")],
                    actions=["kms:Describe*", "kms:Get*", "kms:List*"],
                    resources=["*"],
                ),
            ]
        )
        return kms.Key(
            self,
            "PersonalDataKey",
            description="memorybot personal data at rest (messages, memories, memory log, nightly runs)",
            enable_key_rotation=True,
            policy=policy,
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _dynamodb_service(self) -> str:
        return f"dynamodb.{self.region}.amazonaws.com"

    def _table_encryption(self, spec: tables.TableSpec) -> dict:
        if self.personal_data_key is None or not spec.personal_data:
            return {}  # DynamoDB's AWS-owned key: no cost, no key to manage
        return {"encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED, "encryption_key": self.personal_data_key}

    def _grant_table_key(self, role: iam.Role, spec: FunctionSpec) -> None:
        """The key actions the function's table access needs, used only through DynamoDB: reads
        decrypt; writes also encrypt and generate data keys."""
        if self.personal_data_key is None:
            return
        needed: set[str] = set()
        by_name = {s.logical_name: s for s in tables.ALL_TABLES}
        for logical_name, grant in spec.tables.items():
            if not by_name[logical_name].personal_data:
                continue
            needed.add("kms:Decrypt")
            if set(grant.actions) & TABLE_WRITE_ACTIONS:
                needed.update(("kms:Encrypt", "kms:GenerateDataKey*"))
        if needed:
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=sorted(needed),
                    resources=[self.personal_data_key.key_arn],
                    conditions={"StringEquals": {"kms:ViaService": self._dynamodb_service()}},
                )
            )

    def _secret(self, key: str) -> secretsmanager.Secret:
        # Created with a random placeholder; the operator puts the real value (see the README, "Put the three secrets").
        # The admin secret's random value is usable as it is.
        return secretsmanager.Secret(
            self,
            _camel(SECRET_SUFFIX[key]) + "Secret",
            secret_name=self.secret_name(key),
            description=f"memorybot {key}",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=48, exclude_punctuation=True),
            removal_policy=RemovalPolicy.DESTROY,
        )

    def secret_name(self, key: str) -> str:
        return f"{self.config.secret_prefix}/{SECRET_SUFFIX[key]}"

    # -- functions --------------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        c = self.config
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
            "DISCORD_API_BASE": c.discord_api_base,
            "DISCORD_APPLICATION_ID": c.discord_application_id,
            "MEMORYBOT_FETCH_CHANNEL_HISTORY": "true" if c.fetch_channel_history else "false",
            "MEMORYBOT_MEMORY_SCOPE": c.memory_scope,
            "MEMORYBOT_LEDGER_READ_RETENTION_DAYS": str(c.ledger_read_retention_days),
        }
        env.update(self._model_quota_environment())
        if c.jev_url:
            env["JEV_URL"] = c.jev_url
        for spec in tables.ALL_TABLES:
            env[spec.env_var] = self.tables[spec.logical_name].table_name
        return env

    def _model_quota_environment(self) -> dict[str, str]:
        c = self.config
        return {
            "MEMORYBOT_MODEL_MAX_IN_FLIGHT": str(c.model_max_in_flight),
            "MEMORYBOT_MODEL_RPM": str(c.model_rpm),
            "MEMORYBOT_MODEL_DEADLINE": str(c.model_deadline_seconds),
            # The workers learn from it when Lambda has no retry left for a job (adapters/attempts.py).
            "MEMORYBOT_ASYNC_RETRIES": str(ASYNC_RETRIES),
        }

    def _reserve_worker_concurrency(self) -> None:
        """Caps the workers' instances, so the model calls of all of them stay within a quota;
        invocations above it wait in Lambda's async queue. 0: no reservation (an account's
        default concurrency limit may be too small to reserve any)."""
        for name, reserved in (
            ("Reply", self.config.reply_reserved_concurrency),
            ("Extraction", self.config.extraction_reserved_concurrency),
        ):
            if reserved > 0:
                cfn = self.functions[name].node.default_child
                assert isinstance(cfn, lambda_.CfnFunction)
                cfn.reserved_concurrent_executions = reserved

    def _function(self, spec: FunctionSpec) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{spec.name}Logs",
            retention=_RETENTION[self.config.log_retention_days],
            removal_policy=RemovalPolicy.DESTROY,
        )
        # An own role per function: no managed policy, only what this function touches.
        role = iam.Role(
            self,
            f"{spec.name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"memorybot {spec.name} function",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        env = self._environment()
        for key in spec.secrets:
            env[f"{key}_SECRET_NAME"] = self.secret_name(key)  # the name, never the value
        function = lambda_.Function(
            self,
            f"{spec.name}Function",
            description=spec.description,
            runtime=self.runtime,
            architecture=self.architecture,
            handler=spec.handler,
            code=self.code,
            layers=[self.layer],
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            environment=env,
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
        )
        self._grant_tables(role, spec)
        self._grant_table_key(role, spec)
        if spec.manifests:
            function.add_environment("MEMORYBOT_MANIFEST_BUCKET", self.manifests.bucket_name)
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=[f"s3:{a}" for a in spec.manifests], resources=[self.manifests.arn_for_objects("*")]
                )
            )
        if spec.name == LEDGER_REDACTOR:
            self._grant_ledger_redaction(role)
        for key in spec.secrets:
            role.add_to_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.secrets[key].secret_arn])
            )
        if spec.bedrock and self.config.bedrock_model_ids:
            role.add_to_policy(
                iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=self._bedrock_resources())
            )
        return function

    def _grant_tables(self, role: iam.Role, spec: FunctionSpec) -> None:
        by_name = {s.logical_name: s for s in tables.ALL_TABLES}
        for logical_name, grant in spec.tables.items():
            table_spec, table = by_name[logical_name], self.tables[logical_name]
            if (
                table_spec is tables.MEMORY_LOG and not set(grant.actions) <= LEDGER_ACTIONS_ALLOWED
            ):  # the redactor's UpdateItem is granted apart
                raise ValueError(f"{spec.name}: the ledger is append-only, {sorted(grant.actions)} is not")
            known = {i.name for i in table_spec.local_indexes + table_spec.global_indexes}
            if not set(grant.indexes) <= known:
                raise ValueError(f"{spec.name}: {logical_name} has no index {sorted(set(grant.indexes) - known)}")
            if grant.actions:
                role.add_to_policy(
                    iam.PolicyStatement(actions=[f"dynamodb:{a}" for a in grant.actions], resources=[table.table_arn])
                )
            if grant.indexes:  # named one by one, never /index/*
                role.add_to_policy(
                    iam.PolicyStatement(
                        actions=["dynamodb:Query"],
                        resources=[f"{table.table_arn}/index/{name}" for name in grant.indexes],
                    )
                )

    def _grant_ledger_redaction(self, role: iam.Role) -> None:
        """The single exception to the append-only ledger (an erasure's redaction), in its own
        statement: UpdateItem that may name only the key, before/after and the redacted flag,
        and returns nothing."""
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem"],
                resources=[self.tables[tables.MEMORY_LOG.logical_name].table_arn],
                conditions={
                    "ForAllValues:StringEquals": {"dynamodb:Attributes": list(LEDGER_REDACTION_ATTRIBUTES)},
                    "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
                },
            )
        )

    @property
    def cross_region_models(self) -> tuple[str, ...]:
        """Base model ids reached through a cross-region inference profile (granted in every region)."""
        bases = []
        for model_id in self.config.bedrock_model_ids:
            if base := inference_profile_base(model_id):
                bases.append(base)
        return tuple(dict.fromkeys(bases))

    def _bedrock_resources(self) -> list[str]:
        resources: list[str] = []
        for model_id in self.config.bedrock_model_ids:
            if model_id.startswith("arn:"):
                resources.append(model_id)
                continue
            if base := inference_profile_base(model_id):
                # A cross-region inference profile, and the model in every region it may route to.
                resources.append(
                    f"arn:{self.partition}:bedrock:{self.region}:{self.account}:inference-profile/{model_id}"
                )
                resources.append(f"arn:{self.partition}:bedrock:*::foundation-model/{base}")
            else:
                resources.append(f"arn:{self.partition}:bedrock:{self.region}::foundation-model/{model_id}")
        return list(dict.fromkeys(resources))

    def _wire_async(self) -> None:
        f = self.functions
        self._invoke(f["Interactions"], f["Reply"], "REPLY_FUNCTION_NAME")
        self._invoke(f["Reply"], f["Extraction"], "EXTRACTION_FUNCTION_NAME")
        on_failure = destinations.SqsDestination(self.dead_letters)
        f["Reply"].configure_async_invoke(
            retry_attempts=ASYNC_RETRIES, max_event_age=REPLY_MAX_EVENT_AGE, on_failure=on_failure
        )
        f["Extraction"].configure_async_invoke(
            retry_attempts=ASYNC_RETRIES, max_event_age=EXTRACTION_MAX_EVENT_AGE, on_failure=on_failure
        )

    @staticmethod
    def _invoke(caller: lambda_.Function, callee: lambda_.Function, env_var: str) -> None:
        caller.add_environment(env_var, callee.function_name)
        # The function itself, not its versions: no wildcard.
        caller.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[callee.function_arn])
        )

    # -- entry points -----------------------------------------------------------------------

    def _api(self) -> apigw.RestApi:
        c = self.config
        access_logs = logs.LogGroup(
            self,
            "ApiAccessLogs",
            retention=_RETENTION[c.log_retention_days],
            removal_policy=RemovalPolicy.DESTROY,
        )
        api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=f"{c.stack_name}-api",
            description="memorybot: Discord interactions and the admin routes",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,  # execution logs (errors only) need the account's logging role
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name="prod",
                throttling_rate_limit=c.api_rate_limit,
                throttling_burst_limit=c.api_burst_limit,
                # Errors only and never bodies: bodies carry message text.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                tracing_enabled=True,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=False,
                ),
                method_options={
                    # the admin routes share the tighter limit
                    path: apigw.MethodDeploymentOptions(
                        throttling_rate_limit=c.rollback_rate_limit,
                        throttling_burst_limit=c.rollback_burst_limit,
                    )
                    for path in ("/memory/rollback/POST", "/memory/erase/POST", "/memory/import/POST")
                },
            ),
        )
        # Proxy integrations: the function gets the raw body (and isBase64Encoded) to verify signatures.
        interactions = api.root.add_resource("interactions")
        interactions.add_method("POST", apigw.LambdaIntegration(self.functions["Interactions"], proxy=True))
        memory = api.root.add_resource("memory")
        rollback = memory.add_resource("rollback")
        rollback.add_method("POST", apigw.LambdaIntegration(self.functions["Admin"], proxy=True))
        self._erase_route(api, memory)
        self._import_route(api, memory)
        CfnOutput(
            self,
            "InteractionsUrl",
            value=api.url_for_path("/interactions"),
            description="Paste into the Discord developer portal: Interactions Endpoint URL",
        )
        CfnOutput(
            self,
            "RollbackUrl",
            value=api.url_for_path("/memory/rollback"),
            description="POST with Authorization: Bearer <admin secret> to undo a nightly run",
        )
        return api

    def _erase_route(self, api: apigw.RestApi, memory: apigw.Resource) -> None:
        erase = memory.add_resource("erase")
        erase.add_method("POST", apigw.LambdaIntegration(self.functions[LEDGER_REDACTOR], proxy=True))
        CfnOutput(
            self,
            "EraseUrl",
            value=api.url_for_path("/memory/erase"),
            description='POST {"userId": ...} with Authorization: Bearer <admin secret> to erase one person',
        )

    def _import_route(self, api: apigw.RestApi, memory: apigw.Resource) -> None:
        # The admin function serves it: the same secret, and the same table actions as a rollback.
        imports = memory.add_resource("import")
        imports.add_method("POST", apigw.LambdaIntegration(self.functions["Admin"], proxy=True))
        CfnOutput(
            self,
            "ImportUrl",
            value=api.url_for_path("/memory/import"),
            description='POST {"memories": [...]} or an export file with Authorization: Bearer <admin secret>',
        )

    def _schedule(self) -> None:
        events.Rule(
            self,
            "NightlySchedule",
            description="memorybot nightly consolidation at 03:00 JST",
            schedule=events.Schedule.expression(NIGHTLY_SCHEDULE),
            targets=[
                targets.SfnStateMachine(
                    self.nightly_run.state_machine,
                    # The schedule's own time: a late start still names the same JST day.
                    input=events.RuleTargetInput.from_object({"time": events.EventField.time}),
                    retry_attempts=ASYNC_RETRIES,
                    max_event_age=NIGHTLY_MAX_EVENT_AGE,
                    dead_letter_queue=self.dead_letters,
                )
            ],
        )

    def _alarm_topic(self) -> sns.Topic | None:
        if not self.config.alarm_email:
            return None
        # CloudWatch can publish to an encrypted topic only with a customer key that lets it.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            enable_key_rotation=True,
            description="memorybot alarm topic",
            removal_policy=RemovalPolicy.DESTROY,  # it protects notifications only, no data
            pending_window=Duration.days(7),
        )
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        topic.add_subscription(subscriptions.EmailSubscription(self.config.alarm_email))
        return topic

    def _alarms(self) -> None:
        five_minutes = Duration.minutes(5)
        topic = self._alarm_topic()
        self.alarms: list[cloudwatch.Alarm] = []
        for name, function in self.functions.items():
            for metric_name, metric in (
                ("Errors", function.metric_errors(period=five_minutes, statistic="Sum")),
                ("Throttles", function.metric_throttles(period=five_minutes, statistic="Sum")),
            ):
                self.alarms.append(
                    on_any(
                        self, f"{name}{metric_name}Alarm", f"memorybot {name} function: {metric_name.lower()}", metric
                    )
                )
        dead_letters = on_any(
            self,
            "DeadLettersAlarm",
            "memorybot: failed asynchronous work is waiting in the dead-letter queue",
            self.dead_letters.metric_approximate_number_of_messages_visible(period=five_minutes, statistic="Maximum"),
        )
        self.alarms.append(dead_letters)
        self.alarms.append(self._decisions_lost_alarm())
        self.alarms += self.nightly_run.alarms()
        if topic is not None:
            for alarm in self.alarms:
                alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))

    def _decisions_lost_alarm(self) -> cloudwatch.Alarm:
        """An extraction whose model stayed unavailable through Lambda's every retry wrote nothing."""
        lost = cloudwatch.Metric(
            namespace=self.config.metrics_namespace,
            metric_name="DecisionsLost",
            dimensions_map={"service": self.config.service_name},  # Powertools' default dimension
            period=Duration.minutes(5),
            statistic="Sum",
        )
        return on_any(
            self,
            "DecisionsLostAlarm",
            "memorybot: exchanges not learned because the model stayed throttled or unreachable",
            lost,
        )


def _attribute(key: tables.Key) -> dynamodb.Attribute:
    kind = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}[key.type]
    return dynamodb.Attribute(name=key.name, type=kind)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
