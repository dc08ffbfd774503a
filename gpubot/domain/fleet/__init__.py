"""The fleet as the bot sees it.

Clusters, nodes, pods, workloads, Slurm jobs and idle-GPU reclamation.
"""
