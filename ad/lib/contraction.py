"""Contractions: matmul and einsum are primitives; dot, tensordot, inner, outer, vdot, kron are
written with them. The matmul rule is the seeds' example: ``dA = dy @ B.T``, ``dB = A.T @ dy``.

Complex operands: matmul and einsum are holomorphic in each operand, so the same rules hold
(plain transposes, no conjugation: the convention of docs/architecture.md). numpy's vecdot and
vecmat conjugate their first (vector) operand, and vdot is written with vecdot for that reason."""
from __future__ import annotations

import string

import numpy as np

from ..dispatch import implements, unsupported
from ..primitives import Primitive
from ..batching.derived import stacked, with_rank
from ..rules import batch_rule, rrule, to_front
from ..samples import M34, MATRIX, F, In, Sample, Y
from ..tangents import thunk

matmul_p = Primitive("matmul", np.matmul, function=np.matmul, multilinear_in=(0, 1), spelling="{0} @ {1}",
                     complex_rule=True,
                     samples=(Sample((F, Y), shapes=("mm", "mv", "vm", "vv", "bmm")),))
from ..dispatch import UFUNCS  # noqa: E402  (np.matmul is a ufunc: t @ u arrives as one)

UFUNCS[np.matmul] = matmul_p


def _mT(x):
    return np.swapaxes(x, -1, -2)


@rrule(matmul_p)
def _matmul_rule(a, b):
    y = a @ b

    def pullback(dy):     # thunks: an operand that needs no gradient costs nothing
        if a.ndim == 1 and b.ndim == 1:
            return thunk(lambda: dy * b), thunk(lambda: dy * a)
        if a.ndim == 1:     # (k,) @ (..., k, m) -> (..., m); batch dims are summed by project()
            return thunk(lambda: (b @ dy[..., None])[..., 0]), thunk(lambda: a[:, None] * dy[..., None, :])
        if b.ndim == 1:     # (..., n, k) @ (k,) -> (..., n)
            return thunk(lambda: dy[..., None] * b), thunk(lambda: (_mT(a) @ dy[..., None])[..., 0])
        return thunk(lambda: dy @ _mT(b)), thunk(lambda: _mT(a) @ dy)
    return y, pullback


@batch_rule(matmul_p)
def _matmul_batched(args, dims):
    """One operand batched and the other a matrix: the batch folded into the rows (or columns)
    of one matrix product (as JAX batches dot_general), not a stack of small ones. Otherwise the
    batch axis joins the stack axes (a vector operand made a matrix for it, a row on the left, a
    column on the right, and the axis added dropped again)."""
    (a, b), (da, db) = args, dims
    if db is None and np.ndim(b) == 2 and np.ndim(a) <= 3:
        return _batch_in_rows(to_front(a, da), b), 0
    if da is None and np.ndim(a) == 2 and np.ndim(b) <= 3:
        return _batch_in_columns(a, to_front(b, db)), 0
    vector_a, vector_b = np.ndim(a) - (da is not None) == 1, np.ndim(b) - (db is not None) == 1
    a, b = to_front(a, da), to_front(b, db)
    a = np.expand_dims(a, -2) if vector_a else a
    b = np.expand_dims(b, -1) if vector_b else b
    rank = max(np.ndim(x) - (d is not None) for x, d in ((a, da), (b, db)))
    a, b = (x if d is None else with_rank(x, 0, rank) for x, d in ((a, da), (b, db)))
    # a contraction over one element is an outer product: elementwise, not a stack of tiny gemms
    y = a * b if np.shape(a)[-1] == 1 else matmul_p.bind(a, b)
    y = np.squeeze(y, -2) if vector_a else y
    return (np.squeeze(y, -1) if vector_b else y), 0


def _batch_in_rows(a, b):
    """``a @ b`` for a batch of vectors or matrices ``a`` (batch first) and one matrix ``b``."""
    if np.ndim(a) == 2:
        return matmul_p.bind(a, b)
    rows = matmul_p.bind(np.reshape(a, (-1, np.shape(a)[-1])), b)
    return np.reshape(rows, np.shape(a)[:2] + np.shape(b)[-1:])


def _batch_in_columns(a, b):
    """``a @ b`` for one matrix ``a`` and a batch of vectors or matrices ``b`` (batch first)."""
    if np.ndim(b) == 2:
        return matmul_p.bind(b, np.transpose(a))
    n_batch, k, n = np.shape(b)
    if n == 1:      # a stack of columns: the rows of one product with a's transpose
        rows = matmul_p.bind(np.reshape(b, (n_batch, k)), np.transpose(a))
        return np.reshape(rows, (n_batch, np.shape(a)[0], 1))
    columns = matmul_p.bind(a, np.reshape(np.transpose(b, (1, 0, 2)), (k, n_batch * n)))
    return np.transpose(np.reshape(columns, (np.shape(a)[0], n_batch, n)), (1, 0, 2))


