"""Adapters: the ports of ``memorybot.core.ports`` implemented against real services."""
