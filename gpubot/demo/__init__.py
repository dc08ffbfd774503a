"""The demo: an XID 79 incident end to end on the simulated cluster."""
