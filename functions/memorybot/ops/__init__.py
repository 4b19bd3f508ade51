"""Operator tools run from a workstation with the operator's credentials (never deployed)."""
