"""Pure values and rules: no I/O, no vendor libraries."""
