#!/usr/bin/env bash
# The wheels that benchmarks/gpu_acceptance.py installs on a GPU machine with no network (Python
# 3.12, CUDA 13, no pycuda): pycuda built here against this machine's CUDA headers and a stub of
# the driver library, and the pure or manylinux wheels of what pycuda and Kernel Tuner need that the
# machine lacks. They go to .whl/ in the repository root (ignored by .gitignore: never committed),
# which the device call carries. Checked here: each wheel's size, the total that would travel
# (tracked + untracked-not-ignored files + .whl/), that pycuda's extension needs libcuda.so.1 from
# the driver (dynamically linked) and resolves every CUDA symbol, and that it imports on 3.12.
#
#     benchmarks/gpu_wheels.sh                 # PYTHON312=/path/to/python3.12 to choose the Python
#
# Needs: a Python 3.12 with pip, gcc/g++, the CUDA toolkit's headers (CUDA_ROOT, default
# /usr/local/cuda), and PyPI. Building pycuda (its shipped Boost) takes 5 to 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

PYCUDA=2026.1  # >= 2025.1.2, the first that builds against CUDA 13
# pycuda's needs (pytools needs platformdirs, siphash24, typing-extensions: the last is there), then
# Kernel Tuner and its needs that the machine lacks (it has numpy, pandas, scipy, scikit-learn,
# packaging, attrs; pymoo is only imported by the pymoo strategies)
PINNED="pytools==2026.1.1 platformdirs==4.14.8 siphash24==1.9 mako==1.4.3
kernel_tuner==1.5.0 python-constraint2==2.9.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
referencing==0.37.0 rpds-py==2026.9.1 xmltodict==1.0.4"

python=
for candidate in ${PYTHON312:-} "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python3.12 python3.12; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
        python=$candidate
        break
    fi
done
[ -n "$python" ] || { echo "gpu_wheels.sh: no Python 3.12 found: set PYTHON312=/path/to/python3.12" >&2; exit 2; }
cuda=${CUDA_ROOT:-/usr/local/cuda}
[ -f "$cuda/include/cuda.h" ] || { echo "gpu_wheels.sh: no $cuda/include/cuda.h: set CUDA_ROOT" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf .whl && mkdir -p .whl

# -- the driver library to link against: the toolkit's stub where it ships one, else a stub made from
# cuda.h (every function the headers declare, returning CUDA_ERROR_STUB_LIBRARY = 34), with the
# driver's soname, so that the extension needs libcuda.so.1 and the real driver answers at run time
stubs=$work/stubs
mkdir -p "$stubs"
toolkit_stub=$(ls "$cuda"/lib64/stubs/libcuda.so "$cuda"/lib/stubs/libcuda.so "$cuda"/targets/*/lib/stubs/libcuda.so 2>/dev/null | head -n 1 || true)
if [ -n "$toolkit_stub" ]; then
    cp "$toolkit_stub" "$stubs/libcuda.so"
    echo "driver stub: $toolkit_stub"
else
    printf '#include <cuda.h>\n#include <cudaProfiler.h>\n' > "$work/all.c"
    gcc -E -P -I"$cuda/include" "$work/all.c" | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' \
        | sed 's/[[:space:]]*($//' | sort -u | sed 's/.*/int &(void) { return 34; }/' > "$work/stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stubs/libcuda.so" "$work/stub.c"
    echo "driver stub: made from $cuda/include/cuda.h ($(grep -c . "$work/stub.c") functions)"
fi
ln -s libcuda.so "$stubs/libcuda.so.1"

# -- pycuda from its sdist: no curand (the toolkit here has none, and beastgen does not use it),
# debug information left out (-g0, -s: 19 MB -> 2 MB)
"$python" -m pip download -q --no-deps --no-binary=pycuda "pycuda==$PYCUDA" -d "$work/sdist"
tar xzf "$work"/sdist/pycuda-*.tar.gz -C "$work"
src=$(ls -d "$work"/pycuda-*/)
cat > "$src/siteconf.py" <<EOF
BOOST_INC_DIR = []
BOOST_LIB_DIR = []
BOOST_COMPILER = "gcc"
USE_SHIPPED_BOOST = True
BOOST_PYTHON_LIBNAME = []
BOOST_THREAD_LIBNAME = []
CUDA_TRACE = False
CUDA_ROOT = "$cuda"
CUDA_ENABLE_GL = False
CUDA_ENABLE_CURAND = False
CUDADRV_LIB_DIR = ["$stubs"]
CUDADRV_LIBNAME = ["cuda"]
CUDART_LIB_DIR = []
CUDART_LIBNAME = []
CURAND_LIB_DIR = []
CURAND_LIBNAME = []
CXXFLAGS = ["-g0"]
LDFLAGS = ["-s"]
EOF
echo "building pycuda $PYCUDA for $("$python" -c 'import sys; print(sys.version.split()[0])') against $cuda ..."
"$python" -m pip wheel -q --no-deps -w .whl "$src"

# -- the others, as the device machine's pip would choose them (CPython 3.12, manylinux x86-64)
# shellcheck disable=SC2086
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $PINNED

# -- checks
echo
echo "wheels in .whl/:"
ls -l .whl | awk 'NR > 1 {printf "  %9.2f MB  %s\n", $5 / 1e6, $9}'
site=$work/site
"$python" -m pip install -q --root-user-action=ignore --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl
if ! "$python" -c 'import numpy' 2>/dev/null; then  # pycuda imports NumPy (the GPU machine has it)
    "$python" -m pip install -q --root-user-action=ignore --no-compile --target "$work/numpy" numpy
    site=$site:$work/numpy
fi
extension=$(ls "$work"/site/pycuda/_driver*.so)
readelf -d "$extension" | grep -q 'NEEDED.*\[libcuda\.so\.1\]' \
    || { echo "FAILED: $extension does not need libcuda.so.1" >&2; exit 1; }
echo "pycuda's extension needs (dynamic): $(readelf -d "$extension" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
echo "it needs at most: $(objdump -T "$extension" | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -n 1), $(objdump -T "$extension" | grep -oE 'GLIBCXX_[0-9.]+' | sort -uV | tail -n 1) (the GPU machine's libraries must be as new)"
unresolved=$(LD_LIBRARY_PATH=$stubs ldd -r "$extension" 2>&1 | grep -c 'undefined symbol: cu' || true)
[ "$unresolved" = 0 ] || { echo "FAILED: $unresolved CUDA driver symbols not in the stub" >&2; exit 1; }
PYTHONPATH=$site LD_LIBRARY_PATH=$stubs "$python" -c \
    'import pycuda, pycuda.driver as d; print("pycuda", pycuda.VERSION_TEXT, "imports on Python 3.12, built for CUDA", d.get_version())'
if ! PYTHONPATH=$site "$python" -c 'import pycuda.driver' 2>"$work/import.err"; then
    echo "without a driver, import pycuda.driver fails as expected: $(tail -n 1 "$work/import.err")"
else
    echo "import pycuda.driver succeeds here: this machine has an NVIDIA driver"
fi
travel=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s}')
wheels=$(du -cb .whl/*.whl | awk '$2 == "total" {print $1}')
awk -v t="$travel" -v w="$wheels" 'BEGIN {printf "travels: %.1f MB of files + %.1f MB of wheels = %.1f MiB (limit 64 MiB)\n", t / 1e6, w / 1e6, (t + w) / 1048576}'
[ $((travel + wheels)) -le $((64 * 1048576)) ] || { echo "FAILED: over 64 MiB" >&2; exit 1; }
echo "done: carry .whl in the device call (docs/cuda.md, First run on a new GPU)"
