"""Errors the Python layer raises itself, shaped as the native module's: an
:class:`L4sError` with ``kind``, ``exit_code``, ``file``, ``line`` and ``key``."""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from typing import Any, Mapping

from . import _native

def error(message: str, kind: str = "input", file: str | None = None) -> _native.L4sError:
    """An :class:`L4sError` of ``kind`` (raise it), built by the native module as its own
    errors are, with the exit status ``l4s`` gives for that kind."""
    return _native.make_error(message, kind, file)


def check_seed(seed: Any, name: str = "seed") -> None:
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise error(f"{name}={seed!r}: expected a whole number from 0 to 2^64 - 1")


def check_text(value: Any, name: str, example: str) -> None:
    """A duration, interval or rate given as text: ``"10s"``."""
    if value is not None and not isinstance(value, str):
        raise error(f"{name}={value!r}: expected text with a unit, such as {example!r}")


def check_count(value: Any, name: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise error(f"{name}={value!r}: expected a whole number of at least 0")


def check_toml(keys: Mapping[str, Any], where: str) -> None:
    """Every value in ``keys`` one TOML can hold, each refused at its key: a NaN or an
    infinity (TOML and JSON have none to pass on), an integer beyond TOML's 64 bits, an
    object with no TOML form. ``None`` is refused later, at its key too."""

    def walk(v: Any, at: str) -> None:
        if isinstance(v, bool) or v is None or isinstance(v, (str, os.PathLike)):
            return
        if isinstance(v, int):
            if not -(2**63) <= v < 2**63:
                raise error(f"{at}: {v} is beyond TOML's integers (-2^63 to 2^63 - 1)")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise error(f"{at}: {v!r} is not a finite number")
        elif isinstance(v, Mapping):
            for k, x in v.items():
                walk(x, f"{at}.{k}" if at else str(k))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{at}[{i}]")
        elif callable(getattr(v, "tolist", None)):
            # A numpy scalar or array: the Python value it holds.
            walk(v.tolist(), at)
        else:
            raise error(f"{at}: {type(v).__name__} {v!r} has no TOML form")

    for k, v in keys.items():
        walk(v, f"{where}[{k!r}]" if where else str(k))


def _plain(o: Any) -> Any:
    """A value json cannot write as it is: a path as its text, a numpy scalar or array as
    the Python number or list it holds."""
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if hasattr(o, "tolist") and callable(o.tolist):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} {o!r} has no TOML form")


def to_json(value: Any, where: str) -> str:
    """``value`` as JSON for the native module, paths and numpy values as plain ones."""
    try:
        return json.dumps(value, default=_plain, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise error(f"{where}: {e}") from None


def warn(message: str) -> None:
    """``message`` as a ``UserWarning`` at the first line outside this package that led
    here (the user's call of ``l4s_lab.run``, say)."""
    level = 2
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").startswith("l4s_lab"):
        f = f.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)
