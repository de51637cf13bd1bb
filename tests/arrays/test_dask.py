"""The gradient of a mean loss over Dask arrays chunked along the examples: one program traced on
a numpy sample, run lazily (reductions over the examples are Dask's tree reductions), equal to
the in-memory numpy gradient; the equations that would need all the examples at once refused by
name; and a dataset larger than the workers' memory on a ``distributed`` cluster."""
import threading
import time

import numpy as np
import pytest

import ad
from tests.support.needs import module as optional_module
from ad.compiler.examples import ExamplesError
from tests.arrays.test_examples import logistic

da = optional_module("dask.array")
dask = optional_module("dask")

RNG = np.random.default_rng(0)


def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    h = h.reshape(h.shape[0], 2, -1).sum(axis=1)         # a reshape that keeps the examples axis
    return np.mean((h @ W2 - y) ** 2) + np.var(h, ddof=1)


def softmax_xent(W, X, Y):
    return -np.mean(np.sum(Y * ad.nn.log_softmax(X @ W, axis=1), axis=1))


def rnn(W, X, y):
    """A recurrence over the features of each example, from a state of zeros like the examples
    (made in their blocks)."""
    h = np.zeros((X.shape[0], 4), like=X)
    for t in range(X.shape[1]):
        h = np.tanh(h @ W + X[:, t:t + 1])
    return np.mean((h.sum(axis=1) - y) ** 2)


def logistic_gradient(w, b, X, y):
    """The gradient of ``logistic`` written by hand in numpy: the oracle of the cluster test."""
    z = X @ w + b
    r = 1.0 / (1.0 + np.exp(-z)) - y
    return np.mean(np.logaddexp(0, z) - y * z), X.T @ r / len(y), np.sum(r) / len(y)


# (loss, parameters, examples at a size, argnums)
PROGRAMS = {
    "logistic": (logistic, (RNG.normal(size=5), 0.1),
                 lambda n: (RNG.normal(size=(n, 5)), (RNG.random(n) > 0.5) * 1.0), (0, 1)),
    "mlp": (mlp, (RNG.normal(size=(5, 8)), np.zeros(8), RNG.normal(size=4)),
            lambda n: (RNG.normal(size=(n, 5)), RNG.normal(size=n)), (0, 1, 2)),
    "softmax": (softmax_xent, (RNG.normal(size=(5, 3)),),
                lambda n: (RNG.normal(size=(n, 5)), np.eye(3)[RNG.integers(0, 3, n)]), 0),
    "rnn": (rnn, (RNG.normal(size=(4, 4)) * 0.5,), lambda n: (RNG.normal(size=(n, 6)), RNG.normal(size=n)), 0),
}


def chunked(xs, chunk):
    return tuple(da.from_array(x, chunks=(chunk,) + x.shape[1:]) for x in xs)


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_dask_gradient_is_lazy_and_equals_the_numpy_gradient(name):
    loss, ps, make, argnums = PROGRAMS[name]
    xs = make(10_000)
    g = ad.value_and_grad(loss, argnums, form="compiled", examples=(len(ps), len(ps) + 1))
    value, grads = g(*ps, *chunked(xs, 1_000))
    flat = [value, *ad.pytree.flatten(grads)[0]]
    assert all(isinstance(x, da.Array) for x in flat)
    got = dask.compute(*flat)                              # the threaded scheduler
    want = ad.value_and_grad(loss, argnums)(*ps, *xs)
    for a, b in zip(got, [want[0], *ad.pytree.flatten(want[1])[0]]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)


def test_the_graph_reduces_the_examples_in_a_tree_and_never_gathers_them():
    """64 blocks of examples: no task reads more than a handful of blocks, no layer
    concatenates or rechunks them."""
    from dask.core import get_deps
    loss, ps, make, argnums = PROGRAMS["logistic"]
    value, (dw, db) = ad.value_and_grad(loss, argnums, form="compiled", examples=(2, 3))(
        *ps, *chunked(make(64_000), 1_000))
    for out in (value, dw, db):
        graph = dict(out.__dask_graph__())
        dependencies, _ = get_deps(graph)
        assert max(map(len, dependencies.values())) <= 8
        layers = {str(k[0] if isinstance(k, tuple) else k).rsplit("-", 1)[0] for k in graph}
        assert not {name for name in layers if "concatenate" in name or "rechunk" in name}, layers


def test_compile_with_the_dask_namespace_chunks_its_broadcasts_as_the_examples():
    import array_api_compat.dask.array as xp
    loss, ps, make, argnums = PROGRAMS["softmax"]      # the mean's cotangent, broadcast over the examples
    gt = ad.grad_tape(loss, *ps, *make(32), argnums=argnums, examples=(1, 2))
    g = ad.compile(gt, xp=xp)
    assert "chunks = v1.chunks[0]" in g.source and "broadcast_examples((k0 / n), (n,), 0, chunks)" in g.source
    xs = make(5_000)
    value, dw = dask.compute(*g(*ps, *chunked(xs, 700)))
    want = ad.value_and_grad(loss, argnums)(*ps, *xs)
    np.testing.assert_allclose(dw, want[1], rtol=1e-11)
    assert np.isclose(value, want[0], rtol=1e-12)


def test_grad_with_xp_dask_traces_one_sample_for_every_number_of_examples():
    import array_api_compat.dask.array as xp
    loss, ps, make, argnums = PROGRAMS["logistic"]
    g = ad.grad(loss, argnums, form="compiled", xp=xp, examples=(2, 3))
    for n in (3_000, 4_321):
        xs = make(n)
        dw, db = dask.compute(*g(*ps, *chunked(xs, 1_000)))
        want = ad.grad(loss, argnums)(*ps, *xs)
        np.testing.assert_allclose(dw, want[0], rtol=1e-11)
        assert np.isclose(db, want[1], rtol=1e-11)
    assert g.cache_info().traces == 1


