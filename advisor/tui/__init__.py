"""`advisor tui`: a Textual app to explore a run (or a diff of two) in the terminal.

Only this package imports textual, rich and plotext; it reads data through advisor.engine.
"""
