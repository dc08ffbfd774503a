"""NVIDIA XIDs: the catalog of codes, and XID events read from kernel log text."""
