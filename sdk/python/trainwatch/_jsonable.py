"""Conversion of run configs to JSON.

A config is whatever a training script has at hand: dicts, argparse namespaces, dataclasses, numpy
and torch scalars. `to_json_object` turns it into a JSON object the server can store; nothing here
raises on an odd value (it becomes its str()).
"""
import dataclasses
import json
import math
from collections.abc import Mapping


def to_json_object(config):
    """A JSON-serialisable dict from a mapping, an argparse.Namespace or a dataclass instance.

    Raises TypeError for anything else (a config must be a set of named values).
    """
    if config is None:
        return {}
    if isinstance(config, Mapping):
        items = config.items()
    elif dataclasses.is_dataclass(config) and not isinstance(config, type):
        items = ((f.name, getattr(config, f.name)) for f in dataclasses.fields(config))
    elif hasattr(config, "__dict__") and type(config).__name__ == "Namespace":
        items = vars(config).items()
    else:
        raise TypeError("config must be a dict, an argparse.Namespace or a dataclass, got %s"
                        % type(config).__name__)
    return {str(k): to_jsonable(v) for k, v in items}


def to_jsonable(value):
    """`value` as plain JSON types: numpy/torch scalars become numbers, arrays and tensors lists,
    tuples and sets lists, non-finite floats the strings "NaN"/"Infinity"/"-Infinity" (standard
    JSON has no such numbers), anything else its str()."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _finite_or_str(float(value))
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json_object(value)
    tolist = getattr(value, "tolist", None)  # numpy scalars/arrays and torch tensors
    if callable(tolist) and type(value).__module__.split(".")[0] in ("numpy", "torch"):
        try:
            plain = tolist()
        except Exception:  # e.g. a tensor on a device that cannot be read
            return str(value)
        if isinstance(plain, float) and _is_narrow_float(value):
            # float32 0.1 is 0.10000000149011612 as a double: keep its shortest decimal form
            import numpy
            plain = float(str(numpy.float32(plain)))
        return to_jsonable(plain)
    return str(value)


def _is_narrow_float(value):
    return str(getattr(value, "dtype", "")).rpartition(".")[2] in ("float16", "bfloat16", "float32")


def _finite_or_str(x):
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def dumps(obj):
    """Compact JSON of an already converted object."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def merge(into, update):
    """Merges `update` into the dict `into` recursively, as the server merges configs."""
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
    return into
