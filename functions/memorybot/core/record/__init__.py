"""The record and its ports: what a memory, a message, a person and a ledger row are (domain, person,
changes, the memory record's one codec), dates and times, the typed messages between functions
(jobs, the forget-all's job among them), the catalog of every text a person sees (catalog, with
texts_receipts and texts_admins, in the languages of language), the ports the adapters implement
(ports: the tables' roles; service_ports: models, Discord, the worker hand-off, metrics), and the
metric names with how a turn, a forget and a night become counts (metrics).

May import: the standard library only (no other core package).
"""
