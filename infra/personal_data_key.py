"""Personal data at rest: the customer-managed key of the personal-data tables, when the operator asks for one.

Built on the stack's own scope: the key's logical id is that of a deployed, retained key (see
tests/infra/test_logical_ids.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from memorybot import tables

from .function_specs import FunctionSpec

# What a function needs of the key follows from its table actions.
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


def personal_data_key(stack: Stack) -> kms.Key:
    """The customer-managed key of the personal-data tables. Its policy lets the account
    administer it (IAM policies in this account, e.g. the deploy role; without that a key can
    lock out everyone) and lets principals use it only through DynamoDB in this region, as far
    as their own IAM policies allow: the function roles get exactly their tables' key actions
    (grant_table_key). Retained with the tables: a deleted key makes them unreadable."""
    account = iam.AccountRootPrincipal()
    via_dynamodb = {"StringEquals": {"kms:ViaService": dynamodb_service(stack), "kms:CallerAccount": stack.account}}
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
        stack,
        "PersonalDataKey",
        description="memorybot personal data at rest (messages, memories, memory log, nightly runs)",
        enable_key_rotation=True,
        policy=policy,
        removal_policy=RemovalPolicy.RETAIN,
    )


def dynamodb_service(stack: Stack) -> str:
    return f"dynamodb.{stack.region}.amazonaws.com"


def table_encryption(key: kms.Key | None, spec: tables.TableSpec) -> dict[str, Any]:
    if key is None or not spec.personal_data:
        return {}  # DynamoDB's AWS-owned key: no cost, no key to manage
    return {"encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED, "encryption_key": key}


def grant_table_key(stack: Stack, role: iam.Role, spec: FunctionSpec, key: kms.Key | None) -> None:
    """The key actions the function's table access needs, used only through DynamoDB: reads
    decrypt; writes also encrypt and generate data keys. None: the tables have no key of ours."""
    if key is None:
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
                resources=[key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": dynamodb_service(stack)}},
            )
        )
