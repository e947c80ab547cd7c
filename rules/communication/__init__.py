"""Communication rules: collectives and P2P not hidden behind compute, imbalance across ranks."""
