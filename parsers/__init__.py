"""Format adapters: each turns one kind of profiler output into model tables (Arrow).

Installed as `advisor.parsers`. A parser module exposes `FORMAT`, `sniff(path) -> bool` and
`parse(path, options) -> ParsedRun`; `advisor.ingest` picks the parser and caches the result.
"""
