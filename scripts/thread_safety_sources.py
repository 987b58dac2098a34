#!/usr/bin/env python3
"""Prints the object files of a TRAINWATCH_THREAD_SAFETY build that scripts/check_thread_safety.sh
builds: those of the project's own .cc files (not generated ones) that include, directly or through
other project headers, common/thread_annotations.h. A file that does not cannot hold an annotation
for -Wthread-safety to check, so parsing it would be time spent for nothing.

    thread_safety_sources.py BUILD_DIR

Includes are matched by path suffix (`#include "common/mutex.h"` matches every project file whose
path ends in /common/mutex.h): a false match only adds a file to check, never leaves one out.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE_DIRS = ["src", "sdk", "tools", "tests", "bench", "fuzz"]
ANNOTATIONS = "src/common/thread_annotations.h"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# build <object>: CXX_COMPILER__<target>_<config> <source> ...
OBJECT = re.compile(r"^build (\S+\.o): CXX_COMPILER__\S+ (\S+)", re.M)


def project_files():
    for d in SOURCE_DIRS:
        for p in (ROOT / d).rglob("*"):
            if p.suffix in (".h", ".cc") and p.is_file():
                yield p.relative_to(ROOT).as_posix()


def files_reaching_annotations(files):
    """The files that include ANNOTATIONS, directly or transitively (ANNOTATIONS among them)."""
    included_by = {}  # header -> the files that include it
    for f in files:
        for name in INCLUDE.findall((ROOT / f).read_text(errors="replace")):
            for header in files:
                if header == name or header.endswith("/" + name):
                    included_by.setdefault(header, set()).add(f)
    reached, todo = {ANNOTATIONS}, [ANNOTATIONS]
    while todo:
        for f in included_by.get(todo.pop(), ()):
            if f not in reached:
                reached.add(f)
                todo.append(f)
    return reached


def main():
    build = pathlib.Path(sys.argv[1]).resolve()
    files = sorted(project_files())
    reached = files_reaching_annotations(files)
    ninja = (build / "build.ninja").read_text()
    for obj, source in OBJECT.findall(ninja):
        src = pathlib.Path(source)
        if not src.is_absolute():
            src = (build / src).resolve()
        try:
            rel = src.relative_to(ROOT).as_posix()
        except ValueError:
            continue  # outside the repository
        if rel in reached:
            print(obj)


if __name__ == "__main__":
    main()
