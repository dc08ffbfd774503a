"""The runbooks shipped with gpubot (YAML files; this file makes them installable data)."""
