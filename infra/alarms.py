"""The operator's cockpit: one CloudWatch dashboard and every alarm, through cdk-monitoring-constructs,
and the topic the alarms notify.

cdk-monitoring-constructs (cdklabs' jsii library) builds each resource's widgets and alarms from
one call per resource (Lambda, DynamoDB, Step Functions, API Gateway, SQS): the errors,
throttles, latency and capacity an operator reads, laid out the same way for each. The alarms
are the stack's as before, all of one kind — at least one in one five-minute period, no data
(nothing happened) no alarm — made through the library's thresholds with ``>=`` 1, so each is
the alarm it was. The bot's own metrics (memorybot.core.record.metrics, emitted in the embedded metric
format) are summed across their dimensions with CloudWatch search expressions: per day for
turns, memories, tokens and cost, hourly percentiles for the models' latency.
"""

from __future__ import annotations

from collections.abc import Mapping

import cdk_monitoring_constructs as monitoring
from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from memorybot.core.record import metrics as names

from .nightly import NightlyRun
from .settings import StackConfig

FIVE_MINUTES = Duration.minutes(5)
ONE_DAY = Duration.days(1)
ONE_HOUR = Duration.hours(1)
AT_LEAST_ONE = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
NO_DATA_IS_FINE = cloudwatch.TreatMissingData.NOT_BREACHING
DASHBOARD_RANGE = Duration.days(14)


def _any(description: str) -> dict:
    """What every alarm shares: at least one in a period, missing data not breaching."""
    return {
        "comparison_operator_override": AT_LEAST_ONE,
        "treat_missing_data_override": NO_DATA_IS_FINE,
        "alarm_description_override": description,
    }


def build_alarms(
    scope: Construct,
    config: StackConfig,
    *,
    functions: Mapping[str, lambda_.IFunction],
    dead_letters: sqs.IQueue,
    nightly_run: NightlyRun,
    tables: Mapping[str, dynamodb.ITable] | None = None,
    api: apigw.RestApi | None = None,
) -> list[cloudwatch.AlarmBase]:
    """The dashboard and the alarms: every function's errors and throttles, the dead letters, lost
    decisions and the nightly run's failures; each notifies the alarm topic when the operator
    gave an address. The dashboard's URL is the ``DashboardUrl`` output."""
    topic = alarm_topic(scope, config)
    action = monitoring.SnsAlarmActionStrategy(on_alarm_topic=topic) if topic else monitoring.NoopAlarmActionStrategy()
    dashboard_name = f"{config.stack_name}-cockpit"
    facade = monitoring.MonitoringFacade(
        scope,
        "Monitoring",
        alarm_factory_defaults=monitoring.AlarmFactoryDefaults(
            actions_enabled=True,
            alarm_name_prefix=config.stack_name,
            action=action,
            evaluation_periods=1,
            datapoints_to_alarm=1,
        ),
        metric_factory_defaults=monitoring.MetricFactoryDefaults(namespace=config.metrics_namespace),
        dashboard_factory=monitoring.DefaultDashboardFactory(
            scope,
            "Dashboards",
            dashboard_name_prefix=dashboard_name,
            create_dashboard=True,
            create_summary_dashboard=False,
            create_alarm_dashboard=False,
            detail_dashboard_range=DASHBOARD_RANGE,
            # The bot's daily sums keep their one-day period over the two weeks shown.
            detail_dashboard_period_override=cloudwatch.PeriodOverride.INHERIT,
        ),
    )
    facade.add_large_header(f"memorybot ({config.stack_name}): the day's turns, memories, models and nights")
    bot_metrics(facade, config)
    for name, function in functions.items():
        facade.monitor_lambda_function(
            lambda_function=function,
            human_readable_name=f"{name} function",
            alarm_friendly_name=name,
            add_fault_count_alarm={
                "Errors": monitoring.ErrorCountThreshold(
                    max_error_count=1, **_any(f"memorybot {name} function: errors")
                )
            },
            add_throttles_count_alarm={
                "Throttles": monitoring.ErrorCountThreshold(
                    max_error_count=1, **_any(f"memorybot {name} function: throttles")
                )
            },
        )
    facade.monitor_sqs_queue(
        queue=dead_letters,
        human_readable_name="Dead letters (failed asynchronous work)",
        alarm_friendly_name="DeadLetters",
        add_queue_max_size_alarm={
            "Waiting": monitoring.MaxMessageCountThreshold(
                max_message_count=1,
                **_any("memorybot: failed asynchronous work is waiting in the dead-letter queue"),
            )
        },
    )
    facade.monitor_step_function(
        state_machine=nightly_run.state_machine,
        human_readable_name="Nightly run (state machine)",
        alarm_friendly_name="Nightly",
        add_failed_execution_count_alarm={
            "Failed": monitoring.ErrorCountThreshold(
                max_error_count=1, **_any("memorybot nightly run: execution failed (redrive it: see the README)")
            )
        },
        add_timed_out_execution_count_alarm={
            "TimedOut": monitoring.ErrorCountThreshold(
                max_error_count=1, **_any("memorybot nightly run: execution timed out (redrive it: see the README)")
            )
        },
    )
    if api is not None:
        facade.monitor_api_gateway(
            api=api, api_stage=api.deployment_stage.stage_name, human_readable_name="Discord and admin API"
        )
    for name, table in (tables or {}).items():
        facade.monitor_dynamo_table(table=table, human_readable_name=f"{name} table")
    CfnOutput(
        scope,
        "DashboardUrl",
        value=f"https://{Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region={Aws.REGION}"
        f"#dashboards:name={dashboard_name}",
        description="The operator's CloudWatch dashboard (docs/operations.md)",
    )
    return [alarm.alarm for alarm in facade.created_alarms()]


