"""The local stack: the whole bot on loopback, nothing from AWS or Discord needed."""
