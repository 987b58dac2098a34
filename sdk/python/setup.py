"""Builds the `_trainwatch` extension with CMake on the repository root (only that target) and
installs it inside the `trainwatch` package.

TRAINWATCH_BUILD_DIR: an already configured build directory to reuse (only `_trainwatch` is
rebuilt there); default: a fresh Release build in build-pip/ of this checkout. CMAKE_ARGS: extra
arguments for the configure step. Needs the repository's C++ dependencies (scripts/install-deps.sh).
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SDK_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(SDK_DIR))


def cmake_build_dir():
    return os.path.abspath(os.environ.get("TRAINWATCH_BUILD_DIR") or os.path.join(REPO, "build-pip"))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = cmake_build_dir()
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            configure = ["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                         "-DPython3_EXECUTABLE=" + sys.executable]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
            subprocess.run(configure, check=True)
        jobs = ["--parallel", str(os.cpu_count() or 1)]
        subprocess.run(["cmake", "--build", build_dir, "--target", "_trainwatch"] + jobs, check=True)

        built_dir = os.path.join(build_dir, "python", "trainwatch")
        module = [f for f in os.listdir(built_dir)
                  if f.startswith("_trainwatch.") and f.endswith((".so", ".pyd"))]
        if len(module) != 1:
            raise RuntimeError("expected one _trainwatch module in %s, found %s" % (built_dir, module))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built_dir, module[0]), target)


# setuptools' own scratch files go beside the CMake build, not into the source tree.
SCRATCH = os.path.join(cmake_build_dir(), "setuptools")
os.makedirs(SCRATCH, exist_ok=True)
setup(ext_modules=[CMakeExtension("trainwatch._trainwatch")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": SCRATCH}, "egg_info": {"egg_base": SCRATCH}})
