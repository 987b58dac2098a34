"""The write rules of one series, in Python, for tests that compare a server's answers with them."""
import struct


def bits(x):
    return struct.pack("<d", x)


class SeriesModel:
    """One series under the documented write rules: a step above every visible one is appended; the
    same bits at a visible step are a no-op; a different value at a visible step starts a new timeline
    (every visible point at that step or later becomes superseded); an empty step is filled in."""

    def __init__(self):
        self.visible = {}     # step -> (time, value)
        self.superseded = []  # (step, time, value)
        self.rewinds = 0

    def write(self, step, time, value):
        """Applies one point; returns 'unchanged' or 'written'."""
        if step in self.visible:
            if bits(self.visible[step][1]) == bits(value):
                return "unchanged"
            hidden = [s for s in self.visible if s >= step]
            for s in sorted(hidden):
                self.superseded.append((s,) + self.visible.pop(s))
            self.rewinds += 1
        self.visible[step] = (time, value)
        return "written"

    def points(self):
        return [(s,) + self.visible[s] for s in sorted(self.visible)]
