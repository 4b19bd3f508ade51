"""The Discord edge: interaction payloads in, answers out; request signatures; Discord's id formats."""
