"""The nightly run on Step Functions: its manifest bucket, its state machine and its schedule (its alarms are
with the others, in alarms.py).

claim the night's day -> (already claimed: done) -> plan (a manifest of speakers and message ids in
S3) -> a Distributed Map over the manifest, one child per speaker (retried with backoff on a
model that stays throttled; a speaker still failing is recorded by its Catch and the run goes
on) -> the decay review and diary -> finish (the run record). Each state is one thin Lambda
(``memorybot.handlers.nightly``); the local stack runs the same steps in process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from memorybot.core.night.nightly_steps import (
    CLAIM_RETRY,
    FINISH_RETRY,
    PLAN_RETRY,
    REFUSED_ERRORS,
    REVIEW_RETRY,
    SPEAKER_FAILED_RETRY,
    SPEAKER_RETRY,
    THROTTLED_ERRORS,
    StepRetry,
)
from memorybot.core.night.window import RUN_HOUR
from memorybot.core.record.domain import NIGHTLY_EXECUTION_TIMEOUT

from .parts import ASYNC_RETRIES
from .settings import StackConfig

# 03:00 in the schedule's time zone (context timezone, MEMORYBOT_TIMEZONE; by default Asia/Tokyo:
# 18:00 UTC, the design's 03:00 JST).
NIGHTLY_SCHEDULE = f"cron(0 {RUN_HOUR} * * ? *)"
# EventBridge Scheduler's context attribute: the time the start was scheduled for, in UTC.
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
NIGHTLY_MAX_EVENT_AGE = Duration.hours(2)
# A failed execution can be redriven for 14 days; its manifest must still be there.
MANIFEST_EXPIRY = Duration.days(15)
# Lambda's own throttle is retried as a throttled model is.
LAMBDA_THROTTLED = "Lambda.TooManyRequestsException"


def manifest_bucket(scope: Construct) -> s3.Bucket:
    return s3.Bucket(
        scope,
        "NightlyManifests",
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=False,
        lifecycle_rules=[s3.LifecycleRule(id="expire-manifests", expiration=MANIFEST_EXPIRY)],
        # Ids only and expiring: left behind on stack deletion rather than failing it when not empty.
        removal_policy=RemovalPolicy.RETAIN,
    )


def _invoke(
    scope: Construct, state_id: str, function: lambda_.IFunction, payload: sfn.TaskInput | None = None
) -> tasks.LambdaInvoke:
    return tasks.LambdaInvoke(
        scope,
        state_id,
        lambda_function=function,
        payload=payload,
        payload_response_only=True,  # the handler's answer is the next state's input
        retry_on_service_exceptions=False,  # the retries are explicit below
    )


def _names(errors: tuple[type[Exception], ...]) -> list[str]:
    return [e.__name__ for e in errors]  # Lambda reports a handler's exception by its class name


def _retry(task: tasks.LambdaInvoke, retry: StepRetry) -> tasks.LambdaInvoke:
    """The state's Retry as ``nightly_steps`` defines it (and runs it in process)."""
    task.add_retry(errors=_names(REFUSED_ERRORS), max_attempts=0)
    task.add_retry(
        errors=[*_names(THROTTLED_ERRORS), LAMBDA_THROTTLED],
        interval=Duration.seconds(retry.throttle_interval),
        backoff_rate=retry.backoff_rate,
        max_attempts=retry.throttled,
        max_delay=Duration.seconds(retry.throttle_max_delay),
        jitter_strategy=sfn.JitterType.FULL,
    )
    task.add_retry(
        errors=["States.ALL"],
        interval=Duration.seconds(retry.other_interval),
        backoff_rate=retry.backoff_rate,
        max_attempts=retry.other,
    )
    return task


