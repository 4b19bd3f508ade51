"""The synthesized template, property by property (aws_cdk.assertions on the session's synth)."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match, Template

from infra.stack import FUNCTIONS, NIGHTLY_SCHEDULE
from memorybot import tables
from memorybot.config import SECRET_KEYS
from synth_shapes import alarm_metric

FUNCTION_NAMES = [spec.name for spec in FUNCTIONS]
HANDLERS = {
    "Interactions": "memorybot.handlers.interactions.handler",
    "Reply": "memorybot.handlers.reply.handler",
    "Extraction": "memorybot.handlers.extraction.handler",
    "NightlyClaim": "memorybot.handlers.nightly.claim",
    "NightlyPlan": "memorybot.handlers.nightly.plan",
    "NightlySpeaker": "memorybot.handlers.nightly.speaker",
    "NightlySpeakerFailed": "memorybot.handlers.nightly.speaker_failed",
    "NightlyReview": "memorybot.handlers.nightly.review",
    "NightlyFinish": "memorybot.handlers.nightly.finish",
    "Admin": "memorybot.handlers.admin.handler",
    "Erase": "memorybot.handlers.erase.handler",
}
NIGHTLY_STEPS = [n for n in HANDLERS if n.startswith("Nightly")]
INTERACTION_TOKEN_LIFETIME = 15 * 60


@pytest.fixture(scope="session")
def template(synth) -> Template:
    return Template.from_json(synth.template)


def logical_id(synth, prefix: str, cfn_type: str) -> str:
    [match] = [k for k, v in synth.resources.items() if v["Type"] == cfn_type and k.startswith(prefix)]
    return match


def function(synth, name: str) -> dict:
    return synth.resources[logical_id(synth, f"{name}Function", "AWS::Lambda::Function")]["Properties"]


def table_ids(synth) -> dict[str, str]:
    """Logical table name -> CloudFormation logical id, read through the env var the functions get."""
    env = function(synth, "NightlyClaim")["Environment"]["Variables"]
    return {spec.logical_name: env[spec.env_var]["Ref"] for spec in tables.ALL_TABLES}


def policy_statements(synth, name: str) -> list[dict]:
    role_id = function(synth, name)["Role"]["Fn::GetAtt"][0]
    statements = []
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    inline = synth.resources[role_id]["Properties"].get("Policies", [])
    assert not inline and not synth.resources[role_id]["Properties"].get("ManagedPolicyArns")
    return statements


def actions_on(statements: list[dict], resource_id: str) -> set[str]:
    """Every action granted on any resource mentioning ``resource_id`` (a logical id)."""
    granted: set[str] = set()
    for statement in statements:
        assert statement["Effect"] == "Allow"
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if any(resource_id in json.dumps(r) for r in resources):
            actions = statement["Action"]
            granted |= set(actions if isinstance(actions, list) else [actions])
    return granted


# -- tables ---------------------------------------------------------------------------------


def test_one_table_per_shared_spec_with_the_specs_keys_and_indexes(synth):
    ids = table_ids(synth)
    assert len(synth.of_type("AWS::DynamoDB::Table")) == len(tables.ALL_TABLES)
    for spec in tables.ALL_TABLES:
        props = synth.resources[ids[spec.logical_name]]["Properties"]
        expected = spec.create_table_kwargs("ignored")
        assert props["KeySchema"] == expected["KeySchema"], spec.logical_name
        assert sorted(props["AttributeDefinitions"], key=str) == sorted(expected["AttributeDefinitions"], key=str)
        for kind, key in (
            ("LocalSecondaryIndexes", "LocalSecondaryIndexes"),
            ("GlobalSecondaryIndexes", "GlobalSecondaryIndexes"),
        ):
            got = {i["IndexName"]: i["KeySchema"] for i in props.get(kind, [])}
            want = {i["IndexName"]: i["KeySchema"] for i in expected.get(key, [])}
            assert got == want, (spec.logical_name, kind)
            assert all(i["Projection"] == {"ProjectionType": "ALL"} for i in props.get(kind, []))


def test_tables_are_on_demand_with_point_in_time_recovery(synth):
    for table in synth.of_type("AWS::DynamoDB::Table").values():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert "ProvisionedThroughput" not in props
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_data_tables_survive_stack_deletion_and_only_dedup_and_the_ledgers_read_rows_expire(synth):
    ids = table_ids(synth)
    for spec in tables.ALL_TABLES:
        table = synth.resources[ids[spec.logical_name]]
        if spec.retain:
            assert table["DeletionPolicy"] == "Retain" and table["UpdateReplacePolicy"] == "Retain"
            assert table["Properties"]["DeletionProtectionEnabled"] is True
        else:
            assert table["DeletionPolicy"] == "Delete"
        ttl = table["Properties"].get("TimeToLiveSpecification")
        if spec.ttl_attribute:
            assert ttl == {"AttributeName": spec.ttl_attribute, "Enabled": True}
        else:
            assert ttl is None, f"{spec.logical_name} must never expire"
    assert tables.DEDUP.ttl_attribute == "expiration"
    # memory_log: TTL on, but only read rows carry the attribute (tests/integration/test_ledger_retention.py).
    expiring = {spec.logical_name for spec in tables.ALL_TABLES if spec.ttl_attribute}
    # servers: only its day and member turn counters carry the attribute; settings and their ledger rows never expire.
    assert expiring == {"dedup", "memory_log", "servers"}
    functions = synth.of_type("AWS::Lambda::Function").values()
    retention = {f["Properties"]["Environment"]["Variables"]["MEMORYBOT_LEDGER_READ_RETENTION_DAYS"] for f in functions}
    assert retention == {"400"}


# -- functions and the layer ----------------------------------------------------------------


def test_one_function_per_handler_with_the_fixed_handler_paths(synth):
    assert len(synth.of_type("AWS::Lambda::Function")) == len(HANDLERS) == 11
    for name, handler in HANDLERS.items():
        assert function(synth, name)["Handler"] == handler


def test_one_runtime_and_one_architecture_everywhere_and_the_layer_matches(synth):
    [layer_id] = synth.of_type("AWS::Lambda::LayerVersion")
    layer = synth.resources[layer_id]["Properties"]
    assert layer["CompatibleRuntimes"] == ["python3.13"]
    assert layer["CompatibleArchitectures"] == ["arm64"]
    for name in FUNCTION_NAMES:
        props = function(synth, name)
        assert props["Runtime"] == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["Layers"] == [{"Ref": layer_id}]


def test_every_function_shares_one_code_asset(synth):
    keys = {function(synth, name)["Code"]["S3Key"] for name in FUNCTION_NAMES}
    assert len(keys) == 1


def test_timeouts_fit_each_job(synth):
    for name in NIGHTLY_STEPS:  # each step is short: the state machine holds the night together
        assert function(synth, name)["Timeout"] <= 300
    assert function(synth, "Interactions")["Timeout"] <= 10
    assert function(synth, "Admin")["Timeout"] <= 29  # API Gateway's integration limit
    # Reply must finish (model + Discord) well inside the interaction token's life.
    assert function(synth, "Reply")["Timeout"] * 3 < INTERACTION_TOKEN_LIFETIME


def test_powertools_and_settings_environment(synth):
    for name in FUNCTION_NAMES:
        env = function(synth, name)["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == "memorybot"
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "MemoryBot"
        assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
        assert env["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"  # events carry message text
        assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
        assert env["MEMORYBOT_DECISION_MODEL"] == "bedrock" and env["MEMORYBOT_CHAT_MODEL"] == "bedrock"
        assert env["BEDROCK_CHAT_MODEL_ID"] and env["BEDROCK_DECISION_MODEL_ID"]
        assert env["DISCORD_API_BASE"] == "https://discord.com/api/v10"
        assert "DISCORD_APPLICATION_ID" in env
        assert function(synth, name)["TracingConfig"] == {"Mode": "Active"}
    assert function(synth, "Interactions")["Environment"]["Variables"]["REPLY_FUNCTION_NAME"] == {
        "Ref": logical_id(synth, "ReplyFunction", "AWS::Lambda::Function")
    }
    for name in ("Reply", "Interactions"):  # Interactions: "Remember this"
        assert function(synth, name)["Environment"]["Variables"]["EXTRACTION_FUNCTION_NAME"] == {
            "Ref": logical_id(synth, "ExtractionFunction", "AWS::Lambda::Function")
        }


def test_every_function_finds_every_physical_table_name_in_its_spec_env_var(synth):
    ids = table_ids(synth)
    for name in FUNCTION_NAMES:
        env = function(synth, name)["Environment"]["Variables"]
        for spec in tables.ALL_TABLES:
            assert env[spec.env_var] == {"Ref": ids[spec.logical_name]}


# -- secrets --------------------------------------------------------------------------------

SECRETS_BY_FUNCTION = {
    "Interactions": {"DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN"},
    "Reply": {"DISCORD_BOT_TOKEN"},
    "Extraction": set(),
    **{name: set() for name in NIGHTLY_STEPS},
    "NightlyReview": {"DISCORD_BOT_TOKEN"},  # a server's own diary is posted to its channel
    "Admin": {"MEMORYBOT_ADMIN_SECRET"},
    "Erase": {"MEMORYBOT_ADMIN_SECRET"},
}


def test_three_secrets_without_a_value_in_the_template(synth):
    secrets = synth.of_type("AWS::SecretsManager::Secret")
    assert sorted(s["Properties"]["Name"] for s in secrets.values()) == [
        "memorybot/admin-secret",
        "memorybot/discord-bot-token",
        "memorybot/discord-public-key",
    ]
    for secret in secrets.values():
        assert "SecretString" not in secret["Properties"]
        assert "GenerateSecretString" in secret["Properties"]


def test_functions_get_secret_names_never_values_and_read_only_their_own(synth):
    secret_ids = {s["Properties"]["Name"]: k for k, s in synth.of_type("AWS::SecretsManager::Secret").items()}
    for name in FUNCTION_NAMES:
        env = function(synth, name)["Environment"]["Variables"]
        for key in SECRET_KEYS:
            assert key not in env, f"{name} must not carry {key} itself"
        assert not {"JEV_API_KEY", "OPENAI_API_KEY"} & set(env)
        named = {k.removesuffix("_SECRET_NAME") for k in env if k.endswith("_SECRET_NAME")}
        assert named == SECRETS_BY_FUNCTION[name]
        statements = policy_statements(synth, name)
        readable = {secret for secret, sid in secret_ids.items() if actions_on(statements, sid)}
        assert readable == {env[f"{k}_SECRET_NAME"] for k in named}
        for sid in secret_ids.values():
            assert actions_on(statements, sid) <= {"secretsmanager:GetSecretValue"}


# -- least privilege ------------------------------------------------------------------------


def _dynamodb(*actions: str) -> set[str]:
    return {f"dynamodb:{a}" for a in actions}


# Pinned here so that a change to any grant is a visible diff; tests/infra/test_iam_contract.py
# proves each one is what the code needs. Index grants are named per index.
IDEMPOTENCY = _dynamodb("PutItem", "UpdateItem", "DeleteItem")
TABLE_ACCESS = {
    "Interactions": {
        "messages": _dynamodb("PutItem", "GetItem"),  # GetItem: a store whose answer was lost
        # the /chat line's check, show's and export's switch, pause/resume and the forget-all stamp
        "people": _dynamodb("ConditionCheckItem", "GetItem", "UpdateItem"),
        # UpdateItem: a forget's sources; PutItem: an Undo puts a memory back
        "memories": _dynamodb("GetItem", "DeleteItem", "UpdateItem", "PutItem", "Query"),
        "memory_log": _dynamodb("PutItem", "GetItem", "Query"),  # Query: export, /memory history
        "dedup": IDEMPOTENCY,
        # /memory-settings: the settings, a change with its ledger row, the counters, show's figures
        "servers": _dynamodb("GetItem", "PutItem", "UpdateItem", "Query"),
    },
    "Reply": {
        "messages": _dynamodb("PutItem", "GetItem", "Query"),
        "people": _dynamodb("GetItem", "UpdateItem", "ConditionCheckItem"),  # the switch, the notice, the check
        # GetItem, DeleteItem: the night's note (and a kept index's header); BatchGetItem: the
        # index's chunks changed since the function's copy
        "memories": _dynamodb("Query", "GetItem", "DeleteItem", "BatchGetItem"),
        "memory_log": _dynamodb("PutItem"),
        "dedup": IDEMPOTENCY,
        "servers": _dynamodb("GetItem", "UpdateItem"),  # memory on here? the persona; the counters
    },
    "Extraction": {
        "messages": _dynamodb("Query"),
        # GetItem: the forgotten sources; UpdateItem: a written memory's vector, after its write,
        # and a forget-all's deletes adding their sources to the forgotten ones; BatchGetItem: the chosen ten
        "memories": _dynamodb("GetItem", "PutItem", "DeleteItem", "Query", "UpdateItem", "BatchGetItem"),
        "memory_log": _dynamodb("PutItem", "GetItem"),
        "people": _dynamodb("GetItem", "ConditionCheckItem", "UpdateItem"),  # UpdateItem: a forget-all done
        "dedup": IDEMPOTENCY,
        "servers": _dynamodb("GetItem", "UpdateItem"),
    },
    "NightlyClaim": {"nightly_runs": _dynamodb("GetItem", "PutItem", "UpdateItem")},
    "NightlyPlan": {"messages": _dynamodb("Query"), "servers": _dynamodb("GetItem")},
    "NightlySpeaker": {
        "messages": _dynamodb("Query"),
        "memories": _dynamodb(
            "GetItem", "PutItem", "DeleteItem", "Query", "UpdateItem", "BatchGetItem"
        ),  # the chosen ten
        "memory_log": _dynamodb("PutItem", "GetItem"),
        "nightly_runs": _dynamodb("GetItem", "PutItem"),
        "people": _dynamodb("GetItem", "ConditionCheckItem"),
        "servers": _dynamodb("GetItem", "UpdateItem"),
    },
    "NightlySpeakerFailed": {"nightly_runs": _dynamodb("GetItem", "PutItem")},
    "NightlyReview": {
        "messages": _dynamodb("Query"),
        # Scan: the embedding backfill's bounded pass (a few pages a night), nobody else's
        "memories": _dynamodb("DeleteItem", "UpdateItem", "Query", "Scan"),
        "memory_log": _dynamodb("PutItem", "GetItem"),
        "nightly_runs": _dynamodb("GetItem", "PutItem"),
        "people": _dynamodb("GetItem"),  # whose memory is paused: neither reviewed nor embedded
        "servers": _dynamodb("GetItem", "UpdateItem"),  # the servers' own diaries
    },
    "NightlyFinish": {"memory_log": _dynamodb("Query"), "nightly_runs": _dynamodb("GetItem", "UpdateItem")},
    "Admin": {
        "memories": _dynamodb("GetItem", "PutItem", "DeleteItem", "UpdateItem"),  # UpdateItem: the selection index
        "memory_log": _dynamodb("PutItem", "GetItem", "Query"),
        "nightly_runs": _dynamodb("GetItem", "UpdateItem"),
        "people": _dynamodb("GetItem", "ConditionCheckItem"),  # a restore's check; its dry run reads the record
    },
    "Erase": {
        "memories": _dynamodb("GetItem", "DeleteItem", "Query", "UpdateItem"),  # UpdateItem: the selection index
        # UpdateItem: the ledger's single, conditioned exception (the redaction)
        "memory_log": _dynamodb("PutItem", "GetItem", "Query", "UpdateItem"),
        "messages": _dynamodb("DeleteItem", "Query"),
        "people": _dynamodb("GetItem", "PutItem"),  # the switch erased, the erasure's marker written
        "servers": _dynamodb("UpdateItem"),  # the person out of each server's count of people
    },
}


def test_each_function_touches_only_its_tables_with_only_its_actions(synth):
    ids = table_ids(synth)
    for name in FUNCTION_NAMES:
        statements = policy_statements(synth, name)
        for logical_name, table_id in ids.items():
            granted = actions_on(statements, table_id)
            assert granted == TABLE_ACCESS[name].get(logical_name, set()), (name, logical_name)
            allowed = SCANS.get((name, logical_name), set())
            assert not granted & (_dynamodb("Scan", "BatchGetItem", "BatchWriteItem") - allowed)


# The one Scan: the nightly embedding backfill (docs/relevance.md), bounded in pages per night.
# The batch gets: a large profile's chosen ten, by key, after ranking its selection index, and the
# chunks of that index changed since a function's copy (docs/relevance.md), by the three readers
# that choose ten.
SCANS = {
    ("NightlyReview", "memories"): _dynamodb("Scan"),
    **{(name, "memories"): _dynamodb("BatchGetItem") for name in ("Reply", "Extraction", "NightlySpeaker")},
}


# (table, index) each function may query: the stale index only for the nightly review.
INDEX_QUERIES = {
    "Interactions": {("memories", "by_updated"), ("memories", "by_user"), ("memory_log", "by_user")},
    "Reply": set(),  # the whole profile is the memories' own partition: no index
    "Extraction": {("messages", "by_conversation"), ("memories", "by_updated")},  # by_updated: a forget-all's read
    "NightlyClaim": set(),
    "NightlyPlan": {("messages", "by_jst_day")},
    "NightlySpeaker": {("messages", "by_conversation")},
    "NightlySpeakerFailed": set(),
    "NightlyReview": {
        ("messages", "by_jst_day"),
        ("memories", "stale"),
        ("memories", "review_queue"),
        ("memories", "ending"),
    },
    "NightlyFinish": {("memory_log", "by_run")},
    "Admin": {("memory_log", "by_run")},
    "Erase": {
        ("memories", "by_updated"),
        ("memories", "by_user"),
        ("memory_log", "by_user"),
        ("messages", "by_author"),
        ("messages", "by_conversation_of"),
    },
}


def test_each_function_queries_only_the_indexes_it_uses(synth):
    names = {table_id: logical for logical, table_id in table_ids(synth).items()}
    for name in FUNCTION_NAMES:
        found = set()
        for statement in policy_statements(synth, name):
            for resource in _list(statement["Resource"]):
                parts = resource.get("Fn::Join", ["", []])[1] if isinstance(resource, dict) else []
                if len(parts) == 2 and isinstance(parts[1], str) and parts[1].startswith("/index/"):
                    head, tail = parts
                    assert _list(statement["Action"]) == ["dynamodb:Query"]
                    found.add((names[head["Fn::GetAtt"][0]], tail.removeprefix("/index/")))
        assert found == INDEX_QUERIES[name], name


def test_index_access_is_named_not_wildcarded(synth):
    for name in FUNCTION_NAMES:
        for statement in policy_statements(synth, name):
            text = json.dumps(statement["Resource"])
            assert "/index/*" not in text
            if statement["Resource"] == "*":  # only X-Ray has no resource-level permissions
                assert set(statement["Action"]) == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_bedrock_only_for_the_model_callers_and_only_the_configured_models(synth):
    env = function(synth, "Reply")["Environment"]["Variables"]
    model_ids = {env["BEDROCK_CHAT_MODEL_ID"], env["BEDROCK_DECISION_MODEL_ID"], env["BEDROCK_EMBEDDING_MODEL_ID"]}
    assert env["BEDROCK_EMBEDDING_MODEL_ID"] == "amazon.titan-embed-text-v2:0"
    assert (env["MEMORYBOT_EMBEDDING_MODEL"], env["MEMORYBOT_EMBEDDING_DIMENSIONS"]) == ("bedrock", "256")
    for name in FUNCTION_NAMES:
        bedrock = [
            s for s in policy_statements(synth, name) if any(a.startswith("bedrock:") for a in _list(s["Action"]))
        ]
        if name not in ("Reply", "Extraction", "NightlySpeaker", "NightlyReview"):
            assert bedrock == []
            continue
        [statement] = bedrock
        assert _list(statement["Action"]) == ["bedrock:InvokeModel"]
        resources = [json.dumps(r) for r in _list(statement["Resource"])]
        assert len(resources) == len(model_ids)
        for model_id in model_ids:
            assert any(f"::foundation-model/{model_id}" in r for r in resources)
        assert not any("*" in r for r in resources)


def test_async_hand_offs_invoke_exactly_the_next_worker(synth):
    fn_ids = {n: logical_id(synth, f"{n}Function", "AWS::Lambda::Function") for n in FUNCTION_NAMES}
    # Interactions hands "Remember this" and a confirmed forget-all's deletes to the extraction worker.
    expected = {"Interactions": {"Reply", "Extraction"}, "Reply": {"Extraction"}}
    for name in FUNCTION_NAMES:
        invokes = [s for s in policy_statements(synth, name) if "lambda:InvokeFunction" in _list(s["Action"])]
        targets = {n for n, fid in fn_ids.items() if any(fid in json.dumps(s["Resource"]) for s in invokes)}
        assert targets == expected.get(name, set()), name
        for statement in invokes:  # the function only, not ":*" (its versions)
            assert ":*" not in json.dumps(statement["Resource"])


def _list(value):
    return value if isinstance(value, list) else [value]


# -- API Gateway ----------------------------------------------------------------------------


def test_three_post_routes_with_proxy_integrations_to_the_right_functions(synth):
    paths = {k: v["Properties"]["PathPart"] for k, v in synth.of_type("AWS::ApiGateway::Resource").items()}
    methods = synth.of_type("AWS::ApiGateway::Method")
    routes = {}
    for method in methods.values():
        props = method["Properties"]
        assert props["HttpMethod"] == "POST"
        integration = props["Integration"]
        assert integration["Type"] == "AWS_PROXY" and integration["IntegrationHttpMethod"] == "POST"
        routes[paths[props["ResourceId"]["Ref"]]] = json.dumps(integration["Uri"])
    assert set(routes) == {"interactions", "rollback", "erase", "import"}
    assert logical_id(synth, "InteractionsFunction", "AWS::Lambda::Function") in routes["interactions"]
    assert logical_id(synth, "AdminFunction", "AWS::Lambda::Function") in routes["rollback"]
    assert logical_id(synth, "AdminFunction", "AWS::Lambda::Function") in routes["import"]
    assert logical_id(synth, "EraseFunction", "AWS::Lambda::Function") in routes["erase"]
    parent = {k: v["Properties"]["ParentId"] for k, v in synth.of_type("AWS::ApiGateway::Resource").items()}
    for route in ("rollback", "import"):
        [route_id] = [k for k, p in paths.items() if p == route]
        assert paths[parent[route_id]["Ref"]] == "memory"
    # Raw bodies: no binary media types or request templates that would rewrite them.
    [api] = synth.of_type("AWS::ApiGateway::RestApi").values()
    assert "BinaryMediaTypes" not in api["Properties"]


def test_stage_throttles_logs_access_and_never_logs_bodies(synth, template):
    [stage] = synth.of_type("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    settings = {s["ResourcePath"]: s for s in props["MethodSettings"]}
    everything = settings["/*"]
    assert everything["ThrottlingRateLimit"] == 10 and everything["ThrottlingBurstLimit"] == 20
    assert everything["LoggingLevel"] == "ERROR" and everything["DataTraceEnabled"] is False
    for admin_route in ("/~1memory~1rollback", "/~1memory~1erase", "/~1memory~1import"):
        limited = settings[admin_route]
        assert limited["HttpMethod"] == "POST" and limited["ThrottlingRateLimit"] == 1, admin_route
    access = props["AccessLogSetting"]
    assert access["DestinationArn"]["Fn::GetAtt"][0].startswith("ApiAccessLogs")
    assert "$context.requestId" in access["Format"]
    assert "body" not in access["Format"].lower()
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


def test_outputs_are_the_interactions_and_rollback_urls(synth):
    outputs = synth.template["Outputs"]
    assert json.dumps(outputs["InteractionsUrl"]["Value"]).endswith('/interactions"]]}')
    assert json.dumps(outputs["RollbackUrl"]["Value"]).endswith('/memory/rollback"]]}')
    assert json.dumps(outputs["ImportUrl"]["Value"]).endswith('/memory/import"]]}')
    for output in ("InteractionsUrl", "RollbackUrl", "ImportUrl"):
        assert "execute-api" in json.dumps(outputs[output]["Value"])


def test_the_template_has_what_memorybot_doctor_reads(synth):
    """The doctor's tests run against a minimal stack in moto (tests/doctor_world.py); this ties
    what it reads to the real template: the outputs, the functions' environment, one schedule."""
    from memorybot.ops import doctor

    assert set(doctor.OUTPUTS) <= set(synth.template["Outputs"])
    environments = [
        f["Properties"]["Environment"]["Variables"] for f in synth.of_type("AWS::Lambda::Function").values()
    ]
    named = {key for env in environments for key in env if key.endswith(doctor.SECRET_NAME_SUFFIX)}
    assert {key + doctor.SECRET_NAME_SUFFIX for key in SECRET_KEYS} <= named
    read = {*doctor.MODEL_BACKENDS.values(), *doctor.BEDROCK_MODEL_IDS.values(), doctor.APPLICATION_ID}
    assert all(read <= set(env) for env in environments)
    [schedule_id] = synth.of_type("AWS::Scheduler::Schedule")
    assert synth.template["Outputs"][doctor.SCHEDULE_OUTPUT]["Value"] == {"Ref": schedule_id}


