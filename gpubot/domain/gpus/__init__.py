"""Per-GPU knowledge over time.

The health ledger, escalation from it, and evidence kept from nodes.
"""
