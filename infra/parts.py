"""What one builder hands another: the small parts objects, and the constants more than one builder uses.

A leaf: it imports CDK and nothing of infra, so a builder says in its signature what it is given
and no builder needs the stack (or a sibling builder) to get it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager

# Retries of failed asynchronous work: Lambda's of a worker's invocation (the workers learn it from
# MEMORYBOT_ASYNC_RETRIES) and the nightly schedule's of a start it could not deliver.
ASYNC_RETRIES = 2


@dataclass(frozen=True)
class Platform:
    """Where every function (and the dependency layer) runs, and how long the stack keeps its logs."""

    runtime: lambda_.Runtime
    architecture: lambda_.Architecture
    log_retention: logs.RetentionDays


@dataclass(frozen=True)
class Stores:
    """What a function's spec may grant it: the tables (by logical name) and their key (None: DynamoDB's
    AWS-owned key), the nightly manifest bucket, the secrets (by key of SECRET_KEYS)."""

    tables: Mapping[str, dynamodb.Table]
    personal_data_key: kms.Key | None
    manifests: s3.Bucket
    secrets: Mapping[str, secretsmanager.Secret]
