"""Incidents and intake.

Alerts as Alertmanager and node agents send them, and how they join incidents.
"""
