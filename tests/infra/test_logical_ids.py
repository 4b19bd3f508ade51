"""The logical ids of everything that holds data, pinned.

CloudFormation replaces a resource whose logical id changed: for a table, the memories and the
ledger are gone; for the key, the tables it encrypts are unreadable; for a secret, the operator's
values. A logical id follows from the construct's path, so a refactor of infra/ that moves a
table into a nested construct would change it silently; this list makes it fail here first.
A new resource of these kinds is added to the list on purpose, with its id.
"""

from __future__ import annotations

STATEFUL_TYPES = (
    "AWS::DynamoDB::Table",
    "AWS::KMS::Key",
    "AWS::SecretsManager::Secret",
    "AWS::S3::Bucket",
    "AWS::SQS::Queue",
)

# With encrypt_personal_data on: the default stack plus the personal-data key.
PINNED = {
    "PersonalDataKeyAF90130A": "AWS::KMS::Key",
    "MessagesTable05B58A27": "AWS::DynamoDB::Table",
    "MemoriesTableD97C7518": "AWS::DynamoDB::Table",
    "MemoryLogTable66899368": "AWS::DynamoDB::Table",
    "NightlyRunsTable29EBA93E": "AWS::DynamoDB::Table",
    "DedupTable8CDC25BD": "AWS::DynamoDB::Table",
    "PeopleTableAF298A5B": "AWS::DynamoDB::Table",  # the person record (docs/consent.md)
    "ServersTable52E78352": "AWS::DynamoDB::Table",  # a server's settings and figures (docs/admins.md)
    "NightlyManifestsD70CF3F2": "AWS::S3::Bucket",
    "DiscordPublicKeySecret0E12FF25": "AWS::SecretsManager::Secret",
    "DiscordBotTokenSecret6314F565": "AWS::SecretsManager::Secret",
    "AdminSecretSecretFCD1577C": "AWS::SecretsManager::Secret",
    "DeadLettersBBF8BAAB": "AWS::SQS::Queue",
}


def test_every_resource_that_holds_data_keeps_its_logical_id(encrypted_template):
    stateful = {
        logical_id: resource["Type"]
        for logical_id, resource in encrypted_template["Resources"].items()
        if resource["Type"] in STATEFUL_TYPES
    }
    assert stateful == PINNED, (
        "a stateful resource's logical id changed, appeared or went: a deployed stack would replace it "
        f"(lose its data). Missing: {sorted(set(PINNED) - set(stateful))}; new: {sorted(set(stateful) - set(PINNED))}"
    )
