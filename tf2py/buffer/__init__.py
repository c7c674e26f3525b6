"""The transform store: time caches, the frame tree, lookups and maths (``BufferCore``, over
the compiled kernel in ``_kernel/``), and ``Buffer``, which adds waits and the index of
waiting requests; ``Transforms`` (N transforms as columns), the messages, time, tf2's
exceptions, asyncio lookups and tf2_ros's ``MessageFilter``.

No sockets. No threads of its own but ``MessageFilter``'s timer, which runs only while a
message waits for its timeout. ``docs/architecture.md`` follows one lookup through it.
"""
