"""Runbooks and plans.

The file format, loading, templating, plans and the runs that execute them.
"""