# -- schedule and asynchronous invocations --------------------------------------------------


def test_the_night_starts_at_03_00_tokyo_time_with_the_schedules_time(synth):
    """EventBridge Scheduler in the deployment's zone (18:00 UTC for Asia/Tokyo); no EventBridge rule."""
    assert not synth.of_type("AWS::Events::Rule")
    [schedule] = synth.of_type("AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == NIGHTLY_SCHEDULE == "cron(0 3 * * ? *)"
    assert props["ScheduleExpressionTimezone"] == "Asia/Tokyo"
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"} and props["State"] == "ENABLED"
    target = props["Target"]
    [machine_id] = synth.of_type("AWS::StepFunctions::StateMachine")
    assert target["Arn"] == {"Ref": machine_id}
    assert json.loads(target["Input"]) == {"time": "<aws.scheduler.scheduled-time>"}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 7200}
    assert target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0].startswith("DeadLetters")


def test_async_workers_retry_expire_and_fail_to_the_dead_letter_queue(synth):
    configs = {}
    for config in synth.of_type("AWS::Lambda::EventInvokeConfig").values():
        props = config["Properties"]
        configs[props["FunctionName"]["Ref"]] = props
    for name in ("Reply", "Extraction"):
        props = configs[logical_id(synth, f"{name}Function", "AWS::Lambda::Function")]
        assert props["MaximumRetryAttempts"] == 2
        destination = props["DestinationConfig"]["OnFailure"]["Destination"]
        assert destination["Fn::GetAtt"][0].startswith("DeadLetters")
    reply = configs[logical_id(synth, "ReplyFunction", "AWS::Lambda::Function")]
    assert reply["MaximumEventAgeInSeconds"] < INTERACTION_TOKEN_LIFETIME
    assert (
        len(configs) == 2
    )  # interactions and admin answer API Gateway synchronously; the nightly steps, the state machine


