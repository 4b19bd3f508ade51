"""A person's rights over their data, and an operator's on their behalf: /memory show, forget,
forget-all (begun here, its deletes run as a job) and export (commands), pause, resume and the
first-use notice (consent), history and its Undo (history), what a turn changed (receipts), why a
reply said what it said (why), a memory moved to be read everywhere and back (everywhere), erasure,
import, and a nightly run's rollback. And a server's admins' rights: their settings and the
server's figures (servers), with the settings' bounds apart for the cold start (server_limits).

May import: record, prompting.
"""
