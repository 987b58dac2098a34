"""Histograms for `Run.log_histogram`: raw values to (edges, counts), and checks of given ones."""
import numpy as np


def _to_numpy(values):
    """A flat float64 numpy array of a list, numpy array or torch tensor (copied off its device)."""
    if type(values).__module__.split(".")[0] == "torch":
        values = values.detach().reshape(-1).cpu().double().numpy()
    return np.asarray(values, dtype=np.float64).reshape(-1)


def from_values(values, bins):
    """(edges, counts) of the finite entries of `values` in `bins` equal-width bins.

    Returns None when there is no finite value. A constant input gets the unit-wide range
    [v - 0.5, v + 0.5] (numpy's convention)."""
    data = _to_numpy(values)
    finite = data[np.isfinite(data)]
    if finite.size == 0:
        return None
    counts, edges = np.histogram(finite, bins=int(bins))
    return edges, counts.astype(np.float64)


def check(edges, counts):
    """(edges, counts) as float64 arrays, or a ValueError saying what is wrong: edges must be
    finite, strictly increasing and one longer than counts."""
    edges = _to_numpy(edges)
    counts = _to_numpy(counts)
    if counts.size == 0 or edges.size != counts.size + 1:
        raise ValueError("a histogram needs len(edges) == len(counts) + 1 >= 2, got %d edges and "
                         "%d counts" % (edges.size, counts.size))
    if not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
        raise ValueError("histogram edges must be finite and strictly increasing")
    if not np.all(np.isfinite(counts)):
        raise ValueError("histogram counts must be finite")
    return edges, counts