def _search(config: StackConfig, metric: str, statistic: str, period: Duration) -> str:
    """A search over every dimension set the bot emits ``metric`` with (function; purpose and model)."""
    terms = f'Namespace="{config.metrics_namespace}" MetricName="{metric}"'
    return f"SEARCH('{terms}', '{statistic}', {int(period.to_seconds())})"


def _total(config: StackConfig, metric: str, label: str, period: Duration = ONE_DAY) -> cloudwatch.MathExpression:
    """``metric`` summed over its dimensions, one point per ``period``."""
    return cloudwatch.MathExpression(
        expression=f"SUM({_search(config, metric, 'Sum', period)})",
        using_metrics={},
        label=label,
        period=period,
    )


def _each(config: StackConfig, metric: str, statistic: str, label: str, period: Duration) -> cloudwatch.MathExpression:
    """``metric`` per dimension set (a line per purpose and model)."""
    return cloudwatch.MathExpression(
        expression=_search(config, metric, statistic, period),
        using_metrics={},
        label=label,
        period=period,
    )


def bot_metrics(facade: monitoring.MonitoringFacade, config: StackConfig) -> None:
    """The bot's own metrics (docs/operations.md, "Every metric"), and the one alarm on them."""
    c = config
    lost = cloudwatch.Metric(
        namespace=c.metrics_namespace,
        metric_name=names.DECISIONS_LOST,
        dimensions_map={"service": c.service_name},  # Powertools' default dimension: emitted so
        period=FIVE_MINUTES,
        statistic="Sum",
        label="Decisions lost",
    )
    groups = [
        monitoring.CustomMetricGroup(
            title="Turns a day and what learning made of them",
            metrics=[
                _total(c, names.TURNS, "Turns"),
                *(_total(c, metric, outcome) for outcome, metric in names.TURN_OUTCOMES.items()),
            ],
        ),
        monitoring.CustomMetricGroup(
            title="Memories a day",
            metrics=[
                _total(c, metric, label)
                for metric, label in (
                    (names.MEMORIES_ADDED, "added"),
                    (names.MEMORIES_UPDATED, "updated"),
                    (names.MEMORIES_DELETED, "deleted"),
                    (names.MEMORIES_DECAYED, "decayed"),
                    (names.MEMORIES_FORGOTTEN, "forgotten"),
                )
            ],
        ),
        monitoring.CustomMetricGroup(
            title="Model tokens a day",
            metrics=[_total(c, names.INPUT_TOKENS, "input"), _total(c, names.OUTPUT_TOKENS, "output")],
        ),
        monitoring.CustomMetricGroup(
            title="Estimated model cost a day (USD, prices from MEMORYBOT_MODEL_PRICES)",
            metrics=[_total(c, names.ESTIMATED_COST, "estimated USD")],
        ),
        monitoring.CustomMetricGroup(
            title="Model requests, throttles and retries a day",
            metrics=[
                _total(c, names.MODEL_REQUESTS, "requests"),
                _total(c, names.MODEL_THROTTLES, "throttled attempts"),
                _total(c, names.MODEL_RETRIES, "attempts repeated"),
            ],
        ),
        monitoring.CustomMetricGroup(
            title="Model latency p50 and p95 (ms, by purpose and model)",
            metrics=[
                _each(c, names.MODEL_LATENCY, "p50", "p50", ONE_HOUR),
                _each(c, names.MODEL_LATENCY, "p95", "p95", ONE_HOUR),
            ],
        ),
        monitoring.CustomMetricGroup(
            title="The last nights",
            metrics=[
                _total(c, metric, label)
                for metric, label in (
                    (names.NIGHT_RUNS, "nights finished"),
                    (names.NIGHT_SPEAKERS, "speakers"),
                    (names.NIGHT_FAILED_SPEAKERS, "speakers failed"),
                    (names.NIGHT_CHUNKS, "chunks"),
                    (names.NIGHT_REVIEWS, "memories reviewed"),
                    (names.NIGHT_DIARIES, "diaries"),
                )
            ],
        ),
        monitoring.CustomMetricGroup(
            title="Decisions lost (the model stayed unavailable through every retry)",
            metrics=[
                monitoring.CustomMetricWithAlarm(
                    metric=lost,
                    alarm_friendly_name="DecisionsLost",
                    add_alarm={
                        "Lost": monitoring.CustomThreshold(
                            threshold=1,
                            comparison_operator=AT_LEAST_ONE,
                            treat_missing_data_override=NO_DATA_IS_FINE,
                            alarm_description_override=(
                                "memorybot: exchanges not learned because the model stayed throttled or unreachable"
                            ),
                        )
                    },
                )
            ],
        ),
    ]
    facade.monitor_custom(
        metric_groups=groups,
        human_readable_name="memorybot: turns, memories, models, nights",
        alarm_friendly_name="Bot",
    )


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
