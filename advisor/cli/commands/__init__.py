"""One module per subcommand. Each defines `NAME`, `HELP`, `register(parser)` and `run(args) -> int`.

`advisor.cli.main` discovers them by walking this package, so adding a command is adding a file.
"""
