"""A function's IAM grants, from its spec (function_specs.py): tables, the table key, the nightly
manifests, the ledger redaction, secrets and models. Every grant of a function is made in
``grant_function``, in one place, so a new kind of access is one more step there."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from memorybot import tables
from memorybot.config import inference_profile_base

from .function_specs import LEDGER_REDACTOR, FunctionSpec, TableAccess
from .parts import Stores
from .personal_data_key import grant_table_key
from .settings import StackConfig

# The ledger is append-only: no role may change or remove a row once written.
LEDGER_ACTIONS_ALLOWED = frozenset({"PutItem", "GetItem", "Query"})
# The one exception: the erase function redacts a person's ledger rows (before/after go, the
# skeleton stays). Its UpdateItem is conditioned to name only these attributes (the key, the
# two texts and the flag) and to return nothing; no role may delete a ledger row.
LEDGER_REDACTION_ATTRIBUTES = (
    *(key.name for key in (tables.MEMORY_LOG.partition, tables.MEMORY_LOG.sort) if key),
    *tables.MEMORY_LOG_REDACTED,
)


def grant_function(
    stack: Stack, config: StackConfig, stores: Stores, function: lambda_.Function, role: iam.Role, spec: FunctionSpec
) -> None:
    """Everything the function may touch besides its own logs (the order is the policy's statement order).
    ``stack`` gives the ARNs their partition, region and account."""
    grant_tables(stores.tables, role, spec)
    grant_table_key(stack, role, spec, stores.personal_data_key)
    if spec.manifests:
        function.add_environment("MEMORYBOT_MANIFEST_BUCKET", stores.manifests.bucket_name)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[f"s3:{a}" for a in spec.manifests], resources=[stores.manifests.arn_for_objects("*")]
            )
        )
    if spec.name == LEDGER_REDACTOR:
        grant_ledger_redaction(stores.tables[tables.MEMORY_LOG.logical_name], role)
    for key in spec.secrets:
        role.add_to_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[stores.secrets[key].secret_arn])
        )
    if spec.bedrock and config.bedrock_model_ids:
        role.add_to_policy(
            iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=bedrock_resources(stack, config))
        )


def grant_tables(built_tables: Mapping[str, dynamodb.Table], role: iam.Role, spec: FunctionSpec) -> None:
    """Per table of the spec: its actions in one statement, the indexes it queries in another."""
    by_name = {s.logical_name: s for s in tables.ALL_TABLES}
    for logical_name, grant in spec.tables.items():
        check_table_access(spec.name, by_name[logical_name], grant)
        table_arn = built_tables[logical_name].table_arn
        if grant.actions:
            role.add_to_policy(
                iam.PolicyStatement(actions=[f"dynamodb:{a}" for a in grant.actions], resources=[table_arn])
            )
        if grant.indexes:  # named one by one, never /index/*
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["dynamodb:Query"],
                    resources=[f"{table_arn}/index/{name}" for name in grant.indexes],
                )
            )


def check_table_access(function: str, table: tables.TableSpec, grant: TableAccess) -> None:
    """Refuses (before anything is granted) a spec that would change the append-only ledger (the
    redactor's UpdateItem is granted apart) or query an index the table does not have."""
    if table is tables.MEMORY_LOG and not set(grant.actions) <= LEDGER_ACTIONS_ALLOWED:
        raise ValueError(f"{function}: the ledger is append-only, {sorted(grant.actions)} is not")
    known = {i.name for i in table.local_indexes + table.global_indexes}
    if not set(grant.indexes) <= known:
        raise ValueError(f"{function}: {table.logical_name} has no index {sorted(set(grant.indexes) - known)}")


def grant_ledger_redaction(ledger: dynamodb.Table, role: iam.Role) -> None:
    """The single exception to the append-only ledger (an erasure's redaction), in its own
    statement: UpdateItem that may name only the key, before/after and the redacted flag,
    and returns nothing."""
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["dynamodb:UpdateItem"],
            resources=[ledger.table_arn],
            conditions={
                "ForAllValues:StringEquals": {"dynamodb:Attributes": list(LEDGER_REDACTION_ATTRIBUTES)},
                "StringEqualsIfExists": {"dynamodb:ReturnValues": ["NONE"]},
            },
        )
    )


def cross_region_models(config: StackConfig) -> tuple[str, ...]:
    """Base model ids reached through a cross-region inference profile (granted in every region)."""
    bases = []
    for model_id in config.bedrock_model_ids:
        if base := inference_profile_base(model_id):
            bases.append(base)
    return tuple(dict.fromkeys(bases))


def bedrock_resources(stack: Stack, config: StackConfig) -> list[str]:
    resources: list[str] = []
    for model_id in config.bedrock_model_ids:
        if model_id.startswith("arn:"):
            resources.append(model_id)
            continue
        if base := inference_profile_base(model_id):
            # A cross-region inference profile, and the model in every region it may route to.
            resources.append(
                f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:inference-profile/{model_id}"
            )
            resources.append(f"arn:{stack.partition}:bedrock:*::foundation-model/{base}")
        else:
            resources.append(f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{model_id}")
    return list(dict.fromkeys(resources))