class NightlyRun(Construct):
    """The state machine over the nightly step functions (by name: NightlyClaim, NightlyPlan, ...),
    reading each night's manifest from the bucket."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: StackConfig,
        functions: Mapping[str, lambda_.IFunction],
        manifests: s3.IBucket,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        f, c = functions, config
        claim = _retry(
            _invoke(
                self,
                "ClaimDay",
                f["NightlyClaim"],
                sfn.TaskInput.from_object({"time": sfn.JsonPath.string_at("$.time")}),
            ),
            CLAIM_RETRY,
        )
        plan = _retry(_invoke(self, "PlanSpeakers", f["NightlyPlan"]), PLAN_RETRY)
        speaker = _retry(_invoke(self, "ConsolidateSpeaker", f["NightlySpeaker"]), SPEAKER_RETRY)
        failed = _retry(_invoke(self, "RecordSpeakerFailed", f["NightlySpeakerFailed"]), SPEAKER_FAILED_RETRY)
        # After its retries a speaker is recorded failed (the error's name only) and the map goes on.
        speaker.add_catch(failed, errors=["States.ALL"], result_path="$.error")
        self.speakers = sfn.DistributedMap(
            self,
            "Speakers",
            item_reader=sfn.S3JsonItemReader(bucket=manifests, key=sfn.JsonPath.string_at("$.manifest")),
            item_selector={
                "run_id": sfn.JsonPath.number_at("$.run_id"),
                "scope": sfn.JsonPath.string_at("$$.Map.Item.Value.scope"),
                "user_id": sfn.JsonPath.string_at("$$.Map.Item.Value.user_id"),
                "messages": sfn.JsonPath.list_at("$$.Map.Item.Value.messages"),
            },
            max_concurrency=c.nightly_max_concurrency,
            # Children that failed even their Catch (the run store down): past this share the map fails,
            # the execution fails (alarmed) and a redrive runs only the speakers not yet done.
            tolerated_failure_percentage=c.nightly_tolerated_failure_percentage,
            map_execution_type=sfn.StateMachineType.STANDARD,  # a child's backoff can outlast Express's 5 minutes
            result_path=sfn.JsonPath.DISCARD,  # the results are the speakers' marks, not the state
        )
        self.speakers.item_processor(speaker)
        review = _retry(_invoke(self, "ReviewAndDiary", f["NightlyReview"]), REVIEW_RETRY)
        finish = _retry(_invoke(self, "FinishRun", f["NightlyFinish"]), FINISH_RETRY)
        claimed = (
            sfn.Choice(self, "Claimed?")
            .when(
                sfn.Condition.string_equals("$.status", "claimed"), plan.next(self.speakers).next(review).next(finish)
            )
            .otherwise(sfn.Succeed(self, "DayAlreadyClaimed"))
        )
        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="memorybot nightly state machine",
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(claim.next(claimed)),
            timeout=Duration.seconds(int(NIGHTLY_EXECUTION_TIMEOUT.total_seconds())),
            tracing_enabled=True,
            # Every event, without execution data: payloads are ids, and still stay out of logs.
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            role=self.role,
            comment="memorybot nightly run: claim, plan, speakers (Distributed Map), review and diary, finish",
        )


def schedule(
    scope: Construct, state_machine: sfn.IStateMachine, dead_letters: sqs.IQueue, timezone: str
) -> scheduler.CfnSchedule:
    """Starts the run at 03:00 in the deployment's time zone (EventBridge Scheduler keeps it at
    03:00 local through summer time), with the schedule's own time as input; a start that cannot
    be delivered goes to the dead-letter queue. The state machine's ARN is an output, so that an
    operator can start a night by hand with the schedule's own input (docs/deploy.md, "A night by
    hand")."""
    CfnOutput(
        scope,
        "NightlyStateMachineArn",
        value=state_machine.state_machine_arn,
        description='Start a night by hand: aws stepfunctions start-execution --input \'{"time": "<ISO 8601 UTC>"}\'',
    )
    # The scheduler's own role: it may start this state machine and leave an undeliverable start
    # in the dead-letter queue, nothing else.
    role = iam.Role(
        scope,
        "NightlyScheduleRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        ),
        description="memorybot nightly schedule: starts the nightly state machine",
    )
    role.add_to_policy(
        iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine.state_machine_arn])
    )
    role.add_to_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[dead_letters.queue_arn]))
    schedule = scheduler.CfnSchedule(
        scope,
        "NightlySchedule",
        description=f"memorybot nightly consolidation at 03:00 {timezone}",
        schedule_expression=NIGHTLY_SCHEDULE,
        schedule_expression_timezone=timezone,
        flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
        state="ENABLED",
        target=scheduler.CfnSchedule.TargetProperty(
            arn=state_machine.state_machine_arn,
            role_arn=role.role_arn,
            # The schedule's own time (UTC): a late start still names the same night.
            input=json.dumps({"time": SCHEDULED_TIME}),
            retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                maximum_retry_attempts=ASYNC_RETRIES,
                maximum_event_age_in_seconds=int(NIGHTLY_MAX_EVENT_AGE.to_seconds()),
            ),
            dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(arn=dead_letters.queue_arn),
        ),
    )
    CfnOutput(
        scope,
        "NightlyScheduleName",
        value=schedule.ref,
        description="The nightly schedule (EventBridge Scheduler, default group): memorybot doctor reads it",
    )
    return schedule
