"""Adapters: the ports of ``memorybot.ports`` implemented against real services."""
