"""gpubot: incident-response ChatOps bot for GPU Kubernetes clusters."""

__version__ = "0.1.0"
