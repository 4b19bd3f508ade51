"""What a model is shown and what it answers: which ten memories a reader sees (selection, ranking
the selection index's entries or the memories; recall; both_scopes, one choice over a scope's and
the person's "everywhere" memories), how conversation lines are quoted and dated (quoting), every
prompt and the strict parsing of its answer (prompts), and the decision model's verdicts read into
changes (decisions).

May import: record.
"""
