"""A turn: a /chat or "Remember this" heard and answered (conversation), the reply written from the
person's own memories (reply, the read path), and what the exchange teaches written after it
(extraction, the write path).

May import: record, prompting, rights.
"""
