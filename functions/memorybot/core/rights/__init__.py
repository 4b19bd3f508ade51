"""A person's rights over their data, and an operator's on their behalf: /memory show, forget,
forget-all, why, export (commands), pause, resume and the first-use notice (consent), history and
its Undo (history), erasure, import, and a nightly run's rollback.

May import: record, prompting.
"""
