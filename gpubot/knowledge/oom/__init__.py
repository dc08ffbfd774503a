"""OOM triage: what kind of memory failure a workload's log shows, with evidence and advice."""
