"""The record and its ports: what a memory, a message, a person and a ledger row are (domain, person,
changes, the memory record's one codec), dates and times, the typed messages between functions
(jobs), the catalog of every text a person sees, and the ports the adapters implement.

May import: the standard library only (no other core package).
"""
