"""The core: the domain, its ports, the typed messages between functions, and one use case per flow.

It knows nothing of boto3, httpx, Discord payloads or HTTP. Grouped by what happens, each package
importing only those before it (tests/unit/test_core_layers.py holds the order):

    record     the record and its ports: domain, person, changes, memory_record, dates, jobs, catalog
    prompting  what a model reads and answers: selection, recall, quoting, prompts, decisions
    rights     a person's (and an operator's) commands: show, forget, why, export, history, undo,
               pause, erasure, import, rollback
    turn       a /chat or "Remember this": conversation, reply (read path), extraction (write path)
    night      the nightly run: consolidation, its steps and their typed messages
"""
