"""HTTP service: Alertmanager webhook, probes and metrics (Starlette)."""
