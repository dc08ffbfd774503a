"""Fixtures of the web tests (defined in web_harness)."""

from web_harness import _no_env_config, harness, make_harness

__all__ = ["_no_env_config", "harness", "make_harness"]