# -- einsum ----------------------------------------------------------------------------------------

def _einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2)


def _einsum_spelling(args, params, module: str = "np") -> str:
    """``np.einsum('ij,jk', v1, v2)``; ``module="xp"``: array code's (not the standard's: the
    namespaces that have one, PyTorch's and JAX's)."""
    return f"{module}.einsum({params['subscripts']!r}, {', '.join(args)})"


einsum_p = Primitive("einsum", _einsum, params=("subscripts",), function=np.einsum, multilinear_in="all",
                     spelling=_einsum_spelling, complex_rule=True,
                     array_api_spelling=lambda args, params: _einsum_spelling(args, params, "xp"),
                     samples=(Sample((M34, In((2, 4))), {"subscripts": "ij,kj->ik"}, MATRIX),
                              Sample((In((2, 3, 4)),), {"subscripts": "ijk->j"}, MATRIX)))


def explicit_subscripts(subscripts: str, shapes) -> str:
    """``"...ij,jk"`` -> ``"abij,jk->abik"``: no ellipsis, explicit output."""
    subscripts = subscripts.replace(" ", "")
    ins, _, out = subscripts.partition("->")
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum {subscripts!r} names {len(terms)} operands, got {len(shapes)}")
    free = [c for c in string.ascii_letters if c not in subscripts]
    n_ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(free[:n_ell])
    terms = [t.replace("...", ell[n_ell - (len(s) - len(t.replace("...", ""))):]) if "..." in t else t
             for t, s in zip(terms, shapes)]
    if "->" in subscripts:
        out = out.replace("...", ell)
    else:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return ",".join(terms) + "->" + out


@batch_rule(einsum_p)
def _einsum_batched(args, dims, subscripts):
    """A letter of its own for the batch axis, first in each batched operand and in the output."""
    shapes = [np.shape(x)[:d] + np.shape(x)[d + 1:] if d is not None else np.shape(x) for x, d in zip(args, dims)]
    ins, out = explicit_subscripts(subscripts, shapes).split("->")
    letter = next(c for c in string.ascii_letters if c not in ins)
    terms = [letter + t if d is not None else t for t, d in zip(ins.split(","), dims)]
    xs = [to_front(x, d) for x, d in zip(args, dims)]
    return einsum_p.bind(*xs, subscripts=",".join(terms) + "->" + letter + out), 0


def _sublist(sub) -> str:
    return "".join("..." if k is Ellipsis else string.ascii_letters[int(k)] for k in sub)


def _interleaved(args) -> tuple[str, list]:
    """``(a, [0, 1], b, [1, 2], [0, 2])`` -> ``("ab,bc->ac", [a, b])``."""
    operands, subs = list(args[0:-1:2] if len(args) % 2 else args[0::2]), args[1::2]
    out = "->" + _sublist(args[-1]) if len(args) % 2 else ""
    return ",".join(_sublist(s) for s in subs) + out, operands


def _diagonals(term: str, x):
    """A term that repeats an index reads a diagonal: ``"ii"`` of x is ``"i"`` of np.diagonal(x)
    (numpy puts the diagonal axis last)."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        x = np.diagonal(x, axis1=i, axis2=j)
        term = "".join(ch for k, ch in enumerate(term) if k not in (i, j)) + c
    return term, x


@implements(np.einsum)
def _einsum_handler(*args, out=None, optimize=False, **kwargs):
    if out is not None or kwargs:
        raise unsupported(f"np.einsum(..., {'out=' if out is not None else ', '.join(kwargs)})",
                          "Assign the result instead: c = np.einsum(subscripts, a, b).")
    subscripts, operands = (args[0], list(args[1:])) if isinstance(args[0], str) else _interleaved(args)
    ins, _, result = explicit_subscripts(subscripts, [np.shape(o) for o in operands]).partition("->")
    if len(set(result)) != len(result):
        raise ValueError(f"einsum output subscript {result!r} repeats an index (numpy refuses it too)")
    terms = []
    for i, term in enumerate(ins.split(",")):
        term, operands[i] = _diagonals(term, operands[i])
        terms.append(term)
    return einsum_p.bind(*operands, subscripts=",".join(terms) + "->" + result)


@rrule(einsum_p)
def _einsum_rule(*xs, subscripts):
    y = einsum_p.bind(*xs, subscripts=subscripts)
    ins, out = subscripts.split("->")
    terms = ins.split(",")

    def cotangent(dy, i):
        x, term = xs[i], terms[i]
        others = [(t, o) for j, (t, o) in enumerate(zip(terms, xs)) if j != i]
        avail = set(out).union(*[set(t) for t, _ in others])
        kept = "".join(c for c in term if c in avail)   # indices summed only inside x are broadcast back
        spec = ",".join([out] + [t for t, _ in others]) + "->" + kept
        ct = einsum_p.bind(dy, *[o for _, o in others], subscripts=spec)
        if kept != term:
            shape = tuple(x.shape[k] if c in kept else 1 for k, c in enumerate(term))
            ct = np.broadcast_to(np.reshape(ct, shape), x.shape)
        return ct

    def pullback(dy):
        return tuple(thunk(lambda i=i: cotangent(dy, i)) for i in range(len(xs)))
    return y, pullback


# -- written with the primitives -------------------------------------------------------------------

@implements(np.dot)
def _dot(a, b, out=None):
    if out is not None:
        raise unsupported("np.dot(..., out=)", "Assign the result instead: c = np.dot(a, b).")
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.ndim(b) <= 2:
        return np.matmul(a, b)
    return np.tensordot(a, b, axes=([-1], [-2]))


@implements(np.tensordot)
def _tensordot(a, b, axes=2):
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, (int, np.integer)):
        axes = (list(range(na - axes, na)), list(range(axes)))
    ax_a, ax_b = ([axes[0]] if np.ndim(axes[0]) == 0 else list(axes[0]),
                  [axes[1]] if np.ndim(axes[1]) == 0 else list(axes[1]))
    ax_a, ax_b = [int(x) % na for x in ax_a], [int(x) % nb for x in ax_b]
    letters = iter(string.ascii_letters)
    ta = [next(letters) for _ in range(na)]
    tb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        tb[j] = ta[i]
    out = [c for k, c in enumerate(ta) if k not in ax_a] + [c for k, c in enumerate(tb) if k not in ax_b]
    return einsum_p.bind(a, b, subscripts=f"{''.join(ta)},{''.join(tb)}->{''.join(out)}")


@implements(np.inner)
def _inner(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    return np.tensordot(a, b, axes=([-1], [-1]))


@implements(np.outer)
def _outer(a, b, out=None):
    return np.ravel(a)[:, None] * np.ravel(b)[None, :]


@implements(np.vdot)
def _vdot(a, b):
    """numpy's vdot flattens both and conjugates a: vecdot does the same on vectors."""
    return np.vecdot(np.ravel(a), np.ravel(b))


