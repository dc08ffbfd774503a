"""`gpubot` command line: one module per command group; `main` parses and dispatches."""

from gpubot.cli.main import main, parser, run

__all__ = ["main", "parser", "run"]
