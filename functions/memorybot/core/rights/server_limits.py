"""The bounds of a server's settings (core/rights/servers.py), apart so that the command's definition
(discord/requests.py) names them without loading the settings' own module on a cold start."""

PERSONA_MAX_CHARS = 1000
MAX_CHANNELS = 25  # channels in an only/except list
DAILY_LIMIT_MAX = 10_000
