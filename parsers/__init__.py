"""Format adapters: each turns one kind of profiler output into model tables (Arrow).

Installed as `advisor.parsers`. Every format is declared once in `registry` (name, file names, sniff,
parser module, version); a parser module exposes `FORMAT` and `parse(path, options) -> ParsedRun`, and
`advisor.ingest` asks the registry which one reads an input, then caches the result.
"""
