#!/usr/bin/env python3
"""Lists the tests a run skipped, each with its reason, for scripts/test.sh's summary.

    skipped_tests.py ctest BUILD_DIR/Testing/Temporary/LastTest.log   GoogleTest GTEST_SKIP()s
    skipped_tests.py pytest SUITE LOG                                  pytest's -rs lines

One line per skipped test on stdout: "<suite>: <test>: <reason>". Nothing when nothing was skipped.
"""
import re
import sys


def ctest_skips(path):
    """GTEST_SKIP() prints "file:line: Skipped", the message lines, then "[  SKIPPED ] Suite.Name (N ms)"."""
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return []
    found, binary, reason, in_skip = [], "?", [], False
    for line in lines:
        m = re.match(r"^\d+/\d+ Test: (\S+)", line)
        if m:
            binary = m.group(1)
            continue
        if line.startswith("[ RUN      ]"):
            reason, in_skip = [], False
        elif re.search(r":\d+: Skipped$", line):
            in_skip = True
        else:
            m = re.match(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$", line)
            if m:
                found.append("C++ %s: %s: %s" % (binary, m.group(1), " ".join(reason).strip() or "(no reason given)"))
                reason, in_skip = [], False
            elif in_skip:
                reason.append(line.strip())
    return found


def pytest_skips(suite, path):
    """-rs prints "SKIPPED [N] path:line: reason" in the short test summary."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    return ["%s: %s" % (suite, m.group(1)) for m in re.finditer(r"^SKIPPED (\[\d+\] .*)$", text, re.M)]


def main(argv):
    if len(argv) == 3 and argv[1] == "ctest":
        out = ctest_skips(argv[2])
    elif len(argv) == 4 and argv[1] == "pytest":
        out = pytest_skips(argv[2], argv[3])
    else:
        sys.exit(__doc__)
    for line in out:
        print(line)


if __name__ == "__main__":
    main(sys.argv)
