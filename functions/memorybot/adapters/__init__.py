"""Adapters: the ports of ``memorybot.core.record.ports`` implemented against real services."""
