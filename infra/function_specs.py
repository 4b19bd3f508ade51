"""What each function is and may touch: one spec per function, the one place its grants are declared.

The stack builds a function, its role and its policy from its spec (functions.py, grants.py);
tests/infra/test_iam_contract.py holds the table grants to exactly the requests the code makes.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration

# DynamoDB access per function and table, action by action: exactly the requests the function's
# code makes (tests/infra/test_iam_contract.py records them and fails on any miss or any unused
# grant). A transaction needs the action of each of its items (Put -> PutItem, ...).
# Nothing batches, and nothing may Scan but the nightly review (the bounded vector backfill).
# Powertools idempotency on the dedup table: a conditional put (a duplicate gets the stored record
# back in the same answer, so no GetItem), the result stored by update, the record given back by
# delete when the work raised.
IDEMPOTENCY_ACTIONS = ("PutItem", "UpdateItem", "DeleteItem")
# The one function that may change a ledger row: the erase function redacts a person's rows
# (grants.py, grant_ledger_redaction).
LEDGER_REDACTOR = "Erase"


@dataclass(frozen=True)
class TableAccess:
    actions: tuple[str, ...] = ()  # on the table itself, e.g. "GetItem", "Query"
    indexes: tuple[str, ...] = ()  # the indexes the function queries (dynamodb:Query on each)


def access(*actions: str, indexes: tuple[str, ...] = ()) -> TableAccess:
    return TableAccess(tuple(actions), tuple(indexes))


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # construct id, and the module under memorybot.handlers
    description: str
    memory_mb: int
    timeout: Duration
    tables: dict[str, TableAccess]  # logical table name -> what the function does there
    secrets: tuple[str, ...] = ()  # keys of SECRET_KEYS
    bedrock: bool = False
    entry: str = ""  # "module.function" under memorybot.handlers; default "<name lower>.handler"
    manifests: tuple[str, ...] = ()  # on the nightly manifest bucket's objects: "PutObject", "GetObject"

    @property
    def handler(self) -> str:
        return f"memorybot.handlers.{self.entry or self.name.lower() + '.handler'}"


FUNCTIONS = (
    FunctionSpec(
        "Interactions",
        "Discord interactions: verify, answer within 3 s, hand /chat to the reply worker",
        memory_mb=512,  # more memory is more CPU: a faster cold start
        timeout=Duration.seconds(10),
        tables={
            # /chat stores the message (in a transaction with the person's check); GetItem finds a
            # store whose answer was lost
            "messages": access("PutItem", "GetItem"),
            # ConditionCheckItem: /chat's line is stored only for a person not erased since; GetItem:
            # show says when memory is paused, export includes the switch; UpdateItem: pause and
            # resume (with their ledger row), the forget-all stamp
            "people": access("ConditionCheckItem", "GetItem", "UpdateItem"),
            # /memory show, why and the autocomplete read the profile; forget reads and deletes one,
            # and adds its sources to the owner's forgotten-sources item (UpdateItem, same transaction);
            # export finds the person's scopes (by_user) and reads that item; /memory history's Undo
            # puts a memory back as it was before a change (PutItem); "Remember this" claims its
            # message (a conditional PutItem; GetItem when it was refused: is the claim this click's?)
            # and gives the claim back when the hand-off failed (DeleteItem); Query: the person's
            # "everywhere" memories (their own partition), shown, counted and moved (Delete and Put)
            "memories": access(
                "GetItem", "DeleteItem", "UpdateItem", "PutItem", "Query", indexes=("by_updated", "by_user")
            ),
            # read rows and the forget's row; GetItem finds a forget whose answer was lost, and the
            # change an Undo names; export reads the person's rows (Query) in every scope they have
            # rows in (by_user), /memory history their change rows in one scope
            "memory_log": access("PutItem", "GetItem", "Query", indexes=("by_user",)),
            "dedup": access(*IDEMPOTENCY_ACTIONS),  # a replayed /memory show sends no second DM
            # The server's settings (GetItem, with show's totals); a change and its ledger row (one
            # transaction of two Puts); the turn and forget counters (UpdateItem); show's days and
            # recent changes (Query, the server's own partition)
            "servers": access("GetItem", "PutItem", "UpdateItem", "Query"),
        },
        secrets=("DISCORD_PUBLIC_KEY", "DISCORD_BOT_TOKEN"),
    ),
    FunctionSpec(
        "Reply",
        "Reply worker: memories + channel log -> chat model -> Discord followup",
        memory_mb=512,
        timeout=Duration.seconds(90),
        tables={
            # PutItem: the reply, in a transaction with the person's check; GetItem: a store whose answer was lost
            "messages": access("PutItem", "GetItem", "Query"),
            # Query: the person's profile (one partition) and their "everywhere" one, for relevance
            # selection: a small one whole, a large one's selection index; GetItem: that index's header
            # (a kept copy's check) and the night's note (DeleteItem: claimed on the next use);
            # BatchGetItem: the index's chunks changed since the copy
            "memories": access("Query", "GetItem", "DeleteItem", "BatchGetItem"),
            "memory_log": access("PutItem"),
            # GetItem: the switch, read alongside the profile; UpdateItem: the first-use notice's
            # claim (and its release when the notice could not be sent); ConditionCheckItem: the reply
            # is stored only for a person not erased since the turn began
            "people": access("GetItem", "UpdateItem", "ConditionCheckItem"),
            "dedup": access(*IDEMPOTENCY_ACTIONS),
            "servers": access("GetItem", "UpdateItem"),  # the server's settings (memory, persona); its counters
        },
        secrets=("DISCORD_BOT_TOKEN",),  # its Discord client carries the token (channel history)
        bedrock=True,
    ),
    FunctionSpec(
        "Extraction",
        "Extraction worker: decide, rewrite and log memory changes after a reply; a confirmed forget-all",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_conversation",)),  # the person's own exchange, nothing else
            # GetItem: the sources of the memories the person forgot (one item), never learned from again;
            # Query: a small profile, or a large one's selection index; BatchGetItem: the ten chosen
            # from it; UpdateItem: a written memory's vector, stored after its write only if the record
            # is still as written (no ledger row), and each change's selection index entry; PutItem,
            # DeleteItem: the memory writes, and the index built from a whole read where none was; a
            # "Remember this" job settles its message's claim: learned (UpdateItem) or given back (DeleteItem).
            # The forget-all job: the profile read newest first (by_updated), each memory deleted with
            # its row and its sources added to the forgotten-sources item (UpdateItem, same transaction)
            "memories": access(
                "GetItem", "PutItem", "DeleteItem", "Query", "UpdateItem", "BatchGetItem", indexes=("by_updated",)
            ),
            "memory_log": access("PutItem", "GetItem"),
            # GetItem: paused? learned from what? (before any model call); ConditionCheckItem: each
            # write checks the record again in its own transaction; UpdateItem: the forget-all job
            # marks its scope done
            "people": access("GetItem", "ConditionCheckItem", "UpdateItem"),
            "dedup": access(*IDEMPOTENCY_ACTIONS),
            "servers": access("GetItem", "UpdateItem"),  # memory still on here? the server's counters
        },
        bedrock=True,
    ),
    # The nightly run: one thin Lambda per state of the state machine (nightly.py, NightlyRun).
    FunctionSpec(
        "NightlyClaim",
        "Nightly step: claim the JST day (03:00 JST)",
        memory_mb=256,
        timeout=Duration.seconds(30),
        tables={"nightly_runs": access("GetItem", "PutItem", "UpdateItem")},  # the claim's transaction and a takeover
        entry="nightly.claim",
    ),
    FunctionSpec(
        "NightlyPlan",
        "Nightly step: the day's speakers and their message ids, written as the map's manifest",
        memory_mb=512,
        timeout=Duration.minutes(2),
        tables={
            "messages": access(indexes=("by_jst_day",)),
            "servers": access("GetItem"),  # each speaker's server: memory off, or on again since
        },
        entry="nightly.plan",
        manifests=("PutObject",),
    ),
    FunctionSpec(
        "NightlySpeaker",
        "Nightly step: one speaker's newest chunks through the extraction path",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_conversation",)),  # the speaker's own lines, by id
            # GetItem: the sources of the speaker's forgotten memories (one item); Query, BatchGetItem:
            # the profile or its selection index and the chosen; UpdateItem: a written memory's vector
            # and index entries; PutItem, DeleteItem: the writes and the index's build, as the extraction worker
            "memories": access("GetItem", "PutItem", "DeleteItem", "Query", "UpdateItem", "BatchGetItem"),
            "memory_log": access("PutItem", "GetItem"),  # GetItem: a change whose answer was lost
            "nightly_runs": access("GetItem", "PutItem"),  # the speaker's mark: checked first, written once
            "people": access("GetItem", "ConditionCheckItem"),  # as the extraction worker
            "servers": access("GetItem", "UpdateItem"),  # as the extraction worker
        },
        bedrock=True,
        entry="nightly.speaker",
    ),
    FunctionSpec(
        "NightlySpeakerFailed",
        "Nightly step: record a speaker that failed after its retries",
        memory_mb=256,
        timeout=Duration.seconds(30),
        tables={"nightly_runs": access("GetItem", "PutItem")},
        entry="nightly.speaker_failed",
    ),
    FunctionSpec(
        "NightlyReview",
        "Nightly step: the stale review (decay), the vector backfill and the diary",
        memory_mb=512,
        timeout=Duration.minutes(5),
        tables={
            "messages": access(indexes=("by_jst_day",)),  # the diary's last 30 lines
            # DeleteItem: a decay; UpdateItem: the review mark of a kept record, and a backfilled vector;
            # Scan: the vector backfill's bounded pass (a few pages a night, from where the last stopped)
            # ending: the memories whose end has come, reviewed first
            "memories": access("DeleteItem", "UpdateItem", "Scan", indexes=("stale", "review_queue", "ending")),
            "memory_log": access("PutItem", "GetItem"),
            "nightly_runs": access("GetItem", "PutItem"),
            # GetItem: whose memory is paused (their memories are neither reviewed nor embedded)
            "people": access("GetItem"),
            # the servers' own diaries: their settings (GetItem), a refused post and the counters (UpdateItem)
            "servers": access("GetItem", "UpdateItem"),
        },
        secrets=("DISCORD_BOT_TOKEN",),  # a server's diary is posted to its channel
        bedrock=True,
        entry="nightly.review",
    ),
    FunctionSpec(
        "NightlyFinish",
        "Nightly step: the run record (summary, decayed, model calls, failed speakers)",
        memory_mb=512,
        timeout=Duration.minutes(2),
        tables={
            "memory_log": access(indexes=("by_run",)),  # the run's changes, each once
            "nightly_runs": access("GetItem", "UpdateItem"),
        },
        entry="nightly.finish",
        manifests=("GetObject",),
    ),
    FunctionSpec(
        "Admin",
        "Admin rollback of a nightly run and operator import (admin secret)",
        memory_mb=512,
        timeout=Duration.seconds(29),  # API Gateway's own limit
        tables={
            # rollback: reverts; import: each memory with its marker (PutItem), a dry run's marker check (GetItem);
            # UpdateItem: each change's entry in the owner's selection index (same transaction)
            "memories": access("GetItem", "PutItem", "DeleteItem", "UpdateItem"),
            # the rows of both; GetItem finds a change whose answer was lost
            "memory_log": access("PutItem", "GetItem", indexes=("by_run",)),
            "nightly_runs": access("GetItem", "UpdateItem"),  # the lease and the rolled-back mark
            # a restore, and each import row, is checked against the person's record in its transaction;
            # GetItem: a rollback's dry run reads the record that check would read
            "people": access("GetItem", "ConditionCheckItem"),
        },
        secrets=("MEMORYBOT_ADMIN_SECRET",),
    ),
    FunctionSpec(
        LEDGER_REDACTOR,
        "Erasure of one person (admin secret): memories, messages, and the text of their ledger rows",
        memory_mb=512,
        timeout=Duration.seconds(29),  # API Gateway's own limit
        tables={
            # every scope (by_user), each profile (by_updated), each memory deleted with its row
            # Query: the owner's partition, for the records no reader can read (deleted all the same),
            # and their selection index (deleted last); UpdateItem: each delete's index entry (same transaction)
            "memories": access("GetItem", "DeleteItem", "Query", "UpdateItem", indexes=("by_updated", "by_user")),
            # UpdateItem: the redaction, granted apart and conditioned (see grants.grant_ledger_redaction)
            "memory_log": access("PutItem", "GetItem", "Query", indexes=("by_user",)),
            # their own lines (by_author) and the bot's replies to them (by_conversation_of)
            "messages": access("DeleteItem", indexes=("by_author", "by_conversation_of")),
            # GetItem: the switch counts as the person's data; PutItem: the record becomes the erasure's marker
            "people": access("GetItem", "PutItem"),
            # each server's figures without the person (their digest out of its count of people)
            "servers": access("UpdateItem"),
        },
        secrets=("MEMORYBOT_ADMIN_SECRET",),
    ),
)
