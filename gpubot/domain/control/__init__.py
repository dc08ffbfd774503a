"""Who may do what.

Approvals, safety caps, node pools, signed votes, credentials and the audit chain.
"""
