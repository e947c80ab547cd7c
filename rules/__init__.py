"""Rules: one rule per file under <category>/. Installed as advisor.rules."""