def test_dead_letter_queue_is_encrypted_and_ssl_only(synth, template):
    [queue] = synth.of_type("AWS::SQS::Queue").values()
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


# -- observability --------------------------------------------------------------------------


def test_every_function_logs_to_a_retained_for_30_days_log_group(synth):
    for name in FUNCTION_NAMES:
        group_id = function(synth, name)["LoggingConfig"]["LogGroup"]["Ref"]
        assert synth.resources[group_id]["Properties"]["RetentionInDays"] == 30


def test_alarms_on_errors_throttles_and_dead_letters(synth):
    alarms = list(synth.of_type("AWS::CloudWatch::Alarm").values())
    watched = set()
    for alarm in alarms:
        props = alarm["Properties"]
        assert props["Threshold"] == 1 and props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert props["EvaluationPeriods"] == 1 and props["TreatMissingData"] == "notBreaching"
        metric = alarm_metric(props)
        assert metric["Period"] == 300
        [dimension] = metric["Dimensions"]
        value = dimension["Value"]  # {"Ref": fn}, {"Fn::GetAtt": [queue, "QueueName"]} or a service name
        if isinstance(value, dict):
            value = value.get("Ref") or value["Fn::GetAtt"][0]
        watched.add((metric["Namespace"], metric["MetricName"], value))
    for name in FUNCTION_NAMES:
        fid = logical_id(synth, f"{name}Function", "AWS::Lambda::Function")
        assert ("AWS/Lambda", "Errors", fid) in watched
        assert ("AWS/Lambda", "Throttles", fid) in watched
    [queue_id] = synth.of_type("AWS::SQS::Queue")
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", queue_id) in watched
    # Exchanges the extraction worker gave up on (Powertools metric, service dimension).
    assert ("MemoryBot", "DecisionsLost", "memorybot") in watched
