"""`memorybot doctor`: is the deployed bot set up right? One line per check, each with its fix.

It reads the deployed stack with the operator's AWS credentials (CloudFormation, Lambda's
function configuration, Secrets Manager, EventBridge, SNS, Bedrock's control plane) and the
Discord application with the bot token from the stack's secret. It is read-only: it makes only
Describe/Get/List calls to AWS and GET requests to Discord, and changes nothing. A secret's
value is never printed.

The checks: the stack and its outputs; each secret filled in (not the placeholder the stack
created); the bot token valid (GET /users/@me); the public key equal to the application's
verify_key and its interactions endpoint URL equal to this stack's (GET /applications/@me);
the slash commands registered as the code defines them; access to the configured Bedrock
models in the stack's region; the nightly schedule enabled; the alarm topic's subscriber.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

import httpx

from ..config import DEFAULT_DISCORD_API_BASE, SECRET_KEYS, inference_profile_base, time_zone
from ..core.night.window import next_run_time
from ..discord.requests import COMMANDS

OK, FAIL, WARN, SKIP = "ok", "FAIL", "warn", "skip"

OUTPUTS = ("InteractionsUrl", "RollbackUrl", "EraseUrl")  # the stack's CfnOutputs (infra/api.py)
HEALTHY_STACK = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE")
# The functions' environment, as the stack writes it (infra/functions.py environment).
MODEL_BACKENDS = {
    "decision": "MEMORYBOT_DECISION_MODEL",
    "chat": "MEMORYBOT_CHAT_MODEL",
    "embedding": "MEMORYBOT_EMBEDDING_MODEL",
}
BEDROCK_MODEL_IDS = {
    "decision": "BEDROCK_DECISION_MODEL_ID",
    "chat": "BEDROCK_CHAT_MODEL_ID",
    "embedding": "BEDROCK_EMBEDDING_MODEL_ID",
}
APPLICATION_ID = "DISCORD_APPLICATION_ID"
SECRET_NAME_SUFFIX = "_SECRET_NAME"

# The shape of a real value; the stack's placeholder is 48 random letters and digits.
_PUBLIC_KEY = re.compile(r"[0-9a-fA-F]{64}")  # Ed25519, hex
_BOT_TOKEN = re.compile(r"[\w-]{20,}\.[\w-]{4,}\.[\w-]{20,}")  # base64 id . timestamp . hmac
ADMIN_SECRET_MIN_CHARS = 32
SECRET_HINT = {
    "DISCORD_PUBLIC_KEY": "'PUBLIC_KEY_HEX' (developer portal: General Information -> Public Key)",
    "DISCORD_BOT_TOKEN": "'BOT_TOKEN' (developer portal: Bot -> Reset Token)",
    "MEMORYBOT_ADMIN_SECRET": '"$(openssl rand -hex 32)"',
}


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, FAIL, WARN or SKIP
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f" -> fix: {self.fix}" if self.fix and self.status in (FAIL, WARN) else ""
        return f"{self.status:<4}  {self.name}: {self.detail}{fix}"


@dataclass
class Deployed:
    """What the doctor learned of the stack from AWS."""

    status: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    resources: dict[str, list[str]] = field(default_factory=dict)  # type -> physical ids
    environment: dict[str, str] = field(default_factory=dict)  # the functions' variables, merged

    def of_type(self, cfn_type: str) -> list[str]:
        return self.resources.get(cfn_type, [])


class DiscordReader:
    """GET requests to the Discord API with the bot token; nothing else."""

    def __init__(self, base_url: str, token: str, http: httpx.Client | None = None) -> None:
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bot {token}"}
        self._http = http or httpx.Client(timeout=10.0)

    def get(self, path: str) -> tuple[int, Any]:
        response = self._http.get(f"{self._base}/{path.lstrip('/')}", headers=self._headers)
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        return response.status_code, body


def diagnose(
    session: Any,
    stack_name: str,
    *,
    discord_api_base: str = DEFAULT_DISCORD_API_BASE,
    guild_id: str | None = None,
    http: httpx.Client | None = None,
) -> list[Check]:
    """Every check, in order. ``session`` is a boto3 Session (its region is the stack's)."""
    region = session.region_name or "(no region)"
    deployed, checks = _stack(session, stack_name, region)
    if deployed is None:
        return checks
    secrets, secret_checks = _secrets(session, deployed)
    checks += secret_checks
    checks += _discord(deployed, secrets, discord_api_base, guild_id, http)
    checks += _models(session, deployed, region)
    checks += _refused_as_a_check("nightly schedule", lambda: _schedule(session, deployed))
    checks += _refused_as_a_check("alarm topic", lambda: _alarm_topic(session, deployed))
    return checks


def _refused_as_a_check(name: str, section: Callable[[], list[Check]]) -> list[Check]:
    """A section whose AWS call failed (the operator's credentials may not read it, or the
    resource was removed outside the stack) is that section's failed line; the others still run."""
    from botocore.exceptions import ClientError

    try:
        return section()
    except ClientError as exc:
        operation, code = getattr(exc, "operation_name", "a call"), _code(exc)
        if "AccessDenied" in code or "Unauthorized" in code:
            fix = "let your credentials read it (docs/deploy-doctor.md lists the read-only permissions)"
        else:
            fix = "it was changed outside the stack: npx cdk deploy puts it back"
        return [Check(name, FAIL, f"{operation} failed ({code})", fix)]


# ---- AWS: the stack ----------------------------------------------------------------------


def _stack(session: Any, stack_name: str, region: str) -> tuple[Deployed | None, list[Check]]:
    from botocore.exceptions import ClientError

    cloudformation = session.client("cloudformation")
    try:
        [stack] = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        fix = f"deploy it (npx cdk deploy), or name the right stack (--stack-name) and region (--region; now {region})"
        return None, [Check("stack", FAIL, f"{stack_name} not found in {region} ({_code(exc)})", fix)]
    deployed = Deployed(status=stack["StackStatus"])
    deployed.outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    checks = []
    if deployed.status in HEALTHY_STACK:
        checks.append(Check("stack", OK, f"{stack_name} is {deployed.status} in {region}"))
    else:
        fix = "read the stack's events (aws cloudformation describe-stack-events), then npx cdk deploy again"
        checks.append(Check("stack", FAIL, f"{stack_name} is {deployed.status} in {region}", fix))
    missing = [name for name in OUTPUTS if not deployed.outputs.get(name)]
    if missing:
        fix = "deploy this version of the stack (npx cdk deploy)"
        checks.append(Check("outputs", FAIL, f"missing {', '.join(missing)}", fix))
    else:
        checks.append(Check("outputs", OK, f"InteractionsUrl {deployed.outputs['InteractionsUrl']}"))
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for resource in page["StackResourceSummaries"]:
            if resource.get("PhysicalResourceId"):
                deployed.resources.setdefault(resource["ResourceType"], []).append(resource["PhysicalResourceId"])
    checks += _refused_as_a_check("functions", lambda: _read_environment(session, deployed))
    return deployed, checks


def _read_environment(session: Any, deployed: Deployed) -> list[Check]:
    """The functions' environment names the secrets and the models (merged: each function has
    the common variables and the names of its own secrets)."""
    lambda_client = session.client("lambda")
    for function in deployed.of_type("AWS::Lambda::Function"):
        configuration = lambda_client.get_function_configuration(FunctionName=function)
        deployed.environment.update(configuration.get("Environment", {}).get("Variables", {}))
    return []


# ---- AWS: the secrets --------------------------------------------------------------------


def _secret_problem(key: str, value: str) -> str:
    """Why ``value`` is not a usable value of the secret ``key`` ("" when it is)."""
    if not value.strip():
        return "empty"
    if key == "DISCORD_PUBLIC_KEY" and not _PUBLIC_KEY.fullmatch(value.strip()):
        return "still the stack's placeholder (a public key is 64 hex characters)"
    if key == "DISCORD_BOT_TOKEN" and not _BOT_TOKEN.fullmatch(value.strip()):
        return "still the stack's placeholder (a bot token has three dot-separated parts)"
    if key == "MEMORYBOT_ADMIN_SECRET" and len(value) < ADMIN_SECRET_MIN_CHARS:
        return f"shorter than {ADMIN_SECRET_MIN_CHARS} characters"
    return ""


def _secrets(session: Any, deployed: Deployed) -> tuple[dict[str, str], list[Check]]:
    from botocore.exceptions import ClientError

    client = session.client("secretsmanager")
    values: dict[str, str] = {}
    checks = []
    for key in SECRET_KEYS:
        name = deployed.environment.get(key + SECRET_NAME_SUFFIX, "")
        if not name:
            checks.append(Check(f"secret {key}", FAIL, "no function of the stack names it", "npx cdk deploy"))
            continue
        try:
            value = client.get_secret_value(SecretId=name).get("SecretString", "")
        except ClientError as exc:
            fix = "let your credentials read it (secretsmanager:GetSecretValue), or deploy the stack again"
            checks.append(Check(f"secret {name}", FAIL, f"cannot be read ({_code(exc)})", fix))
            continue
        problem = _secret_problem(key, value)
        if problem:
            fix = f"aws secretsmanager put-secret-value --secret-id {name} --secret-string {SECRET_HINT[key]}"
            checks.append(Check(f"secret {name}", FAIL, problem, fix))
        else:
            values[key] = value.strip()
            checks.append(Check(f"secret {name}", OK, "filled in"))
    return values, checks


# ---- Discord -----------------------------------------------------------------------------


def _discord(
    deployed: Deployed,
    secrets: dict[str, str],
    api_base: str,
    guild_id: str | None,
    http: httpx.Client | None,
) -> list[Check]:
    names = ("bot token", "public key", "interactions endpoint URL", "slash commands")
    token = secrets.get("DISCORD_BOT_TOKEN")
    if not token:
        return [Check(name, SKIP, "needs the bot token secret filled in") for name in names]
    discord = DiscordReader(api_base, token, http)
    try:
        status, me = discord.get("users/@me")
    except httpx.HTTPError as exc:
        fix = f"check the network, or the Discord API base ({api_base})"
        return [Check("bot token", FAIL, f"Discord unreachable ({type(exc).__name__})", fix)] + [
            Check(name, SKIP, "Discord unreachable") for name in names[1:]
        ]
    if status != 200 or not isinstance(me, dict):
        fix = "developer portal -> Bot -> Reset Token, then put it in the bot token secret"
        detail = "refused by Discord (401): the token is wrong or was reset" if status == 401 else f"HTTP {status}"
        return [Check("bot token", FAIL, detail, fix)] + [
            Check(name, SKIP, "needs a valid bot token") for name in names[1:]
        ]
    checks = [Check("bot token", OK, f"valid: bot {me.get('username', '?')} ({me.get('id', '?')})")]
    try:
        status, application = discord.get("applications/@me")
        if status != 200 or not isinstance(application, dict):
            fix = "the token must be this application's bot token"
            return checks + [Check("application", FAIL, f"GET /applications/@me answered HTTP {status}", fix)]
        checks += _application(deployed, secrets, application)
        token_secret = deployed.environment.get("DISCORD_BOT_TOKEN" + SECRET_NAME_SUFFIX, "")
        checks.append(_commands(discord, str(application.get("id", "")), guild_id, token_secret))
    except httpx.HTTPError as exc:
        fix = f"check the network, or the Discord API base ({api_base})"
        checks.append(Check("application", FAIL, f"Discord unreachable ({type(exc).__name__})", fix))
    return checks


def _application(deployed: Deployed, secrets: dict[str, str], application: dict) -> list[Check]:
    checks = []
    app_id = str(application.get("id", ""))
    verify_key = str(application.get("verify_key", ""))
    public_key = secrets.get("DISCORD_PUBLIC_KEY", "")
    if not public_key:
        checks.append(Check("public key", SKIP, "needs the public key secret filled in"))
    elif public_key.lower() == verify_key.lower():
        checks.append(Check("public key", OK, f"matches application {app_id}'s verify_key"))
    else:
        name = deployed.environment.get("DISCORD_PUBLIC_KEY" + SECRET_NAME_SUFFIX, "the public key secret")
        fix = f"put application {app_id}'s Public Key into {name}"
        checks.append(Check("public key", FAIL, f"differs from application {app_id}'s verify_key", fix))
    configured = deployed.environment.get(APPLICATION_ID, "")
    if configured and configured != app_id:
        fix = f"npx cdk deploy -c discord_application_id={app_id}, or use that application's bot token"
        checks.append(Check("application id", FAIL, f"the stack names {configured}, the token's is {app_id}", fix))
    expected = deployed.outputs.get("InteractionsUrl", "")
    actual = str(application.get("interactions_endpoint_url") or "")
    if expected and actual == expected:
        checks.append(Check("interactions endpoint URL", OK, "points at this stack"))
    else:
        fix = f"developer portal -> General Information -> Interactions Endpoint URL: {expected or '(deploy first)'}"
        detail = f"is {actual}, not this stack's" if actual else "not set"
        checks.append(Check("interactions endpoint URL", FAIL, detail, fix))
    return checks


def _normal(options: Iterable[dict] | None) -> list[dict]:
    """Commands or options as compared: what the code defines (localizations, limits, where it may
    be used included), with Discord's defaults filled in and what Discord adds (ids, versions,
    permissions) left out."""
    shaped = []
    for option in options or []:
        shaped.append(
            {
                "name": option.get("name"),
                "name_localizations": option.get("name_localizations") or {},
                "type": option.get("type", 1),
                "description": option.get("description", ""),
                "description_localizations": option.get("description_localizations") or {},
                "required": bool(option.get("required", False)),
                "autocomplete": bool(option.get("autocomplete", False)),
                "max_length": option.get("max_length"),
                "contexts": sorted(option.get("contexts") or []),
                "integration_types": sorted(option.get("integration_types") or []),
                "options": _normal(option.get("options")),
            }
        )
    return sorted(shaped, key=lambda o: str(o["name"]))


def _commands(discord: DiscordReader, app_id: str, guild_id: str | None, token_secret: str) -> Check:
    where = f"guild {guild_id}" if guild_id else "global"
    path = f"applications/{app_id}/guilds/{guild_id}/commands" if guild_id else f"applications/{app_id}/commands"
    path += "?with_localizations=true"  # the whole dictionaries, not the doctor's own language's
    # As the README registers them: the application's id and the bot token's secret name.
    register = (
        f"DISCORD_APPLICATION_ID={app_id} DISCORD_BOT_TOKEN_SECRET_NAME={token_secret} memorybot register-commands"
    )
    register += f" --guild {guild_id}" if guild_id else ""
    status, registered = discord.get(path)
    if status != 200 or not isinstance(registered, list):
        return Check("slash commands", FAIL, f"cannot be listed ({where}: HTTP {status})", register)
    wanted = {c["name"]: c for c in _normal(COMMANDS)}
    have = {c["name"]: c for c in _normal(registered)}
    missing = sorted(set(wanted) - set(have))
    differ = sorted(n for n in set(wanted) & set(have) if wanted[n] != have[n])
    extra = sorted(set(have) - set(wanted))
    if missing or differ or extra:
        shown = {**have, **wanted}
        parts = [
            f"{label} {', '.join(command_label(shown[n]) for n in names)}"
            for label, names in _labelled(missing, differ, extra)
        ]
        hint = " (registered for one guild only? add --guild ID)" if not have and not guild_id else ""
        return Check("slash commands", FAIL, f"{where}: {'; '.join(parts)}{hint}", register)
    listed = ", ".join(command_label(have[n]) for n in sorted(have))
    return Check("slash commands", OK, f"{where}: {listed} as the code defines them")


def command_label(command: dict) -> str:
    """A command as a person finds it: /chat, or "Remember this" in a message's Apps menu."""
    name = str(command.get("name"))
    return "/" + name if command.get("type", 1) == 1 else f'"{name}" (on a message)'


def _labelled(missing: list[str], differ: list[str], extra: list[str]) -> list[tuple[str, list[str]]]:
    return [(label, names) for label, names in (("missing", missing), ("differ", differ), ("unknown", extra)) if names]


# ---- Bedrock -----------------------------------------------------------------------------


def _models(session: Any, deployed: Deployed, region: str) -> list[Check]:
    env = deployed.environment
    wanted: dict[str, list[str]] = {}  # model id -> roles
    checks = []
    for role, variable in MODEL_BACKENDS.items():
        backend = env.get(variable, "")
        if backend == "bedrock":
            wanted.setdefault(env.get(BEDROCK_MODEL_IDS[role], ""), []).append(role)
        else:
            checks.append(Check(f"{role} model", OK, f"backend {backend or '(unset)'}: not on Bedrock, not checked"))
    if wanted:
        client = session.client("bedrock")
        for model_id, roles in wanted.items():
            checks.append(_model_access(client, model_id, " and ".join(roles), region))
    return checks


def _model_access(client: Any, model_id: str, roles: str, region: str) -> Check:
    from botocore.exceptions import ClientError

    name = f"{roles} model {model_id}"
    # The Model access page is retired: a serverless model is enabled on first use, and an
    # Anthropic model asks a first-time account for its use-case details in the Model catalog.
    access = f"Bedrock console ({region}) -> Model catalog -> {{}}: submit the use-case details if it asks"
    base = inference_profile_base(model_id) or model_id
    try:
        if base != model_id:
            profile = client.get_inference_profile(inferenceProfileIdentifier=model_id)
            if profile.get("status") != "ACTIVE":
                return Check(name, FAIL, f"inference profile is {profile.get('status')}", access.format(base))
        availability = client.get_foundation_model_availability(modelId=base)
    except ClientError as exc:
        code = _code(exc)
        if code in ("ResourceNotFoundException", "ValidationException"):
            fix = f"pick a model offered in {region} (context bedrock_*_model_id)"
            return Check(name, FAIL, f"not offered in {region} ({code})", fix)
        return Check(name, FAIL, f"cannot be checked ({code})", "allow bedrock:GetFoundationModelAvailability")
    problems = [
        label
        for label, value, good in (
            ("not offered in the region", availability.get("regionAvailability"), "AVAILABLE"),
            ("access not granted", availability.get("authorizationStatus"), "AUTHORIZED"),
            ("not entitled", availability.get("entitlementAvailability"), "AVAILABLE"),
            (
                "offer agreement not accepted",
                (availability.get("agreementAvailability") or {}).get("status"),
                "AVAILABLE",
            ),
        )
        if value != good
    ]
    if problems:
        return Check(name, FAIL, f"not usable in {region}: {', '.join(problems)}", access.format(base))
    return Check(name, OK, f"access granted in {region}")


# ---- AWS: the schedule and the alarm topic -----------------------------------------------


SCHEDULE_OUTPUT = "NightlyScheduleName"  # the EventBridge Scheduler schedule's name (infra/nightly.py)
_DAILY_CRON = re.compile(r"^cron\((\d{1,2}) (\d{1,2}) \* \* \? \*\)$")


def _schedule(session: Any, deployed: Deployed) -> list[Check]:
    name = deployed.outputs.get(SCHEDULE_OUTPUT)
    if not name:
        return [Check("nightly schedule", FAIL, f"the stack has no {SCHEDULE_OUTPUT} output", "npx cdk deploy")]
    schedule = session.client("scheduler").get_schedule(Name=name)
    if schedule.get("State") != "ENABLED":
        fix = f"EventBridge console -> Scheduler -> Schedules -> {name} -> Enable"
        return [Check("nightly schedule", FAIL, f"{name} is {schedule.get('State')}", fix)]
    if not (schedule.get("Target") or {}).get("Arn"):
        return [Check("nightly schedule", FAIL, f"{name} starts nothing (no target)", "npx cdk deploy")]
    expression = schedule.get("ScheduleExpression", "")
    zone = schedule.get("ScheduleExpressionTimezone") or "UTC"
    return [Check("nightly schedule", OK, f"{name} enabled, {expression} in {zone}: {next_night(expression, zone)}")]


def next_night(expression: str, zone_name: str, now: datetime | None = None) -> str:
    """When a daily ``cron(M H * * ? *)`` in ``zone_name`` next starts, in that zone and in UTC."""
    match = _DAILY_CRON.match(expression)
    try:
        zone = time_zone(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        zone = None
    if match is None or zone is None:
        return "the next night: not a daily schedule this check reads"
    at_utc = next_run_time(now or datetime.now(UTC), zone, hour=int(match.group(2)), minute=int(match.group(1)))
    start = at_utc.astimezone(zone)
    return f"the next night starts {start:%Y-%m-%d %H:%M} {zone_name} ({at_utc:%Y-%m-%d %H:%M} UTC)"


def _alarm_topic(session: Any, deployed: Deployed) -> list[Check]:
    topics = deployed.of_type("AWS::SNS::Topic")
    if not topics:
        fix = "npx cdk deploy -c alarm_email=you@example.com, then confirm the e-mail"
        return [Check("alarm topic", WARN, "alarm_email is not set: the alarms notify nobody", fix)]
    sns = session.client("sns")
    checks = []
    for topic in topics:
        subscriptions = []
        for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic):
            subscriptions += page["Subscriptions"]
        confirmed = [s for s in subscriptions if s.get("SubscriptionArn", "").startswith("arn:")]
        pending = len(subscriptions) - len(confirmed)
        if confirmed:
            checks.append(Check("alarm topic", OK, f"{len(confirmed)} confirmed subscriber(s)"))
        elif pending:
            fix = "open the 'AWS Notification - Subscription Confirmation' e-mail and confirm"
            checks.append(Check("alarm topic", FAIL, f"{pending} subscription(s) not confirmed yet", fix))
        else:
            fix = "npx cdk deploy -c alarm_email=you@example.com, then confirm the e-mail"
            checks.append(Check("alarm topic", FAIL, "no subscriber: the alarms notify nobody", fix))
    return checks


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", type(exc).__name__))


# ---- the command -------------------------------------------------------------------------


def run(
    stack_name: str,
    *,
    region: str | None = None,
    profile: str | None = None,
    discord_api_base: str = DEFAULT_DISCORD_API_BASE,
    guild_id: str | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Print one line per check; 1 when any check failed, else 0."""
    import boto3

    session = boto3.Session(region_name=region, profile_name=profile)
    checks = diagnose(session, stack_name, discord_api_base=discord_api_base, guild_id=guild_id)
    for check in checks:
        out(check.line())
    failed = sum(c.status == FAIL for c in checks)
    out(f"{failed} check(s) failed." if failed else "All checks passed. (Read-only: nothing was changed.)")
    return 1 if failed else 0
