"""Every DynamoDB table, defined once.

The CDK stack, the local stack and the tests all build their tables from these
specs; the adapters read attribute and index names from here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    """A key attribute: its name and DynamoDB type."""

    name: str
    type: str  # "S" or "N"


@dataclass(frozen=True)
class Index:
    """A secondary index."""

    name: str
    partition: Key
    sort: Key | None = None


@dataclass(frozen=True)
class TableSpec:
    """One table, as every user of it builds or names it."""

    logical_name: str  # also the default physical name locally
    env_var: str  # where deployed functions find the physical name
    partition: Key
    sort: Key | None = None
    local_indexes: tuple[Index, ...] = ()
    global_indexes: tuple[Index, ...] = ()
    ttl_attribute: str | None = None
    retain: bool = True  # data tables survive stack deletion
    # Holds what people said or what is known about them: such a table is encrypted with the
    # customer-managed key when the stack's encrypt_personal_data is on. A new table is personal
    # unless it says otherwise.
    personal_data: bool = True

    def attribute_definitions(self) -> list[dict[str, str]]:
        keys: dict[str, str] = {}
        for key in self._all_keys():
            keys[key.name] = key.type
        return [{"AttributeName": n, "AttributeType": t} for n, t in keys.items()]

    def _all_keys(self) -> list[Key]:
        keys = [self.partition] + ([self.sort] if self.sort else [])
        for index in self.local_indexes + self.global_indexes:
            keys.append(index.partition)
            if index.sort:
                keys.append(index.sort)
        return keys

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        """Arguments for boto3 ``create_table`` (on-demand billing)."""
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "KeySchema": _key_schema(self.partition, self.sort),
            "AttributeDefinitions": self.attribute_definitions(),
            "BillingMode": "PAY_PER_REQUEST",
        }
        for argument, indexes in (
            ("LocalSecondaryIndexes", self.local_indexes),
            ("GlobalSecondaryIndexes", self.global_indexes),
        ):
            if indexes:
                kwargs[argument] = [
                    {
                        "IndexName": i.name,
                        "KeySchema": _key_schema(i.partition, i.sort),
                        "Projection": {"ProjectionType": "ALL"},
                    }
                    for i in indexes
                ]
        return kwargs


def _key_schema(partition: Key, sort: Key | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition.name, "KeyType": "HASH"}]
    if sort:
        schema.append({"AttributeName": sort.name, "KeyType": "RANGE"})
    return schema


# Stale memories are found through a sparse GSI spread over a few shards so that
# one hot partition does not hold every memory; the shard is derived from user_id.
STALE_SHARDS = 4

# owner = "<scope>#<user_id>" (domain.Owner.key): one person's profile within one scope
# (a server, their DM with the bot, or "global"). Every read and write is keyed by it.
MEMORIES = TableSpec(
    logical_name="memories",
    env_var="MEMORIES_TABLE",
    partition=Key("owner", "S"),
    sort=Key("memory_id", "S"),
    local_indexes=(Index("by_updated", Key("owner", "S"), Key("updated_at", "S")),),
    # review_queue orders the stale review: review_after = the later of updated_at and the last
    # review's reviewed_at, so a record kept at review goes behind those not yet reviewed. The
    # older "stale" index (by updated_at) still finds records written before review_after existed.
    # by_user: every scope of one person (export and erasure); the owners' items carry user_id.
    global_indexes=(
        Index("stale", Key("stale_shard", "S"), Key("updated_at", "S")),
        Index("review_queue", Key("stale_shard", "S"), Key("review_after", "S")),
        Index("by_user", Key("user_id", "S"), Key("owner", "S")),
        # Sparse: only memories with an end (valid_until) carry ends_at, the moment it ends; the
        # nightly review takes those ended and untouched since first.
        Index("ending", Key("stale_shard", "S"), Key("ends_at", "S")),
    ),
)

# One row per read or change. entry_key = "<iso time>#<entry id>" orders an owner's rows by time.
MEMORY_LOG = TableSpec(
    logical_name="memory_log",
    env_var="MEMORY_LOG_TABLE",
    partition=Key("owner", "S"),
    sort=Key("entry_key", "S"),
    # Sparse: only rows written by a nightly run (or its rollback) carry run_id.
    # by_user: one person's rows in every scope (export and erasure find their scopes by it).
    global_indexes=(
        Index("by_run", Key("run_id", "N"), Key("entry_key", "S")),
        Index("by_user", Key("user_id", "S"), Key("entry_key", "S")),
    ),
    # Only read rows carry it (the retention of reads, Settings.ledger_read_retention_days):
    # change rows never expire.
    ttl_attribute="expiration",
)

# The one change an erasure makes to a ledger row: before/after go and a flag says so (the
# skeleton stays). The erase function's policy may name only these and the key.
MEMORY_LOG_REDACTED = ("before", "after", "redacted")

# message_id is the Discord snowflake, a number, so it orders by time. by_conversation is
# sparse: conversation = "<channel_id>#<user_id>" only on a person's /chat messages and the
# bot's replies to them, so one query reads exactly that person's exchange.
MESSAGES = TableSpec(
    logical_name="messages",
    env_var="MESSAGES_TABLE",
    partition=Key("channel_id", "S"),
    sort=Key("message_id", "N"),
    global_indexes=(
        Index("by_jst_day", Key("jst_day", "S"), Key("message_id", "N")),
        Index("by_conversation", Key("conversation", "S"), Key("message_id", "N")),
        # Everything one person wrote (erasure).
        Index("by_author", Key("author_id", "S"), Key("message_id", "N")),
        # Sparse like by_conversation: every line of one person's conversations with the bot, in
        # every channel, keyed by the person (conversation_of). The bot's replies to them are found
        # by the person they answer, even when none of the person's own lines is left (erasure).
        Index("by_conversation_of", Key("conversation_of", "S"), Key("message_id", "N")),
    ),
)

# run_key: "run#<id>" for a run, "day#<YYYY-MM-DD>" for the claim of a JST day,
# "counter" for the last run id handed out.
NIGHTLY_RUNS = TableSpec(
    logical_name="nightly_runs",
    env_var="NIGHTLY_RUNS_TABLE",
    partition=Key("run_key", "S"),
)

# The Powertools idempotency table: the dedup ledger, 7-day TTL.
DEDUP = TableSpec(
    logical_name="dedup",
    env_var="DEDUP_TABLE",
    partition=Key("id", "S"),
    ttl_attribute="expiration",
    retain=False,
    # Idempotency records for 7 days (interaction ids, outcomes, memory ids): never message or memory text.
    personal_data=False,
)
DEDUP_TTL_SECONDS = 7 * 24 * 3600

# One small record per person, everywhere the bot knows them (not per scope): the memory switch
# (paused_at, resumed_at), the scopes where the first-use notice was given (noticed), and the
# markers that make forgetting final: erased_at (an operator's erasure) and one
# "forgot_all_at:<scope>" attribute per scope the person ran /memory forget-all in. Every writer
# of a person's data checks it in the same transaction as its write (core/rights/consent.py says what
# each checks). A table of its own, so that nothing in it can be mistaken for a scope (memories'
# by_user finds scopes) and no index ever lists it.
PEOPLE = TableSpec(
    logical_name="people",
    env_var="PEOPLE_TABLE",
    partition=Key("user_id", "S"),
)

# One partition per server (/memory-settings, core/rights/servers.py), item_key names the item:
# "settings" (the server's settings), "change#<iso time>#<id>" (each change's ledger row, written in
# the same transaction), "day#<YYYY-MM-DD>" (the day's turns and model requests), "totals" (memories
# and a digest per person with memories) and "member#<YYYY-MM-DD>#<user id>" (a member's turns that
# day, for the daily limit). Day and member counters expire (``expiration``); settings and their
# ledger rows never do.
SERVERS = TableSpec(
    logical_name="servers",
    env_var="SERVERS_TABLE",
    partition=Key("guild_id", "S"),
    sort=Key("item_key", "S"),
    ttl_attribute="expiration",
)

ALL_TABLES: tuple[TableSpec, ...] = (MESSAGES, MEMORIES, MEMORY_LOG, NIGHTLY_RUNS, DEDUP, PEOPLE, SERVERS)


def create_tables(client: Any, names: dict[str, str] | None = None) -> None:
    """Create every table (skipping ones that exist) with a boto3 DynamoDB client."""
    names = names or {}
    existing = set(client.list_tables().get("TableNames", []))
    for spec in ALL_TABLES:
        name = names.get(spec.logical_name, spec.logical_name)
        if name in existing:
            continue
        client.create_table(**spec.create_table_kwargs(name))
        if spec.ttl_attribute:
            client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute}
            )
