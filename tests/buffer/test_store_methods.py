"""The store's public entries are the kernel's own functions as methods of its class
(``kernel.kernel_entry``, ``_kernel/py_method.hpp``): real signatures and docstrings, the
calling conventions of Python methods, and clear errors for whatever a caller passes."""

from __future__ import annotations

import inspect
import math
import pydoc
import subprocess
import sys

import pytest

from tf2py import Buffer, BufferCore, TransformException, make_transform
from tf2py.buffer import _kernel_ext
from tf2py.buffer.kernel import kernel_entry

ENTRIES = [(BufferCore, "lookup_transform", ("target_frame", "source_frame", "time")),
           (BufferCore, "can_transform", ("target_frame", "source_frame", "time")),
           (BufferCore, "set_transform", ("transform", "authority", "is_static")),
           (Buffer, "lookup_transform", ("target_frame", "source_frame", "time", "timeout")),
           (Buffer, "can_transform", ("target_frame", "source_frame", "time", "timeout"))]


def store(cls: type[BufferCore]) -> BufferCore:
    s = cls()
    s.set_transform(make_transform("map", "base", (1.0, 2.0, 3.0), stamp=10.0), "test")
    return s


@pytest.mark.parametrize(("cls", "name", "parameters"), ENTRIES)
def test_each_entry_has_its_signature_docstring_and_name(cls, name, parameters):
    method = getattr(cls, name)
    assert tuple(inspect.signature(method).parameters) == ("self", *parameters)
    assert tuple(inspect.signature(getattr(cls(), name)).parameters) == parameters
    assert method.__name__ == name and method.__qualname__ == f"{cls.__name__}.{name}"
    assert method.__doc__ and method.__doc__ == method.__wrapped__.__doc__
    page = pydoc.plain(pydoc.render_doc(method))
    assert f"{name}(self, {parameters[0]}" in page and inspect.getdoc(method).splitlines()[0] in page


def test_the_entries_take_keywords_and_positions_alike():
    for cls in (BufferCore, Buffer):
        s = store(cls)
        by_position = s.lookup_transform("map", "base", 10.0)
        by_name = s.lookup_transform(time=10.0, source_frame="base", target_frame="map")
        assert by_position == by_name and by_name.transform.translation.z == 3.0
        assert cls.lookup_transform(s, "map", "base", 10.0) == by_position  # unbound, as any method
        assert s.can_transform("map", "base", time=10.0) is True
        assert s.set_transform(make_transform("map", "b2", stamp=10.0), authority="x", is_static=True)
    assert store(Buffer).can_transform("map", "nowhere", 10.0, timeout=0.01) is False


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((), {}, "missing required argument 'target_frame'"),
    (("map",), {}, "missing required argument 'source_frame'"),
    (("map", "base", 10.0, 0.0, 1), {}, "at most"),
    (("map", "base"), {"time": 1.0, "colour": 2}, "unexpected keyword argument 'colour'"),
    (("map", "base", 1.0), {"time": 1.0}, "multiple values for argument 'time'"),
])
def test_wrong_calls_are_type_errors_that_say_what_is_wrong(args, kwargs, message):
    s = store(Buffer)
    with pytest.raises(TypeError, match=message):
        s.lookup_transform(*args, **kwargs)
    assert s.lookup_transform("map", "base", 10.0).transform.translation.x == 1.0  # still fine


def test_an_entry_called_on_something_that_is_not_a_store_is_a_type_error():
    for not_a_store in (None, 5, object(), _kernel_ext.Kernel(10)):
        with pytest.raises(TypeError, match="needs a BufferCore"):
            BufferCore.lookup_transform(not_a_store, "map", "base", 0.0)
    with pytest.raises(TypeError, match="needs its store"):
        BufferCore.can_transform()
    with pytest.raises(ValueError, match="no such entry"):
        _kernel_ext.store_method("delete_everything")


GARBAGE = [None, 1, 2**70, math.nan, "", "/x", b"x", [], ("a",), object(), "\udcff"]


@pytest.mark.parametrize("value", GARBAGE, ids=[repr(v)[:16] for v in GARBAGE])
def test_garbage_in_every_position_is_refused_or_answered(value):
    for cls, name, parameters in ENTRIES:
        s = store(cls)
        for k in range(len(parameters)):
            args = ["map", "base", 10.0, 0.0] if name != "set_transform" else [
                make_transform("map", "c", stamp=11.0), "x", False]
            args = args[:len(parameters)]
            args[k] = value
            try:
                getattr(s, name)(*args)
            except (TransformException, TypeError, ValueError):
                pass
        assert s.lookup_transform("map", "base", 10.0).transform.translation.y == 2.0


def test_a_subclass_overrides_an_entry_as_any_method():
    class Counting(BufferCore):
        calls = 0

        def lookup_transform(self, target_frame, source_frame, time):
            Counting.calls += 1
            return super().lookup_transform(target_frame, source_frame, time)

    s = Counting()
    s.set_transform(make_transform("map", "base", stamp=1.0), "test")
    assert s.lookup_transform("map", "base", 1.0).header.frame_id == "map" and Counting.calls == 1


def test_the_decorator_keeps_what_a_type_checker_and_a_reader_see():
    def lookup_transform(self, target_frame: str, source_frame: str, time: float) -> object:
        """Looks up."""

    fast = kernel_entry("lookup_transform")(lookup_transform)
    assert fast.__wrapped__ is lookup_transform and fast.__doc__ == "Looks up."
    assert str(inspect.signature(fast)) == str(inspect.signature(lookup_transform))


def test_a_storm_of_wrong_calls_in_a_subprocess_never_crashes_it():
    code = ("import tf2py\n"
            "b = tf2py.Buffer()\n"
            "for f in (b.lookup_transform, b.can_transform, b.set_transform):\n"
            "    for args in [(), (1,), (1, 2, 3, 4, 5, 6), (None, None, None)]:\n"
            "        for kw in [{}, {'x': 1}, {'timeout': None}, {'time': 1, 'target_frame': 2}]:\n"
            "            try: f(*args, **kw)\n"
            "            except Exception: pass\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
