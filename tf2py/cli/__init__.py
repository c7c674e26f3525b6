"""The tf2py command: argument parsing and printing, and the work only commands need
(launch files and their processes, the Graphviz drawing, monitor's statistics); the rooms
below do the rest."""
