"""The ``tf2py`` command: one module per subcommand (``NAME``, ``HELP``, ``configure``,
``run``, and optionally ``DESCRIPTION`` and ``EPILOG``), listed in ``main.COMMANDS``; ``main``
parses and prints a ``CommandError`` as one line. A command parses its arguments, calls the
rooms below (buffer, transport, robot, server, bag, viz, doctor) and prints; ``common`` holds
what they share (Ctrl-C and SIGTERM as a clean stop, ``--core``, ``flag_number``, ``cut``).
Only the work no library caller needs lives here: launch files and their processes
(``launch``, ``launch_file``), the Graphviz drawing (``view_frames``), monitor's rate and
delay statistics, ``--use-sim-time`` (``sim_time``) and the check that a core echoes
statics (``core_check``)."""
