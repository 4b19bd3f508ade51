"""The core: the domain, its ports, the typed messages between functions, and one use case per flow.

It knows nothing of boto3, httpx, Discord payloads or HTTP. Grouped by what happens, each package
importing only those before it (tests/unit/test_core_layers.py holds the order):

    record     the record and its ports: domain, person, changes, memory_record, dates, jobs, the
               catalog (with its receipts' and admins' tables), ports and service_ports, metrics
    prompting  what a model reads and answers: selection, recall, both_scopes, quoting, prompts,
               decisions
    rights     a person's (and an operator's) commands: show, forget, forget-all (a job), why,
               export, history, undo, pause, receipts, Why?, everywhere/here, erasure, import,
               rollback; and a server's admins' settings (servers, server_limits)
    turn       a /chat or "Remember this": conversation, reply (read path), extraction (write path)
    night      the nightly run: its window and numbers, consolidation, its steps and typed messages
"""
