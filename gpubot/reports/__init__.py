"""Scheduled reports (APScheduler): arrive with the idle-GPU issue."""
