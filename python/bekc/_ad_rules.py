"""Differentiation and batching rules for primitives with several results.

brainevent exports two helpers for custom primitives, and
:class:`bekc.XLACustomKernel` uses both, with brainevent's meaning:

* :func:`defjvp`: one JVP rule per input, ``rule(tangent, *primals,
  **params)``, summed over the inputs whose tangent is not zero. JAX's own
  ``ad.defjvp`` handles single-result primitives only.
* :func:`general_batching_rule`: ``jax.vmap`` of any primitive, by moving
  each batched input's axis to the front and running the primitive once per
  batch element under ``jax.lax.scan``.

JAX is imported when these run, not when bekc is imported.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence, Tuple

__all__ = ["defjvp", "general_batching_rule"]


def _zero_tangent(value):
    """JAX's symbolic zero tangent of ``value``, on JAX releases before and after 0.9.1."""
    import jax
    from jax.interpreters import ad
    from_primal = getattr(ad.Zero, "from_primal_value", None)
    if from_primal is not None:
        return from_primal(value)
    return ad.Zero(jax.typeof(value).to_tangent_aval())


def _primitive_of(primitive):
    """``primitive``, or the JAX primitive of a :class:`bekc.XLACustomKernel`
    (its ``primitive``), which is built on this module and so not imported here."""
    from jax.extend.core import Primitive
    inner = getattr(primitive, "primitive", None)
    if not isinstance(primitive, Primitive) and isinstance(inner, Primitive):
        primitive = inner
    if not isinstance(primitive, Primitive):
        raise TypeError(f"defjvp needs a JAX primitive or a bekc.XLACustomKernel, got "
                        f"{type(primitive).__name__}")
    return primitive


def _check_arity(primitive, rules, primals) -> None:
    if len(rules) != len(primals):
        raise ValueError(
            f"defjvp: {primitive.name} has {len(primals)} inputs but {len(rules)} JVP rules "
            f"were given; give one rule per input, None where the input's tangent adds nothing")


def _rule_name(rule) -> str:
    return getattr(rule, "__name__", repr(rule))


def _single_result_jvp(rules, primitive, primals, tangents, **params):
    from jax.interpreters import ad
    _check_arity(primitive, rules, primals)
    out = primitive.bind(*primals, **params)
    parts = [rule(t, *primals, **params) for rule, t in zip(rules, tangents)
             if rule is not None and type(t) is not ad.Zero]
    return out, functools.reduce(ad.add_tangents, parts, _zero_tangent(out))


def _multiple_results_jvp(rules, primitive, primals, tangents, **params):
    from jax import tree_util
    from jax.interpreters import ad
    _check_arity(primitive, rules, primals)
    outs = tuple(primitive.bind(*primals, **params))
    tree = tree_util.tree_structure(outs)
    total = tree_util.tree_map(_zero_tangent, outs)
    for rule, t in zip(rules, tangents):
        if rule is None or type(t) is ad.Zero:
            continue
        part = rule(t, *primals, **params)
        # A bare array would be split along its first axis by tuple(); one
        # tangent per output is what the rule owes.
        if not isinstance(part, (tuple, list)):
            raise TypeError(f"JVP rule {_rule_name(rule)} of {primitive.name} returned a "
                            f"{type(part).__name__}; a primitive with several results needs "
                            f"a tuple or list of tangents, one per output")
        part = tuple(part)
        if tree_util.tree_structure(part) != tree:
            raise ValueError(f"JVP rule {_rule_name(rule)} of {primitive.name} returned "
                             f"tangents shaped as {tree_util.tree_structure(part)}; the "
                             f"outputs are {tree}")
        total = tree_util.tree_map(ad.add_tangents, total, part,
                                   is_leaf=lambda a: isinstance(a, ad.Zero))
    return outs, total


def defjvp(primitive, *jvp_rules: Optional[Callable]) -> None:
    """Defines the JVP of ``primitive`` (a JAX primitive or an XLACustomKernel)
    from one rule per input: ``rule(tangent, *primals, **params)`` gives that
    input's contribution to the output tangents (a tuple, one per output, for
    a primitive with several results). ``None`` stands for an input whose
    tangent contributes nothing."""
    from jax.interpreters import ad
    primitive = _primitive_of(primitive)
    jvp = _multiple_results_jvp if primitive.multiple_results else _single_result_jvp
    ad.primitive_jvps[primitive] = functools.partial(jvp, jvp_rules, primitive)


def _bind(prim, args, kwargs):
    from jax.extend.core import Primitive
    return prim.bind(*args, **kwargs) if isinstance(prim, Primitive) else prim(*args, **kwargs)


def general_batching_rule(prim, args: Sequence, axes: Sequence[Optional[int]],
                          **kwargs) -> Tuple[Any, Any]:
    """The batching rule every XLACustomKernel starts with: the batched inputs'
    axes go to the front, and ``prim`` (a primitive, or any function of the
    arrays) runs once per batch element under ``jax.lax.scan``. Returns the
    outputs, batched along axis 0, and their batch axes; with no batched
    input, ``prim`` runs once and no output is batched."""
    import jax
    batched = {i: (a if ax == 0 else jax.numpy.moveaxis(a, ax, 0))
               for i, (a, ax) in enumerate(zip(args, axes)) if ax is not None}
    if not batched:
        out = _bind(prim, args, kwargs)
        return out, jax.tree_util.tree_map(lambda _: None, out)

    def one(carry, sliced):
        full = [sliced[i] if i in sliced else args[i] for i in range(len(args))]
        return carry, _bind(prim, full, kwargs)

    _, outs = jax.lax.scan(one, 0, batched)
    return outs, jax.tree_util.tree_map(lambda _: 0, outs)
