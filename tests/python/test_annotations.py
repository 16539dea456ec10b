"""Every annotation in the bekc package names something that exists.

The modules use ``from __future__ import annotations``, so Python never
evaluates an annotation at run time and a misspelled or unimported name in
one (``Optional`` without its import) goes unnoticed until a tool such as
``typing.get_type_hints`` or a type checker reads it. This evaluates them all.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing

import bekc


def _modules():
    for info in pkgutil.iter_modules(bekc.__path__):
        yield importlib.import_module(f"bekc.{info.name}")


def _annotated(module):
    """The functions, classes and methods ``module`` defines."""
    for _, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield obj
        elif inspect.isclass(obj):
            yield obj
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if inspect.isfunction(member):
                    yield member


def test_every_annotation_in_the_package_resolves():
    unresolved = []
    checked = 0
    for module in _modules():
        for obj in _annotated(module):
            checked += 1
            try:
                typing.get_type_hints(obj)
            except NameError as e:
                unresolved.append(f"{module.__name__}.{obj.__qualname__}: {e}")
    assert checked > 100
    assert not unresolved, "\n".join(unresolved)
