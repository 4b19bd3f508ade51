"""The stack's alarms, all of one kind (anything at all in one period), and the topic they notify.

Built on the stack's own scope (the nightly run's on its construct) with the ids they were deployed with.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .nightly import NightlyRun
from .settings import StackConfig


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


def build_alarms(
    scope: Construct,
    config: StackConfig,
    *,
    functions: Mapping[str, lambda_.IFunction],
    dead_letters: sqs.IQueue,
    nightly_run: NightlyRun,
) -> list[cloudwatch.Alarm]:
    """Every function's errors and throttles, the dead letters, lost decisions and the nightly run's
    failures; each notifies the alarm topic when the operator gave an address."""
    five_minutes = Duration.minutes(5)
    topic = alarm_topic(scope, config)
    alarms: list[cloudwatch.Alarm] = []
    for name, function in functions.items():
        for metric_name, metric in (
            ("Errors", function.metric_errors(period=five_minutes, statistic="Sum")),
            ("Throttles", function.metric_throttles(period=five_minutes, statistic="Sum")),
        ):
            alarms.append(
                on_any(scope, f"{name}{metric_name}Alarm", f"memorybot {name} function: {metric_name.lower()}", metric)
            )
    alarms.append(
        on_any(
            scope,
            "DeadLettersAlarm",
            "memorybot: failed asynchronous work is waiting in the dead-letter queue",
            dead_letters.metric_approximate_number_of_messages_visible(period=five_minutes, statistic="Maximum"),
        )
    )
    alarms.append(decisions_lost_alarm(scope, config))
    alarms += nightly_alarms(nightly_run)
    if topic is not None:
        for alarm in alarms:
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
    return alarms


def alarm_topic(scope: Construct, config: StackConfig) -> sns.Topic | None:
    if not config.alarm_email:
        return None
    # CloudWatch can publish to an encrypted topic only with a customer key that lets it.
    key = kms.Key(
        scope,
        "AlarmTopicKey",
        enable_key_rotation=True,
        description="memorybot alarm topic",
        removal_policy=RemovalPolicy.DESTROY,  # it protects notifications only, no data
        pending_window=Duration.days(7),
    )
    key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
    topic = sns.Topic(scope, "AlarmTopic", master_key=key, enforce_ssl=True)
    topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
    return topic


def decisions_lost_alarm(scope: Construct, config: StackConfig) -> cloudwatch.Alarm:
    """An extraction whose model stayed unavailable through Lambda's every retry wrote nothing."""
    lost = cloudwatch.Metric(
        namespace=config.metrics_namespace,
        metric_name="DecisionsLost",
        dimensions_map={"service": config.service_name},  # Powertools' default dimension
        period=Duration.minutes(5),
        statistic="Sum",
    )
    return on_any(
        scope,
        "DecisionsLostAlarm",
        "memorybot: exchanges not learned because the model stayed throttled or unreachable",
        lost,
    )


def nightly_alarms(run: NightlyRun) -> list[cloudwatch.Alarm]:
    """A failed or timed-out execution of the nightly state machine, on the run's own construct."""
    five_minutes = Duration.minutes(5)
    return [
        on_any(
            run,
            f"Executions{name}Alarm",
            f"memorybot nightly run: execution {name.lower()} (redrive it: see the README)",
            metric,
        )
        for name, metric in (
            ("Failed", run.state_machine.metric_failed(period=five_minutes, statistic="Sum")),
            ("TimedOut", run.state_machine.metric_timed_out(period=five_minutes, statistic="Sum")),
        )
    ]
