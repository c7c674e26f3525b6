"""The tf2py command: argument parsing and printing only."""
