"""The night: which 24 hours a run covers, its caps and chunks (window); the day's messages
consolidated per speaker, stale memories reviewed, the diary and each server's own (consolidation);
and the run cut into the state machine's steps with their typed messages (nightly_steps,
nightly_jobs).

May import: record, prompting, rights, turn.
"""
