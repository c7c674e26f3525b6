"""The pure transform store: time caches, the frame tree, lookups and math.

No sockets and no threads of its own; the thread-safe ``Buffer`` adds only a lock and a
condition on top of ``BufferCore``.
"""
