"""The IAM contract: what each function really asks AWS for, against what its role allows.

Every function runs through its real handler (the module named by its ``FunctionSpec``)
with its own boto3 clients, as each Lambda has its own. botocore's event hooks record each
request (operation and parameters) before it is sent; ``required`` maps a request to the
IAM actions and resources it needs (a transaction needs the action of each of its items;
a Query on an index needs the index's ARN, not the table's; an object request needs the
object's ARN, a listing the bucket's). ``Policy`` reads a function's statements from the
synthesized template and names resources the same way.

moto does not enforce IAM, so without this a missing grant shows up only in a real deploy.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from faults import InjectedFault
from memorybot import tables
from memorybot.local import moto_dynamo

# The services whose requests the contract follows: every DynamoDB request, every
# asynchronous hand-off (Lambda Invoke), every S3 request (the nightly manifest) and every
# Bedrock model invocation (the embedding model; the scenarios script the decision and chat
# models). Logs, X-Ray and secrets are granted by the stack from the FunctionSpec and pinned
# by tests/infra/test_stack.py. (By IAM action prefix: bedrock-runtime's actions are bedrock:*.)
SERVICES = ("dynamodb", "lambda", "s3", "bedrock")

# The buckets a function is given, by the environment variable that names it -> the bucket's
# logical name in the contract (as tables.ALL_TABLES names the tables).
BUCKET_ENV = {"MEMORYBOT_MANIFEST_BUCKET": "manifests"}

# S3 operations -> the action IAM checks, on the object (arn:aws:s3:::<bucket>/<key>) or, for a
# listing, on the bucket (arn:aws:s3:::<bucket>). HeadObject is authorised as GetObject.
_S3_OBJECT = {
    "PutObject": "PutObject",
    "GetObject": "GetObject",
    "HeadObject": "GetObject",
    "DeleteObject": "DeleteObject",
}
_S3_BUCKET = {"ListObjectsV2": "ListBucket", "ListObjects": "ListBucket", "HeadBucket": "ListBucket"}

# DynamoDB operations whose action is simply dynamodb:<operation> on TableName (and IndexName).
_SINGLE_TABLE = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "DescribeTable"}
# Items of a transaction: each needs the action of its kind on its own table.
_TRANSACT_WRITE = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


@dataclass(frozen=True)
class Need:
    action: str  # "dynamodb:PutItem"
    # "dynamodb:<logical table>", "dynamodb:<logical table>/index/<index>", "lambda:<Function>",
    # "s3:<logical bucket>" (the bucket's ARN), "s3:<logical bucket>/<key>" (an object's ARN)
    resource: str


@dataclass(frozen=True)
class AwsRequest:
    function: str
    service: str
    operation: str
    params: dict


def required(
    request: AwsRequest, logical_tables: dict[str, str], logical_buckets: dict[str, str] | None = None
) -> list[Need]:
    """The (action, resource) pairs IAM checks for one request. ``logical_tables`` and
    ``logical_buckets``: physical name -> logical name."""

    def table(name: str, index: str | None = None) -> str:
        logical = logical_tables.get(name, f"<unknown table {name}>")
        return f"dynamodb:{logical}" + (f"/index/{index}" if index else "")

    op, params = request.operation, request.params
    if request.service == "bedrock-runtime":
        # A foundation model by its id (an inference profile's id would name the profile).
        return [Need(f"bedrock:{op}", f"bedrock:foundation-model/{params['modelId']}")]
    if request.service == "lambda":
        if op == "Invoke":
            return [Need("lambda:InvokeFunction", f"lambda:{params['FunctionName']}")]
        return [Need(f"lambda:{op}", f"lambda:{params.get('FunctionName', '*')}")]
    if request.service == "s3":
        bucket = "s3:" + (logical_buckets or {}).get(
            params.get("Bucket", ""), f"<unknown bucket {params.get('Bucket')}>"
        )
        if op in _S3_OBJECT:
            return [Need(f"s3:{_S3_OBJECT[op]}", f"{bucket}/{params['Key']}")]
        if op in _S3_BUCKET:
            return [Need(f"s3:{_S3_BUCKET[op]}", bucket)]
        return [Need(f"s3:{op}", "s3:*")]  # anything else: named, and surely not granted
    if op in _SINGLE_TABLE:
        return [Need(f"dynamodb:{op}", table(params["TableName"], params.get("IndexName")))]
    if op in ("BatchGetItem", "BatchWriteItem"):
        return [Need(f"dynamodb:{op}", table(name)) for name in params["RequestItems"]]
    if op == "TransactWriteItems":
        needs = []
        for item in params["TransactItems"]:
            [(kind, body)] = item.items()
            needs.append(Need(f"dynamodb:{_TRANSACT_WRITE[kind]}", table(body["TableName"])))
        return needs
    if op == "TransactGetItems":
        return [Need("dynamodb:GetItem", table(item["Get"]["TableName"])) for item in params["TransactItems"]]
    return [Need(f"dynamodb:{op}", "dynamodb:*")]  # anything else: named, and surely not granted


# A table encrypted with a customer-managed key: DynamoDB uses the key on the caller's behalf, so
# the caller needs kms:Decrypt for any request and, for a write, kms:Encrypt and GenerateDataKey
# too (the same model as CDK's table grants; moto does not encrypt, so it is not recorded).
_TABLE_WRITES = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}


def key_needs(request: AwsRequest, logical_tables: dict[str, str], keys: dict[str, str]) -> list[Need]:
    """The key actions a request needs. ``keys``: logical table name -> its key's contract name.
    (The manifest bucket is encrypted with S3's own key: no KMS grant is involved.)"""
    if request.service != "dynamodb":
        return []
    needs = []
    for need in required(request, logical_tables):
        key = keys.get(need.resource.removeprefix("dynamodb:").split("/")[0])
        if key is None:
            continue
        needs.append(Need("kms:Decrypt", key))
        if need.action in _TABLE_WRITES:
            needs += [Need("kms:Encrypt", key), Need("kms:GenerateDataKey", key)]
    return needs


# ---- the template side ---------------------------------------------------------------------


@dataclass
class Statement:
    actions: list[str]
    resources: list[str]
    conditions: dict = field(default_factory=dict)  # kept as the template has it (not evaluated)

    def allows(self, need: Need) -> bool:
        return any(fnmatch.fnmatchcase(need.action, a) for a in self.actions) and any(
            fnmatch.fnmatchcase(need.resource, r) for r in self.resources
        )


@dataclass
class Policy:
    function: str
    statements: list[Statement]

    def allows(self, need: Need) -> bool:
        return any(s.allows(need) for s in self.statements)

    def grants(self) -> set[Need]:
        """Each (action, resource) pair granted on a service the contract follows."""
        return {
            Need(a, r) for s in self.statements for a in s.actions for r in s.resources if a.split(":")[0] in SERVICES
        }


def function_ids(template: dict, names: list[str]) -> dict[str, str]:
    """Function name (FunctionSpec.name) -> its AWS::Lambda::Function logical id."""
    found = {}
    for name in names:
        [logical_id] = [
            k
            for k, v in template["Resources"].items()
            if v["Type"] == "AWS::Lambda::Function" and k.startswith(f"{name}Function")
        ]
        found[name] = logical_id
    return found


def table_ids(template: dict, any_function_id: str) -> dict[str, str]:
    """Table logical id -> logical table name, through the env vars the functions get."""
    env = template["Resources"][any_function_id]["Properties"]["Environment"]["Variables"]
    return {env[spec.env_var]["Ref"]: spec.logical_name for spec in tables.ALL_TABLES}


def bucket_ids(template: dict, function_ids: dict[str, str]) -> dict[str, str]:
    """Bucket logical id -> logical bucket name, through the env vars the functions get
    (one bucket per variable, whichever functions are given it)."""
    found: dict[str, str] = {}
    for fid in function_ids.values():
        env = template["Resources"][fid]["Properties"]["Environment"]["Variables"]
        for var, logical in BUCKET_ENV.items():
            if var in env:
                bucket_id = env[var]["Ref"]
                assert found.get(bucket_id, logical) == logical, f"{bucket_id} is named by two variables"
                found[bucket_id] = logical
    assert len(set(found.values())) == len(found), f"one variable names two buckets: {found}"
    return found


def _resource_name(resource: Any, names: dict[str, str]) -> str:
    """A template resource expression in the contract's naming; anything else as JSON."""
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        logical_id, attribute = resource["Fn::GetAtt"]
        if attribute == "Arn" and logical_id in names:
            return names[logical_id]
    if isinstance(resource, dict) and "Fn::Join" in resource:
        separator, parts = resource["Fn::Join"]
        if separator == "" and len(parts) == 2 and isinstance(parts[1], str):
            head = _resource_name(parts[0], names)
            if not head.startswith("{"):
                return head + parts[1]
    bedrock = _bedrock_name(resource)
    if bedrock:
        return bedrock
    if resource == "*":
        return "*"
    return json.dumps(resource, sort_keys=True)


_PSEUDO = {"AWS::Partition", "AWS::Region", "AWS::AccountId"}
_BEDROCK_ARN = re.compile(r"arn:[^:]+:bedrock:[^:]*:[^:]*:(foundation-model|inference-profile)/(.+)")


def _bedrock_name(resource: Any) -> str:
    """``bedrock:foundation-model/<id>`` for a Bedrock ARN joined from text and pseudo
    parameters (partition, region, account: any value); "" for anything else."""
    if isinstance(resource, dict) and "Fn::Join" in resource:
        separator, parts = resource["Fn::Join"]
        if not all(isinstance(p, str) or (isinstance(p, dict) and p.get("Ref") in _PSEUDO) for p in parts):
            return ""
        resource = separator.join(p if isinstance(p, str) else "pseudo" for p in parts)
    if not isinstance(resource, str):
        return ""
    match = _BEDROCK_ARN.fullmatch(resource)
    return f"bedrock:{match.group(1)}/{match.group(2)}" if match else ""


def policies(template: dict, function_names: list[str]) -> dict[str, Policy]:
    """Each function's identity policy, read from the template (every policy attached to its role)."""
    ids = function_ids(template, function_names)
    names = {tid: f"dynamodb:{logical}" for tid, logical in table_ids(template, next(iter(ids.values()))).items()}
    names.update({fid: f"lambda:{name}" for name, fid in ids.items()})
    names.update({bid: f"s3:{logical}" for bid, logical in bucket_ids(template, ids).items()})
    names.update({rid: f"kms:{rid}" for rid, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key"})
    found = {}
    for name, fid in ids.items():
        role_id = template["Resources"][fid]["Properties"]["Role"]["Fn::GetAtt"][0]
        role = template["Resources"][role_id]["Properties"]
        assert not role.get("Policies") and not role.get("ManagedPolicyArns"), (
            f"{name}: only attached policies are read"
        )
        statements = []
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role_id} not in resource["Properties"]["Roles"]:
                continue
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                assert (
                    statement["Effect"] == "Allow" and "NotAction" not in statement and "NotResource" not in statement
                )
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                resources = (
                    statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                )
                statements.append(
                    Statement(actions, [_resource_name(r, names) for r in resources], statement.get("Condition", {}))
                )
        found[name] = Policy(name, statements)
    return found


@dataclass
class Verdict:
    denied: list[tuple[str, Need, str]] = field(default_factory=list)  # (function, need, operation)
    unused: dict[str, set[Need]] = field(default_factory=dict)
    checked: int = 0  # AWS requests checked

    def denial_lines(self) -> list[str]:
        return sorted({f"{f}: {n.action} on {n.resource} (for {op})" for f, n, op in self.denied})


def check(
    requests: list[AwsRequest],
    policies: dict[str, Policy],
    logical_tables: dict[str, str],
    logical_buckets: dict[str, str] | None = None,
) -> Verdict:
    verdict = Verdict()
    used: dict[str, set[Need]] = {name: set() for name in policies}
    for request in requests:
        verdict.checked += 1
        policy = policies[request.function]
        for need in required(request, logical_tables, logical_buckets):
            if policy.allows(need):
                used[request.function].add(need)
            else:
                verdict.denied.append((request.function, need, request.operation))
    for name, policy in policies.items():
        verdict.unused[name] = {g for g in policy.grants() if not any(_covers(g, u) for u in used[name])}
    return verdict


def _covers(grant: Need, need: Need) -> bool:
    return fnmatch.fnmatchcase(need.action, grant.action) and fnmatch.fnmatchcase(need.resource, grant.resource)


# ---- recording -----------------------------------------------------------------------------


class Recorder:
    """Every request made through the clients it is attached to, with the function that made it."""

    def __init__(self) -> None:
        self.requests: list[AwsRequest] = []
        self._lock = threading.Lock()
        self._faults: list[tuple[str, str, str, int]] = []  # (function, operation, "fail"|"lose", nth)
        self._seen: dict[tuple[str, str], int] = {}

    def attach(self, client: Any, function: str) -> Any:
        service = client.meta.service_model.service_name
        events = client.meta.events

        def before(model, params, **_: Any) -> None:
            with self._lock:
                self.requests.append(
                    AwsRequest(function, service, model.name, json.loads(json.dumps(params, default=str)))
                )
                key = (function, model.name)
                self._seen[key] = self._seen.get(key, 0) + 1
                failing = (function, model.name, "fail", self._seen[key]) in self._faults
            if failing:
                raise InjectedFault(f"{function}: {model.name} failed")

        def after(model, **_: Any) -> None:
            with self._lock:
                losing = (function, model.name, "lose", self._seen.get((function, model.name), 0)) in self._faults
            if losing:
                raise InjectedFault(f"{function}: the answer to {model.name} was lost")

        events.register(f"before-parameter-build.{service}", before)
        events.register(f"after-call.{service}", after)
        return client

    def fail(self, function: str, operation: str, nth_from_now: int = 1) -> None:
        """Make the function's next (or nth next) ``operation`` fail before it is sent."""
        with self._lock:
            self._faults.append((function, operation, "fail", self._seen.get((function, operation), 0) + nth_from_now))

    def lose_answer(self, function: str, operation: str, nth_from_now: int = 1) -> None:
        """Make the function's next ``operation`` take effect and its answer be lost."""
        with self._lock:
            self._faults.append((function, operation, "lose", self._seen.get((function, operation), 0) + nth_from_now))


def s3_client(recorder: Recorder | None, function: str, endpoint: str) -> Any:
    """A real botocore S3 client on moto's server, recorded as ``function``'s (None: not recorded)."""
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=moto_dynamo.LOCAL_REGION,
        config=Config(s3={"addressing_style": "path"}),
        **moto_dynamo.LOCAL_CREDENTIALS,
    )
    return recorder.attach(client, function) if recorder else client


def lambda_client(recorder: Recorder, function: str, invocations: list[tuple[str, dict]]) -> Any:
    """A real botocore Lambda client whose Invoke is recorded and queued (Lambda's Event
    invocation accepts and returns 202); the harness delivers the queue to the callee."""
    client = boto3.client("lambda", region_name=moto_dynamo.LOCAL_REGION, **moto_dynamo.LOCAL_CREDENTIALS)
    recorder.attach(client, function)

    def accept(model, params, **_: Any):
        if model.name != "Invoke":
            return None
        payload = json.loads(params["body"])
        name = params["url_path"].split("/functions/")[1].split("/")[0]
        invocations.append((name, payload))
        return AWSResponse(params["url"], 202, {}, None), {"StatusCode": 202}

    client.meta.events.register("before-call.lambda", accept)
    return client
