"""A deployed memorybot as `memorybot doctor` sees it, on loopback: moto (CloudFormation, Lambda,
Secrets Manager, EventBridge, SNS), the Discord recorder and a Bedrock control-plane stand-in.

moto's CloudFormation cannot hold the real stack (Lambda code assets, the Distributed Map,
Secrets Manager secrets and SNS subscriptions are beyond it), so the stack here is a minimal
one with exactly what the doctor reads: the three outputs, functions whose environment names
the secrets and the models, the schedule and the alarm topic. The secrets are created beside
it under the names its functions give, holding a 48-character placeholder as the real stack's
do; ``healthy()`` then fills everything in as an operator would (tests/infra/test_stack.py checks
that the real template has what the doctor reads).
"""

from __future__ import annotations

import itertools
import json
import secrets
import string
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.loaders
import botocore.session

from loopback.bedrock_control_server import BedrockControlServer
from memorybot.adapters.discord_rest import DiscordRest
from memorybot.discord.requests import COMMANDS
from memorybot.local.discord_recorder import DiscordRecorder

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
EMBEDDING_MODEL_ID = "amazon.titan-embed-text-v2:0"
APPLICATION_ID = "100000000000000001"
PUBLIC_KEY = "3f" * 32
BOT_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.GabCde.abcdefghijklmnopqrstuvwxyz0123456789AB"
REGION = "eu-west-1"
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
_worlds = itertools.count(1)
# One loader for every session the tests make: it caches the service models and endpoint data
# botocore would otherwise parse again for each new session (most of a check's time here).
_LOADER = botocore.loaders.create_loader()

# Which function reads which secret, as in infra/function_specs.py FUNCTIONS.
FUNCTION_SECRETS = {
    "Interactions": ("DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN"),
    "Reply": ("DISCORD_BOT_TOKEN",),
    "Admin": ("MEMORYBOT_ADMIN_SECRET",),
}
SECRET_SUFFIX = {
    "DISCORD_PUBLIC_KEY": "discord-public-key",
    "DISCORD_BOT_TOKEN": "discord-bot-token",
    "MEMORYBOT_ADMIN_SECRET": "admin-secret",
}


def placeholder() -> str:
    """What the stack's SecretStringGenerator(password_length=48, exclude_punctuation=True) makes."""
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(48))


