"""`memorybot doctor` against moto (the stack, secrets, schedule, topic), the Discord recorder
and a Bedrock control-plane stand-in, all on loopback; each check healthy and broken."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from doctor_world import APPLICATION_ID, BOT_TOKEN, EMBEDDING_MODEL_ID, MODEL_ID, PUBLIC_KEY, DoctorWorld, new_world
from loopback.bedrock_control_server import BedrockControlServer
from memorybot import cli
from memorybot.discord.requests import COMMANDS
from memorybot.local import discord_recorder
from memorybot.local.discord_recorder import DiscordRecorder
from memorybot.ops import doctor
from memorybot.ops.doctor import FAIL, OK, SKIP, WARN

READ_ONLY = ("Describe", "Get", "List")


@pytest.fixture
def world(moto_server, monkeypatch):
    recorder = DiscordRecorder()
    server, url = discord_recorder.serve(recorder)
    bedrock = BedrockControlServer()
    bedrock.start()
    # The doctor builds its clients the usual way; these standard variables point them here.
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", bedrock.url)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in (("AWS_ACCESS_KEY_ID", "local"), ("AWS_SECRET_ACCESS_KEY", "local")):
        monkeypatch.setenv(name, value)  # what the command finds, as an operator's shell has them
    yield new_world(moto_server.endpoint, recorder, url, bedrock)
    server.shutdown()
    server.server_close()
    bedrock.stop()


def diagnose(world: DoctorWorld, **options) -> dict[str, doctor.Check]:
    checks = doctor.diagnose(world.session(), world.stack_name, discord_api_base=world.discord_url, **options)
    by_name = {c.name: c for c in checks}
    assert len(by_name) == len(checks), [c.name for c in checks]  # one line per check
    return by_name


def failed(checks: dict[str, doctor.Check]) -> set[str]:
    return {name for name, c in checks.items() if c.status == FAIL}


def test_a_healthy_deployment_passes_every_check(world):
    world.healthy()
    checks = diagnose(world)
    assert {c.status for c in checks.values()} == {OK}, [c.line() for c in checks.values()]
    assert set(checks) == {
        "stack",
        "outputs",
        f"secret {world.prefix}/discord-public-key",
        f"secret {world.prefix}/discord-bot-token",
        f"secret {world.prefix}/admin-secret",
        "bot token",
        "public key",
        "interactions endpoint URL",
        "slash commands",
        "decision and chat model " + MODEL_ID,
        "embedding model " + EMBEDDING_MODEL_ID,
        "nightly schedule",
        "alarm topic",
    }


def test_it_is_read_only_aws_describe_get_list_discord_and_bedrock_get(world):
    world.healthy()
    manager = world.client("secretsmanager")
    names = [world.secret_name(k) for k in ("DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN", "MEMORYBOT_ADMIN_SECRET")]

    def versions() -> dict[str, list]:
        listed = {name: manager.list_secret_version_ids(SecretId=name)["Versions"] for name in names}
        return {name: sorted((v["VersionId"], tuple(v["VersionStages"])) for v in vs) for name, vs in listed.items()}

    before = versions()
    diagnose(world)
    assert world.aws_calls, "the doctor asked AWS"
    assert all(call.startswith(READ_ONLY) for call in world.aws_calls), world.aws_calls
    assert {"DescribeStacks", "GetSecretValue", "GetSchedule", "ListSubscriptionsByTopic"} <= set(world.aws_calls)
    assert world.discord.calls and {method for method, _ in world.discord.calls} == {"GET"}
    assert world.bedrock.requests and {r.method for r in world.bedrock.requests} == {"GET"}
    # Nothing changed: no secret got a new version, no command was registered again.
    assert versions() == before
    assert len(world.discord.of_kind("commands")) == 1  # the operator's registration only


def test_a_missing_stack_is_one_failed_line_and_nothing_else_is_asked(world):
    checks = diagnose(world)
    [stack] = checks.values()
    assert stack.status == FAIL and world.stack_name in stack.detail and "npx cdk deploy" in stack.fix
    assert world.aws_calls == ["DescribeStacks"]


def test_missing_outputs_fail(world):
    world.deploy(outputs=("InteractionsUrl",))
    checks = diagnose(world)
    assert checks["outputs"].status == FAIL and "RollbackUrl, EraseUrl" in checks["outputs"].detail


def test_secrets_still_holding_the_stacks_placeholders_fail_and_discord_is_not_asked(world):
    world.deploy()
    world.bedrock.grant(MODEL_ID)
    checks = diagnose(world)
    public, token = (checks[f"secret {world.prefix}/{s}"] for s in ("discord-public-key", "discord-bot-token"))
    assert public.status == FAIL and "placeholder" in public.detail
    assert token.status == FAIL and "placeholder" in token.detail
    assert f"put-secret-value --secret-id {world.prefix}/discord-bot-token" in token.fix
    # The admin secret's random value is usable as it is.
    assert checks[f"secret {world.prefix}/admin-secret"].status == OK
    assert {checks[n].status for n in ("bot token", "public key", "slash commands")} == {SKIP}
    assert world.discord.calls == []
    assert BOT_TOKEN not in "\n".join(c.line() for c in checks.values())


def test_a_token_discord_refuses_fails_and_the_application_checks_wait_for_it(world):
    world.healthy()
    world.discord.bot_token = "MTAwMDAwMDAwMDAwMDAwMDAx.Gzzzzz.reset-in-the-portal-since-then"
    checks = diagnose(world)
    assert failed(checks) == {"bot token"}
    assert "401" in checks["bot token"].detail and "Reset Token" in checks["bot token"].fix
    assert checks["public key"].status == SKIP and checks["slash commands"].status == SKIP


def test_a_public_key_of_another_application_fails(world):
    world.healthy()
    world.discord.application["verify_key"] = "ab" * 32
    checks = diagnose(world)
    assert failed(checks) == {"public key"}
    assert APPLICATION_ID in checks["public key"].detail
    assert PUBLIC_KEY not in checks["public key"].line()  # key values are not printed


def test_an_application_id_in_the_stack_must_be_the_tokens_application(world):
    world.healthy(application_id="300000000000000003")
    checks = diagnose(world)
    assert failed(checks) == {"application id"}
    assert "300000000000000003" in checks["application id"].detail and APPLICATION_ID in checks["application id"].fix


def test_the_stacks_own_application_id_passes(world):
    world.healthy(application_id=APPLICATION_ID)
    assert failed(diagnose(world)) == set()


@pytest.mark.parametrize("url", [None, "https://elsewhere.example/interactions"])
def test_an_interactions_url_not_pointing_at_this_stack_fails(world, url):
    world.healthy()
    world.discord.application["interactions_endpoint_url"] = url
    checks = diagnose(world)
    assert failed(checks) == {"interactions endpoint URL"}
    assert world.interactions_url in checks["interactions endpoint URL"].fix


def test_commands_not_registered_or_registered_differently_fail(world):
    world.healthy()
    world.register_commands([])  # an empty bulk overwrite: nothing registered
    checks = diagnose(world)
    assert failed(checks) == {"slash commands"}
    assert 'missing "Remember this" (on a message), /chat, /memory' in checks["slash commands"].detail
    register = f"DISCORD_APPLICATION_ID={APPLICATION_ID} DISCORD_BOT_TOKEN_SECRET_NAME={world.prefix}/discord-bot-token"
    assert checks["slash commands"].fix == register + " memorybot register-commands"
    # An older definition of /memory (no `why`): it differs.
    older = [c if c["name"] != "memory" else {**c, "options": c["options"][:2]} for c in COMMANDS]
    world.register_commands(older)
    assert "differ /memory" in diagnose(world)["slash commands"].detail


def test_commands_registered_without_their_japanese_texts_or_limits_differ(world):
    world.healthy()

    def english_only(option: dict) -> dict:
        kept = {k: v for k, v in option.items() if k not in ("description_localizations", "max_length")}
        return {**kept, **({"options": [english_only(o) for o in option["options"]]} if "options" in option else {})}

    world.register_commands([english_only(c) for c in COMMANDS])
    detail = diagnose(world)["slash commands"].detail
    assert "differ /chat, /memory" in detail and "Remember this" not in detail  # its name is localized, no description
    world.register_commands([{**c, "contexts": [0]} for c in COMMANDS])  # /memory no longer usable in the DM
    assert 'differ "Remember this" (on a message), /chat, /memory' in diagnose(world)["slash commands"].detail
    world.register_commands()
    assert diagnose(world)["slash commands"].status == OK


def test_commands_are_checked_where_they_were_registered(world):
    world.healthy()
    world.register_commands([])
    world.register_commands(guild="200000000000000002")
    assert diagnose(world)["slash commands"].status == FAIL  # not global
    guild = diagnose(world, guild_id="200000000000000002")["slash commands"]
    assert guild.status == OK and "guild 200000000000000002" in guild.detail


def test_a_model_without_access_and_one_not_offered_fail(world):
    world.healthy()
    world.bedrock.deny(MODEL_ID)
    [line] = [c for n, c in diagnose(world).items() if n.endswith(MODEL_ID)]
    assert line.status == FAIL and "access not granted" in line.detail and "Model catalog" in line.fix
    world.bedrock.models.clear()
    [line] = [c for n, c in diagnose(world).items() if n.endswith(MODEL_ID)]
    assert line.status == FAIL and "not offered in eu-west-1" in line.detail


def test_an_inference_profile_is_checked_with_its_base_model(moto_server, world):
    profile = "eu." + MODEL_ID
    world.deploy(model_id=profile)
    world.bedrock.grant(MODEL_ID)
    [line] = [c for n, c in diagnose(world).items() if n.endswith(profile)]
    assert line.status == FAIL and "not offered" in line.detail  # the profile does not exist
    world.bedrock.add_profile(profile)
    [line] = [c for n, c in diagnose(world).items() if n.endswith(profile)]
    assert line.status == OK
    assert any(r.path.startswith("/inference-profiles/") for r in world.bedrock.requests)


def test_a_model_backend_not_on_bedrock_is_not_checked(world):
    world.deploy(decision_model="http")
    world.bedrock.grant(MODEL_ID)
    checks = diagnose(world)
    assert checks["decision model"].status == OK and "not checked" in checks["decision model"].detail
    assert checks["chat model " + MODEL_ID].status == OK


def test_a_disabled_schedule_fails(world):
    world.healthy()
    scheduler = world.client("scheduler")
    schedule = scheduler.get_schedule(Name=world.schedule_name)
    fields = ("ScheduleExpression", "ScheduleExpressionTimezone", "FlexibleTimeWindow", "Target")
    scheduler.update_schedule(Name=world.schedule_name, State="DISABLED", **{k: schedule[k] for k in fields})
    checks = diagnose(world)
    assert failed(checks) == {"nightly schedule"}
    assert checks["nightly schedule"].detail == f"{world.schedule_name} is DISABLED"
    assert (
        checks["nightly schedule"].fix
        == f"EventBridge console -> Scheduler -> Schedules -> {world.schedule_name} -> Enable"
    )


def test_it_says_when_the_next_night_starts_in_the_schedules_time_zone(world):
    world.healthy(schedule_zone="America/New_York")
    before = datetime.now(UTC)
    check = diagnose(world)["nightly schedule"]
    assert check.status == OK
    found = re.search(
        r"in America/New_York: the next night starts (\S+ \S+) America/New_York \((\S+ \S+) UTC\)", check.detail
    )
    assert found, check.detail
    local = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo("America/New_York"))
    utc = datetime.strptime(found.group(2), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert (local.hour, local.minute) == (3, 0) and local == utc  # 03:00 there: 07:00 or 08:00 UTC
    assert before < utc <= before + timedelta(days=1)  # the next one, not a later one


def test_next_night_follows_summer_time_and_reads_only_daily_schedules():
    march = datetime(2026, 3, 7, 12, tzinfo=UTC)  # New York's clocks go forward on the 8th
    assert doctor.next_night("cron(0 3 * * ? *)", "America/New_York", march) == (
        "the next night starts 2026-03-08 03:00 America/New_York (2026-03-08 07:00 UTC)"
    )
    winter = datetime(2026, 3, 6, 12, tzinfo=UTC)
    assert doctor.next_night("cron(0 3 * * ? *)", "America/New_York", winter).endswith("(2026-03-07 08:00 UTC)")
    assert doctor.next_night("cron(0 3 * * ? *)", "Asia/Tokyo", datetime(2026, 12, 2, 17, 59, tzinfo=UTC)) == (
        "the next night starts 2026-12-03 03:00 Asia/Tokyo (2026-12-02 18:00 UTC)"
    )
    assert "not a daily schedule" in doctor.next_night("rate(1 day)", "Asia/Tokyo")


def test_an_alarm_topic_without_a_subscriber_fails_and_no_topic_is_a_warning(world):
    world.deploy(alarm_email="")
    checks = diagnose(world)
    assert checks["alarm topic"].status == FAIL and "no subscriber" in checks["alarm topic"].detail
    other = new_world(world.moto_endpoint, world.discord, world.discord_url, world.bedrock)
    other.deploy(alarm_email=None)
    checks = diagnose(other)
    assert checks["alarm topic"].status == WARN and "alarm_email" in checks["alarm topic"].fix


def test_the_command_prints_one_line_per_check_and_exits_non_zero_on_a_failure(world, capsys):
    world.healthy()
    argv = ["doctor", "--stack-name", world.stack_name, "--region", world.region]
    argv += ["--discord-api-base", world.discord_url]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 14 and all(line.startswith("ok ") for line in out[:-1])
    assert out[-1] == "All checks passed. (Read-only: nothing was changed.)"
    world.discord.application["interactions_endpoint_url"] = None
    assert cli.main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    [bad] = [line for line in out if line.startswith("FAIL")]
    assert bad.startswith("FAIL  interactions endpoint URL: not set -> fix: developer portal")
    assert out[-1] == "1 check(s) failed."


def test_the_discord_api_base_comes_from_the_environment_too(world, capsys, monkeypatch):
    world.healthy()
    monkeypatch.setenv("DISCORD_API_BASE", world.discord_url)
    assert cli.main(["doctor", "--stack-name", world.stack_name, "--region", world.region]) == 0
    assert world.discord.calls


def test_a_resource_gone_from_under_the_stack_is_its_failed_line_and_the_other_checks_still_run(world):
    world.healthy()
    world.client("scheduler").delete_schedule(Name=world.schedule_name)
    checks = diagnose(world)
    assert failed(checks) == {"nightly schedule"}
    assert checks["nightly schedule"].detail == "GetSchedule failed (ResourceNotFoundException)"
    assert checks["alarm topic"].status == OK


def test_discord_unreachable_is_a_failed_line_not_a_crash(world):
    world.healthy()
    closed = "http://127.0.0.1:9/api/v10"  # the discard port: nothing listens there
    checks = doctor.diagnose(world.session(), world.stack_name, discord_api_base=closed)
    by_name = {c.name: c for c in checks}
    assert by_name["bot token"].status == FAIL and "unreachable" in by_name["bot token"].detail
    assert by_name["public key"].status == SKIP and by_name["nightly schedule"].status == OK
