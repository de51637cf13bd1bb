"""(j) Data larger than memory (issue 32): the gradient of a logistic regression's mean loss over
2M examples of 16 float32 features, one program compiled for any number of examples
(``ad.value_and_grad(..., form="compiled", examples=(2, 3))``), run on numpy arrays in memory
beside the same call on Dask arrays chunked along the examples: on Dask's threaded scheduler,
and on a ``distributed`` LocalCluster of 2 worker processes of 1 thread each, the blocks
persisted on the workers. Dask runs on every core, numpy on one (BLAS pinned to one thread, as
every bench), so the comparison is the machine's throughput either way.

Wall-clock medians (CPU time does not count Dask's threads or workers), contenders interleaved
round by round, each call building the graph and computing it; the figure is examples per
second. Goal (issue 32): Dask within 1.5x of numpy per example on 2 cores. The same gradient
written by hand in Dask, on the largest blocks, says what Dask itself costs.
"""
from __future__ import annotations

from bench.common import format_time, optional

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

EXAMPLES, FEATURES, BLOCKS, PIECE = 2_000_000, 16, (250_000, 500_000, 1_000_000), 250_000


def logistic(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0, z) - y * z)


def by_hand(w, b, X, y):
    """The same value and gradient written by hand in Dask: what Dask itself costs."""
    import dask.array as da
    z = X @ w + b
    r = 1 / (1 + da.exp(-z)) - y
    return [da.mean(da.logaddexp(0, z) - y * z), X.T @ r / len(y), da.sum(r) / len(y)]


def wall(contenders: dict, rounds: int) -> dict[str, float]:
    """Median wall seconds per call of each contender, interleaved round by round."""
    for fn in contenders.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def dataset(rows: int):
    """The examples as Dask arrays of blocks of ``rows``, each made on its own from its index."""
    import dask.array as da
    chunks = ((rows,) * (EXAMPLES // rows),)

    def block(block_id):         # the same examples whatever the blocks: pieces of PIECE rows
        pieces = [np.random.default_rng(block_id[0] * (rows // PIECE) + k) for k in range(rows // PIECE)]
        return (np.concatenate([rng.standard_normal((PIECE, FEATURES), dtype=np.float32) for rng in pieces]),
                np.concatenate([(rng.random(PIECE) > 0.5).astype(np.float32) for rng in pieces]))
    X = da.map_blocks(lambda block_id: block(block_id)[0], dtype=np.float32, chunks=chunks + ((FEATURES,),),
                      meta=np.empty((0, FEATURES), np.float32))
    y = da.map_blocks(lambda block_id: block(block_id)[1], dtype=np.float32, chunks=chunks,
                      meta=np.empty((0,), np.float32))
    return X, y


def run(rounds: int = 7) -> str:
    dask = optional("dask")
    if dask is None:
        return "### Dask\n\n(dask is not installed)\n"
    import distributed
    X, y = (np.asarray(a) for a in dask.compute(*dataset(BLOCKS[0]), scheduler="threads"))
    w, b = np.random.default_rng(0).standard_normal(FEATURES).astype(np.float32), np.float32(0.1)
    grad = ad.value_and_grad(logistic, (0, 1), form="compiled", examples=(2, 3))
    want = _flat(grad(w, b, X, y))
    contenders = {"numpy, in memory (1 core)": lambda: _flat(grad(w, b, X, y))}
    for rows in BLOCKS:
        Xd, yd = dask.persist(*dataset(rows), scheduler="threads")
        contenders[f"Dask threaded, blocks of {rows:,}"] = (
            lambda Xd, yd: lambda: dask.compute(*_flat(grad(w, b, Xd, yd)), scheduler="threads"))(Xd, yd)
    contenders[f"Dask threaded, blocks of {rows:,}, written by hand in Dask"] = (
        lambda Xd, yd: lambda: dask.compute(*by_hand(w, b, Xd, yd), scheduler="threads"))(Xd, yd)
    for fn in contenders.values():
        fn()        # traced now: a Dask sample is computed by the default scheduler, the cluster's below
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for rows in BLOCKS:
            Xd, yd = client.persist(list(dataset(rows)))
            distributed.wait([Xd, yd])
            contenders[f"Dask LocalCluster 2x1, blocks of {rows:,}"] = (
                lambda Xd, yd: lambda: client.compute(_flat(grad(w, b, Xd, yd)), sync=True))(Xd, yd)
        contenders[f"Dask LocalCluster 2x1, blocks of {rows:,}, written by hand in Dask"] = (
            lambda Xd, yd: lambda: client.compute(by_hand(w, b, Xd, yd), sync=True))(Xd, yd)
        for name, fn in contenders.items():
            for got, expected in zip(fn(), want):
                assert np.allclose(got, expected, rtol=1e-4, atol=1e-7), name
        times = wall(contenders, rounds)
    base = times["numpy, in memory (1 core)"]
    lines = [f"### The gradient of a mean loss over {EXAMPLES:,} x {FEATURES} float32 examples: "
             "numpy in memory beside Dask chunked along the examples", "",
             "| contender | median per call (wall) | examples per second | time per example, ratio to numpy |",
             "| --- | ---: | ---: | ---: |"]
    for name, t in times.items():
        lines.append(f"| {name} | {format_time(t)} | {EXAMPLES / t / 1e6:.1f} M | {t / base:.2f}x |")
    return "\n".join(lines) + "\n"


def _flat(value_and_grads) -> list:
    value, grads = value_and_grads
    return [value, *grads]


if __name__ == "__main__":
    print(run())
