"""Node agent (pynvml): arrives with the node-agent issue."""
