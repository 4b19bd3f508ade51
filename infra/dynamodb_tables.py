"""The DynamoDB tables, one per spec in memorybot.tables (keys, indexes, TTL, retention, encryption).

Built on the stack's own scope with the ids they were deployed with: a table whose logical id
changed would be replaced, its data lost (tests/infra/test_logical_ids.py pins them).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms

from memorybot import tables

from .personal_data_key import table_encryption


def build_tables(stack: Stack, key: kms.Key | None) -> dict[str, dynamodb.Table]:
    """Every table, by its logical name."""
    return {spec.logical_name: _table(stack, spec, key) for spec in tables.ALL_TABLES}


def _table(stack: Stack, spec: tables.TableSpec, key: kms.Key | None) -> dynamodb.Table:
    table = dynamodb.Table(
        stack,
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
        **table_encryption(key, spec),
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


def _attribute(key: tables.Key) -> dynamodb.Attribute:
    kind = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}[key.type]
    return dynamodb.Attribute(name=key.name, type=kind)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_"))
