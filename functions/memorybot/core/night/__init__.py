"""The night: the day's messages consolidated per speaker, stale memories reviewed, the diary
(consolidation), and the run cut into the state machine's steps with their typed messages
(nightly_steps, nightly_jobs).

May import: record, prompting, rights, turn.
"""
