"""set_transforms' kernel path remembers frame-name str objects (address -> frame id):
the same objects reused across calls, in other roles, with a leading '/', beyond the
remembered slots, and str subclasses must give exactly the answers of a fresh name."""

from __future__ import annotations

import numpy as np
import pytest

import tf2py.buffer.kernel as kernel_module
from tf2py import InvalidArgumentException
from tf2py.buffer import _kernel_ext
from tf2py.buffer.core import BatchResult, BufferCore
from tf2py.buffer.time import Time

UNIT = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def rows(n, x=1.0):
    values = np.array([UNIT] * n)
    values[:, 0] = x
    return values


def stamps(n, t):
    return np.full(n, t, dtype=np.int64)


def test_result_is_a_batch_result_with_plain_invalid_list():
    core = BufferCore()
    result = core.set_transforms(["a", "a"], ["b", "c"], stamps(2, 10), rows(2), "me")
    assert result.__class__ is BatchResult
    assert result == BatchResult(2, 0, [])
    assert result.invalid == []


def test_same_objects_other_roles_and_slashes():
    core = BufferCore()
    a, b, slash_a, no_parent = "a", "b", "/a", "NO_PARENT"
    assert core.set_transforms([a, b], [b, "x"], stamps(2, 10), rows(2), "m").stored == 2
    # now b as a parent of a: a cycle at t=20 is allowed to be stored (tf2 stores it)
    r = core.set_transforms([b], [a], stamps(1, 20), rows(1), "m")
    assert r == BatchResult(1, 0, [])
    # '/a' is 'a': a self-link, refused the same way as a fresh name is
    r = core.set_transforms([slash_a, a], [a, slash_a], stamps(2, 30), rows(2), "m")
    assert r.stored == 0 and [k for k, _ in r.invalid] == [0, 1]
    assert all(isinstance(e, InvalidArgumentException) for _, e in r.invalid)
    # NO_PARENT: fine as a parent (a root), refused as a child, also once remembered
    assert core.set_transforms([no_parent], ["r"], stamps(1, 10), rows(1), "m").stored == 1
    r = core.set_transforms([a], [no_parent], stamps(1, 40), rows(1), "m")
    assert r.stored == 0 and r.invalid[0][0] == 0 and "NO_PARENT" in str(r.invalid[0][1])
    # an empty name stays refused after its neighbours are remembered
    r = core.set_transforms([a, ""], ["", a], stamps(2, 50), rows(2), "m")
    assert r.stored == 0 and len(r.invalid) == 2


def test_many_names_beyond_the_slots_agree_with_single_inserts():
    frames = ["f%d" % i for i in range(700)]
    batch, single = BufferCore(), BufferCore()
    for step in range(3):
        t = 1_000_000 * (step + 1)
        values = rows(len(frames) - 1, x=float(step))
        r = batch.set_transforms(frames[:-1], frames[1:], stamps(len(frames) - 1, t), values, "m")
        assert r == BatchResult(len(frames) - 1, 0, [])
        for i in range(len(frames) - 1):
            single.set_transform_values(frames[i], frames[i + 1], t, step, 0, 0, 0, 0, 0, 1, "m")
    for t in (1_000_000, 1_500_000, 3_000_000):
        ours = batch.lookup_transform("f0", "f699", Time.from_nanoseconds(t))
        theirs = single.lookup_transform("f0", "f699", Time.from_nanoseconds(t))
        assert ours.transform.translation.x == theirs.transform.translation.x
    assert batch.all_frames_as_yaml() == single.all_frames_as_yaml()


class Name(str):
    pass


def test_str_subclass_names_and_garbage():
    core = BufferCore()
    p, c = Name("p"), Name("c")
    for t in (10, 20):
        assert core.set_transforms([p], [c], stamps(1, t), rows(1), "m").stored == 1
    assert core.lookup_transform("p", "c", Time.from_nanoseconds(15)).child_frame_id == "c"
    r = core.set_transforms([p, None], [c, "d"], stamps(2, 30), rows(2), "m")
    assert r.stored == 1 and [k for k, _ in r.invalid] == [1]
    assert isinstance(r.invalid[0][1], InvalidArgumentException)


def test_kernel_entry_point_refuses_bad_shapes():
    core = BufferCore()
    with pytest.raises(ValueError):
        core._kernel.insert_rows(["a"], ["b", "c"], stamps(2, 1), rows(2), "m", False)
    with pytest.raises(TypeError):
        core._kernel.insert_rows(["a"], ["b"], stamps(1, 1).astype(float), rows(1), "m", False)
    with pytest.raises(TypeError, match="tuple subclass"):
        _kernel_ext.configure(**{**kernel_module._kernel_configuration(), "batch_result": list})
    assert core.set_transforms(["a"], ["b"], stamps(1, 1), rows(1), "m").stored == 1


def test_authority_whose_del_shrinks_the_lists_does_not_crash():
    core = BufferCore()
    parents, children = ["w", "w", "w"], ["a", "b", "c"]

    class Authority:
        def __del__(self):
            parents.clear()  # runs when the kernel replaces this authority of frame 'a'

    core.set_transforms(["w"], ["a"], stamps(1, 5), rows(1), Authority())
    try:
        result = core.set_transforms(parents, children, stamps(3, 10), rows(3), "other")
    except IndexError:
        pass  # the rows that vanished cannot be named
    else:
        assert result.stored >= 1
    assert core.lookup_transform("w", "a", Time.from_nanoseconds(10)).header.frame_id == "w"
