"""Waiting on a condition, the one way the tests wait for something to happen.

wait_until polls `condition` until it returns a truthy value and returns that value. Its deadline
only guards against a hang: a test asserts on the condition (or on what the returned value holds),
never on how long it took."""
import time

HANG_GUARD = 60.0  # seconds: generous; a condition that holds is seen within milliseconds


def wait_until(condition, what, timeout=HANG_GUARD, interval=0.05):
    """The first truthy value of condition(); AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)  # sleep-ok: polls a condition
