"""Kernel performance: rooflines, bound classification, and the Nsight Compute <-> timeline join.

Sits between the metrics layer and the rules: rules read `classify_run` verdicts and `join`
results; the HTML report and the TUI draw `figure.ncu_figure` / `figure.ops_figure` data. Every number states
its basis (which counters, which peak, which source) so a verdict can be checked by hand.
"""
