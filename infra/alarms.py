"""The one kind of alarm the stack raises: anything at all in one period."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct


def on_any(scope: Construct, construct_id: str, description: str, metric: cloudwatch.IMetric) -> cloudwatch.Alarm:
    """At least one in one period; no data (nothing happened) is no alarm."""
    return cloudwatch.Alarm(
        scope,
        construct_id,
        alarm_description=description,
        metric=metric,
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
