"""Operator import: DynamoDB requests and capacity per row, for a full request (the documented
200 rows), its dry run and a repeat of it, against moto on loopback through the real store.

The figures that matter deployed are the counts (one TransactWriteItems per imported row and
nothing else; one GetItem per row for a dry run; a repeat writes nothing): they do not depend
on moto. The wall time is moto's in this process, printed for scale, not DynamoDB's.
"""

from __future__ import annotations

import time

from benchmarks.dynamodb_cost_bench import READ_PRICE_PER_MILLION, WRITE_PRICE_PER_MILLION, Meter

USERS = 20


def main() -> None:

    from memorybot.adapters.dynamodb_memories import DynamoMemoryStore
    from memorybot.config import Settings
    from memorybot.core.record.domain import ScopeMode, utcnow
    from memorybot.core.rights.importing import MAX_IMPORT_ROWS, Importer, parse_import
    from memorybot.local import moto_dynamo

    moto = moto_dynamo.start()
    try:
        client = moto.client()
        moto_dynamo.create_tables(client, "imp-")
        store = DynamoMemoryStore(client, Settings.from_env({"MEMORYBOT_TABLE_PREFIX": "imp-"}))
        importer = Importer(store, ScopeMode.GUILD)
        rows = [
            {
                "userId": str(100000000000000000 + n % USERS),
                "scope": f"guild:{900000000000000000 + n % 3}",
                "text": f"Has a fact of ordinary length about their week, their work and their family, number {n}",
                "createdAt": "2026-01-01T00:00:00Z",
                "updatedAt": "2026-02-01T00:00:00Z",
                "id": f"legacy-{n:06d}",
            }
            for n in range(MAX_IMPORT_ROWS)
        ]
        meter = Meter(client)
        print(f"{MAX_IMPORT_ROWS} rows ({USERS} people, 3 servers), one request's worth, moto on loopback:")
        for label, dry_run in (("dry run", True), ("import", False), ("the same rows again", False)):
            before = meter.snapshot()
            started = time.perf_counter()
            request = parse_import({"memories": rows, "dryRun": dry_run}, now=utcnow())
            result = importer.run(request)
            elapsed = time.perf_counter() - started
            requests, wru, rru = (a - b for a, b in zip(meter.snapshot(), before, strict=True))
            per_row = sum(requests.values()) / len(rows)
            cost = 1000 * (wru * WRITE_PRICE_PER_MILLION + rru * READ_PRICE_PER_MILLION) / len(rows) / 1e6
            print(
                f"  {label:20s} imported {result.imported:3d}, unchanged {result.unchanged:3d}; "
                f"{per_row:.2f} requests a row ({', '.join(f'{op} {n}' for op, n in requests.most_common())}); "
                f"~{wru / len(rows):.1f} write, ~{rru / len(rows):.1f} read units a row "
                f"(${cost:.4f} per 1,000 rows); moto {elapsed:.2f} s"
            )
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
