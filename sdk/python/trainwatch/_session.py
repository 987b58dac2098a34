"""The process's runs: which one is current (`trainwatch.run`, used by `trainwatch.log`), and
finishing the open ones at interpreter exit.

The state is per process: a forked child (a DataLoader worker) inherits it but never finishes its
parent's runs.
"""
import atexit
import os
import sys
import threading
import warnings

from ._run import TrainwatchWarning

_lock = threading.Lock()
_open_runs = []            # unfinished runs, oldest first; the last is the current one
_owner_pid = os.getpid()
_hooks_installed = False
_uncaught_exception = False
_warned_no_run = False


def adopt(run):
    """Makes `run` the current run and finishes it at exit if nobody else does."""
    global _owner_pid
    with _lock:
        if os.getpid() != _owner_pid:  # first run of a forked child: forget the parent's
            _open_runs.clear()
            _owner_pid = os.getpid()
        _open_runs.append(run)
        _install_hooks()


def forget(run):
    """Called by Run.finish()."""
    with _lock:
        if run in _open_runs:
            _open_runs.remove(run)


def current_run(warn=True):
    """The most recently started unfinished run, or None (with one warning if `warn`)."""
    global _warned_no_run
    with _lock:
        if _open_runs and os.getpid() == _owner_pid:
            return _open_runs[-1]
    if warn and not _warned_no_run:
        _warned_no_run = True
        warnings.warn("trainwatch: no run; call trainwatch.init() first (values are not logged)",
                      TrainwatchWarning, stacklevel=3)
    return None


def _install_hooks():
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_finish_open_runs)
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        global _uncaught_exception
        _uncaught_exception = True
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook


def _finish_open_runs():
    if os.getpid() != _owner_pid:
        return
    status = "crashed" if _uncaught_exception else "finished"
    with _lock:
        runs = list(reversed(_open_runs))
    for run in runs:
        run.finish(status)
