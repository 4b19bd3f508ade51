"""Personal data at rest: the encrypt_personal_data context setting, off (the default) and on."""

from __future__ import annotations

import json

from infra.stack import FUNCTIONS
from memorybot import tables

# servers: a server's persona and its admins' ids, and members' ids on their day's turn counters.
PERSONAL = {"messages", "memories", "memory_log", "nightly_runs", "people", "servers"}
WRITES = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}


def _of_type(template: dict, cfn_type: str) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == cfn_type}


def _function(template: dict, name: str) -> dict:
    [props] = [
        r["Properties"]
        for k, r in _of_type(template, "AWS::Lambda::Function").items()
        if k.startswith(f"{name}Function")
    ]
    return props


def _table_ids(template: dict) -> dict[str, str]:
    env = _function(template, "NightlyClaim")["Environment"]["Variables"]
    return {spec.logical_name: env[spec.env_var]["Ref"] for spec in tables.ALL_TABLES}


def _statements(template: dict, name: str) -> list[dict]:
    role_id = _function(template, name)["Role"]["Fn::GetAtt"][0]
    return [
        s
        for p in _of_type(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _list(value):
    return value if isinstance(value, list) else [value]


def test_the_personal_data_tables_are_the_ones_that_hold_what_people_said_or_what_is_known_of_them():
    assert {s.logical_name for s in tables.ALL_TABLES if s.personal_data} == PERSONAL
    assert not tables.DEDUP.personal_data  # idempotency records: ids and outcomes, 7 days


def test_off_by_default_the_tables_use_the_aws_owned_key_and_no_key_exists(synth):
    for table in synth.of_type("AWS::DynamoDB::Table").values():
        assert "SSESpecification" not in table["Properties"]
    assert synth.of_type("AWS::KMS::Key") == {}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        assert "kms:" not in json.dumps(policy["Properties"]["PolicyDocument"])


def test_on_the_personal_data_tables_and_only_they_use_the_customer_managed_key(encrypted_template):
    [(key_id, key)] = _of_type(encrypted_template, "AWS::KMS::Key").items()
    ids = _table_ids(encrypted_template)
    for logical_name, table_id in ids.items():
        sse = encrypted_template["Resources"][table_id]["Properties"].get("SSESpecification")
        if logical_name in PERSONAL:
            assert sse == {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}
        else:
            assert sse is None, logical_name


def test_on_the_key_rotates_and_outlives_the_stack_with_the_tables(encrypted_template):
    [key] = _of_type(encrypted_template, "AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True
    # A deleted key would leave the retained tables unreadable.
    assert key["DeletionPolicy"] == "Retain" and key["UpdateReplacePolicy"] == "Retain"


def test_on_the_key_policy_names_no_wildcard_principal_and_use_is_only_through_dynamodb(encrypted_template):
    [key] = _of_type(encrypted_template, "AWS::KMS::Key").values()
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    use_actions = {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*", "kms:*"}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        principal = statement["Principal"]
        assert principal != "*" and "*" not in _list(principal.get("AWS", [])), statement["Sid"]
        assert "kms:*" not in _list(statement["Action"]), statement["Sid"]
        if set(_list(statement["Action"])) & use_actions:
            # The account's own principals, through DynamoDB in this region, as their IAM policies allow.
            assert statement["Principal"]["AWS"]["Fn::Join"][1][-1] == ":root"
            condition = statement["Condition"]["StringEquals"]
            assert "dynamodb." in json.dumps(condition["kms:ViaService"])
            assert condition["kms:CallerAccount"] == {"Ref": "AWS::AccountId"}
    by_sid = {s["Sid"]: s for s in statements}
    # The DynamoDB service itself reads only the key's metadata.
    assert by_sid["DynamoDBReadsKeyMetadata"]["Principal"] == {"Service": "dynamodb.amazonaws.com"}
    assert all(
        a.split(":")[1].startswith(("Describe", "Get", "List")) for a in by_sid["DynamoDBReadsKeyMetadata"]["Action"]
    )
    # Administration, without use: no decrypt, encrypt or data keys for the account outside DynamoDB.
    assert not set(by_sid["AdministerByTheAccount"]["Action"]) & use_actions


def test_on_each_function_may_use_the_key_for_exactly_its_personal_tables_and_only_through_dynamodb(
    encrypted_template, synth
):
    [key_id] = _of_type(encrypted_template, "AWS::KMS::Key")
    ids = _table_ids(encrypted_template)
    for spec in FUNCTIONS:
        statements = _statements(encrypted_template, spec.name)
        on_key = [s for s in statements if key_id in json.dumps(s["Resource"])]
        assert all(not any(a.startswith("kms:") for a in _list(s["Action"])) for s in statements if s not in on_key)
        [statement] = on_key
        assert statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
        assert "dynamodb." in json.dumps(statement["Condition"]["StringEquals"]["kms:ViaService"])
        writes = any(
            WRITES & set(_list(s["Action"]))
            for s in statements
            for name in PERSONAL & set(spec.tables)
            if ids[name] in json.dumps(s["Resource"])
        )
        expected = {"kms:Decrypt"} | ({"kms:Encrypt", "kms:GenerateDataKey*"} if writes else set())
        assert set(_list(statement["Action"])) == expected, spec.name
        # The DynamoDB grants are those of the unencrypted stack, statement for statement.
        plain = [s for s in _statements(synth.template, spec.name)]
        assert [s for s in statements if s not in on_key] == plain, spec.name
