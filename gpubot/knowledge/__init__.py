"""GPU failure knowledge, offline: XID catalog and kernel-log parsing, OOM triage, DCGM output.

Pure functions over text. It imports nothing else from gpubot, so `gpubot triage oom` and
`gpubot xid` work without a cluster, a store or a config, and other tools may use it alone.
"""
