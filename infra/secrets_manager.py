"""The three secrets (Discord public key, bot token, admin secret): created with a random value, named under a prefix.

Built on the stack's own scope with the ids they were deployed with (tests/infra/test_logical_ids.py).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_secretsmanager as secretsmanager

from memorybot.config import SECRET_KEYS

from .settings import StackConfig

SECRET_SUFFIX = {
    "DISCORD_PUBLIC_KEY": "discord-public-key",
    "DISCORD_BOT_TOKEN": "discord-bot-token",
    "MEMORYBOT_ADMIN_SECRET": "admin-secret",
}


def secret_name(config: StackConfig, key: str) -> str:
    return f"{config.secret_prefix}/{SECRET_SUFFIX[key]}"


def build_secrets(stack: Stack, config: StackConfig) -> dict[str, secretsmanager.Secret]:
    """Every secret, by its key in SECRET_KEYS."""
    return {key: _secret(stack, config, key) for key in SECRET_KEYS}


def _secret(stack: Stack, config: StackConfig, key: str) -> secretsmanager.Secret:
    # Created with a random placeholder; the operator puts the real value (see the README, "Put the three secrets").
    # The admin secret's random value is usable as it is.
    return secretsmanager.Secret(
        stack,
        "".join(part.capitalize() for part in SECRET_SUFFIX[key].split("-")) + "Secret",
        secret_name=secret_name(config, key),
        description=f"memorybot {key}",
        generate_secret_string=secretsmanager.SecretStringGenerator(password_length=48, exclude_punctuation=True),
        removal_policy=RemovalPolicy.DESTROY,
    )
