"""Analyses over the model: summaries, verdicts, rule execution."""
