"""Real adapters behind the ports: Kubernetes, node agent, Prometheus, the store."""
