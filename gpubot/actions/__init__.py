"""Built-in runbook steps; they talk to ports only."""
