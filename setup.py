"""Builds the _npuc extension with CMake as part of a normal setuptools build.

`pip install --no-build-isolation .` works offline: CMake, a C++ compiler and the Debian -dev
packages listed in tools/install_deps.sh are the only requirements.
"""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DNPUC_PYTHON_OUT={out_dir}",
            "-DNPUC_BUILD_TESTS=OFF",
        ]
        if os.environ.get("NPUC_NATIVE", "ON").upper() in ("0", "OFF", "NO"):
            configure.append("-DNPUC_NATIVE=OFF")
        subprocess.check_call(configure)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_npuc", "-j", jobs])


setup(ext_modules=[CMakeExtension("npuc._npuc")], cmdclass={"build_ext": CMakeBuild})