@dataclass
class DoctorWorld:
    moto_endpoint: str
    discord: DiscordRecorder
    discord_url: str
    bedrock: BedrockControlServer
    stack_name: str
    prefix: str
    region: str = REGION
    aws_calls: list[str] = field(default_factory=list)

    @property
    def interactions_url(self) -> str:
        return f"https://{self.prefix}.execute-api.{self.region}.amazonaws.com/prod/interactions"

    @property
    def schedule_name(self) -> str:
        return f"{self.stack_name}-NightlySchedule-WCZ54FVJVSKW"

    def secret_name(self, key: str) -> str:
        return f"{self.prefix}/{SECRET_SUFFIX[key]}"

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.moto_endpoint, region_name=self.region, **CREDENTIALS)

    def session(self) -> boto3.Session:
        """A session whose every AWS call is recorded by operation name (in ``aws_calls``)."""
        core = botocore.session.get_session()
        core.register_component("data_loader", _LOADER)
        session = boto3.Session(region_name=self.region, botocore_session=core, **CREDENTIALS)
        session.events.register("before-call", lambda model, **_: self.aws_calls.append(model.name))
        return session

    # -- building it --------------------------------------------------------------------------

    def deploy(
        self,
        *,
        outputs: tuple[str, ...] = ("InteractionsUrl", "RollbackUrl", "EraseUrl"),
        alarm_email: str | None = "ops@example.com",
        decision_model: str = "bedrock",
        model_id: str = MODEL_ID,
        application_id: str = "",
        schedule_zone: str = "Asia/Tokyo",
    ) -> None:
        resources: dict[str, Any] = {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "lambda.amazonaws.com"},
                                "Action": "sts:AssumeRole",
                            }
                        ],
                    }
                },
            },
        }
        for name, keys in FUNCTION_SECRETS.items():
            environment = {
                "MEMORYBOT_DECISION_MODEL": decision_model,
                "MEMORYBOT_CHAT_MODEL": "bedrock",
                "BEDROCK_DECISION_MODEL_ID": model_id,
                "BEDROCK_CHAT_MODEL_ID": model_id,
                "MEMORYBOT_EMBEDDING_MODEL": "bedrock",
                "BEDROCK_EMBEDDING_MODEL_ID": EMBEDDING_MODEL_ID,
                "DISCORD_APPLICATION_ID": application_id,
            }
            environment.update({f"{key}_SECRET_NAME": self.secret_name(key) for key in keys})
            resources[f"{name}Function"] = {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Runtime": "python3.13",
                    "Handler": "index.handler",
                    "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                    "Code": {"ZipFile": "def handler(event, context):\n    return None\n"},
                    "Environment": {"Variables": environment},
                },
            }
        if alarm_email is not None:
            topic: dict[str, Any] = {"Type": "AWS::SNS::Topic", "Properties": {}}
            if alarm_email:
                topic["Properties"]["Subscription"] = [{"Protocol": "email", "Endpoint": alarm_email}]
            resources["AlarmTopic"] = topic
        base = self.interactions_url.removesuffix("/interactions")
        paths = {"InteractionsUrl": "/interactions", "RollbackUrl": "/memory/rollback", "EraseUrl": "/memory/erase"}
        template = {
            "Resources": resources,
            "Outputs": {name: {"Value": base + paths[name]} for name in outputs},
        }
        if schedule_zone:
            # moto's CloudFormation has no AWS::Scheduler::Schedule: the schedule is made beside the
            # stack, with the name the real stack's output gives (CloudFormation's generated one).
            template["Outputs"]["NightlyScheduleName"] = {"Value": self.schedule_name}
            self.client("scheduler").create_schedule(
                Name=self.schedule_name,
                ScheduleExpression="cron(0 3 * * ? *)",
                ScheduleExpressionTimezone=schedule_zone,
                FlexibleTimeWindow={"Mode": "OFF"},
                State="ENABLED",
                Target={
                    "Arn": f"arn:aws:states:{self.region}:123456789012:stateMachine:{self.stack_name}-Nightly",
                    "RoleArn": f"arn:aws:iam::123456789012:role/{self.stack_name}-NightlyScheduleRole",
                    "Input": '{"time": "<aws.scheduler.scheduled-time>"}',
                },
            )
        self.client("cloudformation").create_stack(
            StackName=self.stack_name, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"]
        )
        manager = self.client("secretsmanager")
        for key in SECRET_SUFFIX:
            manager.create_secret(Name=self.secret_name(key), SecretString=placeholder())

    def put_secret(self, key: str, value: str) -> None:
        self.client("secretsmanager").put_secret_value(SecretId=self.secret_name(key), SecretString=value)

    def register_commands(self, commands: list[dict] | None = None, guild: str | None = None) -> None:
        rest = DiscordRest(self.discord_url, BOT_TOKEN)
        try:
            rest.bulk_overwrite_commands(APPLICATION_ID, COMMANDS if commands is None else commands, guild)
        finally:
            rest.close()

    def healthy(self, **deploy_options: Any) -> DoctorWorld:
        """Everything an operator does after `cdk deploy` (README, Deploy), done right."""
        self.deploy(**deploy_options)
        self.put_secret("DISCORD_PUBLIC_KEY", PUBLIC_KEY)
        self.put_secret("DISCORD_BOT_TOKEN", BOT_TOKEN)
        self.discord.bot_token = BOT_TOKEN
        self.discord.application.update(
            id=APPLICATION_ID, verify_key=PUBLIC_KEY, interactions_endpoint_url=self.interactions_url
        )
        self.discord.bot_user.update(id=APPLICATION_ID)
        self.register_commands()
        self.bedrock.grant(MODEL_ID)
        self.bedrock.grant(EMBEDDING_MODEL_ID)
        self.aws_calls.clear()
        self.discord.calls.clear()
        self.bedrock.clear()
        return self


def new_world(
    moto_endpoint: str, discord: DiscordRecorder, discord_url: str, bedrock: BedrockControlServer
) -> DoctorWorld:
    n = next(_worlds)
    return DoctorWorld(moto_endpoint, discord, discord_url, bedrock, stack_name=f"MemoryBot{n}", prefix=f"memorybot{n}")
