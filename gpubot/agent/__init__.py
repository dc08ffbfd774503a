"""Node agent: GPU reads and actions over NVML (pynvml), DCGM diagnostics, XID forwarding."""
