"""Wire format and ZeroMQ: the core (bus), broadcasters and the listener. Uses tf2py.buffer."""