@implements(np.kron)
def _kron(a, b):
    nd = max(np.ndim(a), np.ndim(b))
    a = np.reshape(a, (1,) * (nd - np.ndim(a)) + np.shape(a))
    b = np.reshape(b, (1,) * (nd - np.ndim(b)) + np.shape(b))
    # interleave: a[i, None, j, None] * b[None, k, None, l] -> reshape (i*k, j*l)
    a_exp = np.reshape(a, tuple(x for n in np.shape(a) for x in (n, 1)))
    b_exp = np.reshape(b, tuple(x for n in np.shape(b) for x in (1, n)))
    return np.reshape(a_exp * b_exp, tuple(m * n for m, n in zip(np.shape(a), np.shape(b))))


# -- numpy 2's vector gufuncs: vecdot(a, b) = sum(conj(a) * b), matvec(m, v) = sum_j m_ij v_j,
# vecmat(v, m) = sum_i conj(v_i) m_ij. A conjugated operand is anti-holomorphic: by the Wirtinger
# rule g -> conj(g * df/dz-bar) its cotangent is conjugated too.

def _gufunc_primitive(uf, *inputs, array_api_spelling=None):
    prim = Primitive(uf.__name__, uf, function=uf, multilinear_in=(0, 1), complex_rule=True,
                     array_api_spelling=array_api_spelling, samples=(Sample(inputs, shapes=MATRIX),))
    UFUNCS[uf] = prim
    return prim


vecdot_p = _gufunc_primitive(np.vecdot, M34, In((4,)))
# (the standard has vecdot; the others are matmul's, a vector as a matrix of one column or row)
matvec_p = _gufunc_primitive(np.matvec, In((2, 3, 4)), In((4,)), array_api_spelling="({0} @ {1}[..., None])[..., 0]")
vecmat_p = _gufunc_primitive(np.vecmat, In((3,)), In((2, 3, 4)),
                             array_api_spelling="(xp.conj({0})[..., None, :] @ {1})[..., 0, :]")
for _prim, _core in ((vecdot_p, (1, 1)), (matvec_p, (2, 1)), (vecmat_p, (1, 2))):
    batch_rule(_prim)(stacked(_prim, *_core))


def _conj(x):
    """conj(x), and no equation for real x (real tapes stay as they were)."""
    return np.conj(x) if np.iscomplexobj(x) else x


@rrule(vecdot_p)
def _vecdot_rule(a, b):
    return np.vecdot(a, b), lambda dy: (_conj(dy[..., None] * b), dy[..., None] * _conj(a))


@rrule(matvec_p)
def _matvec_rule(m, v):
    return np.matvec(m, v), lambda dy: (dy[..., :, None] * v[..., None, :], np.matvec(_mT(m), dy))


@rrule(vecmat_p)
def _vecmat_rule(v, m):
    return np.vecmat(v, m), lambda dy: (_conj(np.matvec(m, dy)), _conj(v)[..., :, None] * dy[..., None, :])