def dask_refusal(loss, n_params=1):
    X, y = RNG.normal(size=(16, 4)), RNG.normal(size=16)
    gt = ad.grad_tape(loss, np.ones(4), X, y, examples=(n_params, n_params + 1))
    with pytest.raises(ExamplesError) as info:
        ad.compile(gt, xp="dask")
    said = str(info.value)
    assert "test_dask.py" in said and "chunk by chunk" in said
    return said


def test_what_needs_all_the_examples_at_once_is_refused_by_name():
    assert "sort" in dask_refusal(lambda w, X, y: np.mean(np.sort(X @ w) * y))
    assert "cumsum" in dask_refusal(lambda w, X, y: np.mean(np.cumsum(X @ w, axis=0) * y))
    assert "fft" in dask_refusal(lambda w, X, y: np.mean(np.abs(np.fft.fft(X @ w)) * y))
    said = dask_refusal(lambda w, X, y: np.mean(np.tanh(X.reshape(-1))) * np.sum(w * y[0]))
    assert "4 * n" in said and "reshape" in said
    assert "(n, n)" in dask_refusal(lambda w, X, y: np.mean((X @ X.T) @ y) * np.sum(w))
    said = dask_refusal(lambda w, X, y: np.mean(X @ w) if np.mean(y) > -10 else np.mean(y))
    assert "guard" in said and "would compute the whole graph" in said


def test_what_runs_along_other_axes_is_allowed():
    """A cumulative sum over the features runs on each example alone: chunk by chunk."""
    loss = lambda w, X, y: np.mean(np.cumsum(X * w, axis=1) * y[:, None])      # noqa: E731
    X, y = RNG.normal(size=(2_000, 4)), RNG.normal(size=2_000)
    g = ad.grad(loss, form="compiled", examples=(1, 2))
    np.testing.assert_allclose(g(np.ones(4), *chunked((X, y), 300)).compute(), ad.grad(loss)(np.ones(4), X, y),
                               rtol=1e-12)


# -- larger than memory: a dataset of 2 GiB on two workers of 512 MB ------------------------------

FEATURES, ROWS, BLOCK = 16, 1 << 25, 1 << 19        # float32: 2 GiB of X in 64 blocks of 32 MiB


def block(seed: int, index: int, rows: int):
    """Block ``index`` of the examples, made from the seed and its index alone (the reference
    makes it again)."""
    rng = np.random.default_rng([seed, index])
    X = rng.random((rows, FEATURES), dtype=np.float32) - np.float32(0.5)
    y = (X[:, 0] + np.float32(0.5) * rng.random(rows, dtype=np.float32) > np.float32(0.25)).astype(np.float32)
    return X, y


def lazy_dataset(seed: int):
    chunks = ((BLOCK,) * (ROWS // BLOCK),)
    X = da.map_blocks(lambda block_id: block(seed, block_id[0], BLOCK)[0], dtype=np.float32,
                      chunks=chunks + ((FEATURES,),), meta=np.empty((0, FEATURES), np.float32))
    y = da.map_blocks(lambda block_id: block(seed, block_id[0], BLOCK)[1], dtype=np.float32, chunks=chunks,
                      meta=np.empty((0,), np.float32))
    return X, y


class WorkerWatch:
    """The largest memory each worker's process held, and every status it was seen in, sampled
    while a computation runs (``client.run`` on the workers' event loops)."""

    def __init__(self, client, every: float = 0.1):
        self.client, self.every = client, every
        self.peak: dict = {}
        self.statuses: set = set()
        self._stop = threading.Event()

    @staticmethod
    def _sample(dask_worker):
        import psutil
        return psutil.Process().memory_info().rss, str(dask_worker.status)

    def _loop(self):
        while not self._stop.is_set():
            for address, (rss, status) in self.client.run(self._sample).items():
                self.peak[address] = max(self.peak.get(address, 0), rss)
                self.statuses.add(status)
            time.sleep(self.every)

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_a_dataset_larger_than_the_workers_memory_on_a_distributed_cluster():
    distributed = optional_module("distributed")
    limit = 512 * 10 ** 6
    w, b = (RNG.normal(size=FEATURES) * 0.1).astype(np.float32), np.float32(0.05)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="512MB",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        ids = client.run(lambda dask_worker: dask_worker.id)
        X, y = lazy_dataset(seed=7)
        assert X.nbytes >= 2 * 2 ** 30
        value, (dw, db) = ad.value_and_grad(logistic, (0, 1), form="compiled", examples=(2, 3))(w, b, X, y)
        with WorkerWatch(client) as watch:
            value, dw, db = dask.compute(value, dw, db)
        assert client.run(lambda dask_worker: dask_worker.id) == ids          # no worker restarted
        assert watch.statuses == {"Status.running"}, watch.statuses          # none paused
        assert len(watch.peak) == 2 and max(watch.peak.values()) < limit, watch.peak
        logs = "".join(text for lines in client.get_worker_logs().values() for _, text in lines)
        assert "Pausing worker" not in logs and "exceeded" not in logs
    assert dw.dtype == np.float32
    totals = np.zeros(FEATURES + 2)
    for index in range(ROWS // BLOCK):                 # the reference: block by block, in memory
        Xk, yk = block(7, index, BLOCK)
        loss, gw, gb = logistic_gradient(w, b, Xk, yk)
        totals += np.concatenate([[loss], gw, [gb]]) * (len(yk) / ROWS)
    np.testing.assert_allclose([value, *dw, db], totals, rtol=1e-5, atol=1e-9)    # float32 sums, apart
