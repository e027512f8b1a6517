"""A STAND-IN for ``pycuda.driver`` (tests only): imitates the calls beastgen makes, on no GPU.

Environment (read at ``init``; inherited by the benchmark worker):

- ``STANDIN_LOG``: a file; every imitated driver event is appended as one line ("init",
  "context", "pop", "load cubin", "launch NAME", "sticky ...").
- ``STANDIN_NO_DRIVER=1``: ``init`` fails as without an NVIDIA driver.
- ``STANDIN_GPU``: the GPU imitated, ``a6000`` (default: "NVIDIA RTX A6000", sm_86, 84 SMs) or
  ``h100`` ("NVIDIA H100 80GB HBM3", sm_90, 132 SMs: what the device machine has), each with the
  attributes its driver reports.
- ``STANDIN_CC=8.6``: overrides the compute capability.
- ``STANDIN_MEMORY``: bytes of device memory (default 48 GiB): a bigger allocation is out of memory.
- ``STANDIN_REJECT_IMAGES=1``: every module load fails (a driver older than the toolkit).

A kernel's image chooses its launch: the symbol ``STANDIN_FAULT`` makes it an illegal memory
access (sticky: every later call fails), ``STANDIN_HANG`` a kernel that never ends, ``STANDIN_SLOW``
one that takes 2 s. ``calibrate``'s ``fma_f32`` writes, for each block, 2100 clock ticks over
1000 ns (a 2.1 GHz clock) into its last argument. Device memory is host memory; a launch leaves it
as it was (the first run's outputs read back are its inputs).

``STANDIN_EMULATE=gemm``: the first launch of ``spaces/kernels/gemm.cl`` on each output buffer
computes C = alpha A B + beta C with NumPy (column-major, no transposition: the settings trans_a =
trans_b = 0), so that a tune of ``spaces/gemm.py`` through the stand-in verifies and records
configurations. A product of the same inputs is computed once, timed, and kept with its time in a
file of the temporary folder for the next process.

Time: the events read a clock of the imitated device, which each launch advances by what it costs.
An emulated gemm costs the MEASURED time NumPy took to compute its product on this machine's CPU
(the timed launches after the first, whose output nobody reads, are not computed again but cost the
same): a real time, and far slower than any GPU, so that a lower bound above it is wrong for sure.
Every other launch costs a made-up 0.5 ms (2 s for ``STANDIN_SLOW``): the stand-in does not do
their work, so it has no time of its own to report.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time

import numpy as np

ILLEGAL_ADDRESS = "an illegal memory access was encountered"


class Error(Exception):
    pass


class MemoryError(Error):  # noqa: A001 - pycuda's name
    pass


class LogicError(Error):
    pass


class LaunchError(Error):
    pass


class RuntimeError(Error):  # noqa: A001 - pycuda's name
    pass


_state = {"sticky": False, "stack": [], "allocated": 0, "clock_ns": 0}  # an exact clock: whole ns
#: seconds a launch costs on the imitated device where the stand-in does not do its work
MADE_UP_SECONDS = 0.5e-3


def _log(event: str) -> None:
    path = os.environ.get("STANDIN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {event}\n")


def _check(routine: str) -> None:
    if _state["sticky"]:
        raise LogicError(f"{routine} failed: {ILLEGAL_ADDRESS}")


def init(flags: int = 0) -> None:
    if os.environ.get("STANDIN_NO_DRIVER"):
        raise RuntimeError("cuInit failed: no CUDA-capable device is detected")
    _log("init")


def get_driver_version() -> int:
    return 13000


def get_version() -> tuple:
    return (13, 0, 0)


class device_attribute:  # noqa: N801 - pycuda's name
    MULTIPROCESSOR_COUNT = "MULTIPROCESSOR_COUNT"
    MAX_THREADS_PER_BLOCK = "MAX_THREADS_PER_BLOCK"
    MAX_BLOCK_DIM_X = "MAX_BLOCK_DIM_X"
    MAX_BLOCK_DIM_Y = "MAX_BLOCK_DIM_Y"
    MAX_BLOCK_DIM_Z = "MAX_BLOCK_DIM_Z"
    WARP_SIZE = "WARP_SIZE"
    MAX_THREADS_PER_MULTIPROCESSOR = "MAX_THREADS_PER_MULTIPROCESSOR"
    MAX_BLOCKS_PER_MULTIPROCESSOR = "MAX_BLOCKS_PER_MULTIPROCESSOR"
    MAX_REGISTERS_PER_MULTIPROCESSOR = "MAX_REGISTERS_PER_MULTIPROCESSOR"
    MAX_REGISTERS_PER_BLOCK = "MAX_REGISTERS_PER_BLOCK"
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"
    MAX_SHARED_MEMORY_PER_BLOCK = "MAX_SHARED_MEMORY_PER_BLOCK"
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"
    L2_CACHE_SIZE = "L2_CACHE_SIZE"
    COMPUTE_CAPABILITY_MAJOR = "COMPUTE_CAPABILITY_MAJOR"
    COMPUTE_CAPABILITY_MINOR = "COMPUTE_CAPABILITY_MINOR"
    CLOCK_RATE = "CLOCK_RATE"
    MEMORY_CLOCK_RATE = "MEMORY_CLOCK_RATE"
    GLOBAL_MEMORY_BUS_WIDTH = "GLOBAL_MEMORY_BUS_WIDTH"
    PCI_DOMAIN_ID = "PCI_DOMAIN_ID"
    PCI_BUS_ID = "PCI_BUS_ID"
    PCI_DEVICE_ID = "PCI_DEVICE_ID"


#: an RTX A6000's attributes (sm_86), as its driver reports them
A6000 = {
    "MULTIPROCESSOR_COUNT": 84, "MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
    "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64, "WARP_SIZE": 32,
    "MAX_THREADS_PER_MULTIPROCESSOR": 1536, "MAX_BLOCKS_PER_MULTIPROCESSOR": 16,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MAX_REGISTERS_PER_BLOCK": 65536,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 102400, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 101376, "L2_CACHE_SIZE": 6291456,
    "CLOCK_RATE": 1800000, "MEMORY_CLOCK_RATE": 8001000, "GLOBAL_MEMORY_BUS_WIDTH": 384,
    "PCI_DOMAIN_ID": 0, "PCI_BUS_ID": 0x41, "PCI_DEVICE_ID": 0,
}


#: an H100 SXM5 80GB's (sm_90), as its driver reports them (CUDA C++ Programming Guide, compute
#: capability 9.0; deviceQuery of an H100 80GB HBM3)
H100 = {
    "MULTIPROCESSOR_COUNT": 132, "MAX_THREADS_PER_BLOCK": 1024, "MAX_BLOCK_DIM_X": 1024,
    "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64, "WARP_SIZE": 32,
    "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MAX_REGISTERS_PER_BLOCK": 65536,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448, "L2_CACHE_SIZE": 52428800,
    "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
    "PCI_DOMAIN_ID": 0, "PCI_BUS_ID": 0x41, "PCI_DEVICE_ID": 0,
}
#: STANDIN_GPU -> (name, compute capability, attributes, bytes of memory)
GPUS = {"a6000": ("NVIDIA RTX A6000", "8.6", A6000, 48 << 30),
        "h100": ("NVIDIA H100 80GB HBM3", "9.0", H100, 81559 << 20)}


def _gpu():
    key = os.environ.get("STANDIN_GPU", "a6000")
    if key not in GPUS:
        raise LogicError(f"STANDIN_GPU={key!r}: the stand-in imitates {', '.join(GPUS)}")
    return GPUS[key]


def _capability() -> tuple[int, int]:
    major, _, minor = os.environ.get("STANDIN_CC", _gpu()[1]).partition(".")
    return int(major), int(minor or 0)


class Device:
    def __init__(self, index: int):
        if index != 0:
            raise LogicError("cuDeviceGet failed: invalid device ordinal")

    def name(self) -> str:
        return _gpu()[0]

    def compute_capability(self) -> tuple[int, int]:
        return _capability()

    def get_attribute(self, attribute):
        major, minor = _capability()
        return {**_gpu()[2], "COMPUTE_CAPABILITY_MAJOR": major,
                "COMPUTE_CAPABILITY_MINOR": minor}[attribute]

    def total_memory(self) -> int:
        return int(os.environ.get("STANDIN_MEMORY", _gpu()[3]))

    def make_context(self) -> "Context":
        _log("context")
        context = Context()
        _state["stack"].append(context)
        return context


class Context:
    def pop(self) -> None:
        _state["stack"].pop()
        _log("pop")

    @staticmethod
    def synchronize() -> None:
        _check("cuCtxSynchronize")
        for kernel in _state.pop("pending", []):
            kernel.finish()
        _check("cuCtxSynchronize")


class DeviceAllocation:
    def __init__(self, nbytes: int):
        _check("cuMemAlloc")
        if _state["allocated"] + nbytes > Device(0).total_memory():
            raise MemoryError("cuMemAlloc failed: out of memory")
        _state["allocated"] += nbytes
        self.data = bytearray(max(nbytes, 1))
        self.nbytes = nbytes

    def free(self) -> None:
        _check("cuMemFree")
        _state["allocated"] -= self.nbytes


def mem_alloc(nbytes: int) -> DeviceAllocation:
    return DeviceAllocation(int(nbytes))


def to_device(array: np.ndarray) -> DeviceAllocation:
    allocation = DeviceAllocation(array.nbytes)
    allocation.data[:array.nbytes] = np.ascontiguousarray(array).tobytes()
    return allocation


def from_device_like(allocation: DeviceAllocation, like: np.ndarray) -> np.ndarray:
    _check("cuMemcpyDtoH")
    return np.frombuffer(bytes(allocation.data[:like.nbytes]), like.dtype).reshape(like.shape).copy()


def memcpy_dtoh(target: np.ndarray, allocation: DeviceAllocation) -> None:
    _check("cuMemcpyDtoH")
    target.view(np.uint8).reshape(-1)[:] = np.frombuffer(bytes(allocation.data[:target.nbytes]),
                                                         np.uint8)


class Event:
    """Records the imitated device's clock: when the work launched before it ends."""

    def record(self) -> None:
        _check("cuEventRecord")
        self.at = _state["clock_ns"]

    def synchronize(self) -> None:
        Context.synchronize()

    def time_till(self, other: "Event") -> float:
        _check("cuEventElapsedTime")
        return (other.at - self.at) / 1e6  # milliseconds, as pycuda's


class Function:
    def __init__(self, name: str, image: bytes):
        self.name = name
        self.image = image

    def __call__(self, *args, block=(1, 1, 1), grid=(1, 1), **kwargs) -> None:
        _check("cuLaunchKernel")
        if b"STANDIN_THREADS" in self.image and args and isinstance(args[0], DeviceAllocation):
            out = np.arange(block[0], dtype=np.int32).tobytes()  # the set-up kernel's result
            args[0].data[:len(out)] = out
        cost = 2.0 if b"STANDIN_SLOW" in self.image else MADE_UP_SECONDS
        if self.name == "gemm" and "gemm" in os.environ.get("STANDIN_EMULATE", "").split(","):
            cost = _emulate_gemm(args)
        if self.name == "fma_f32" and isinstance(args[-1], DeviceAllocation):
            ticks = np.tile(np.array([2100, 1000], np.uint64), grid[0]).tobytes()
            args[-1].data[:len(ticks)] = ticks
        _state["clock_ns"] += round(cost * 1e9)
        _log(f"launch {self.name}")
        _state.setdefault("pending", []).append(self)

    def finish(self) -> None:
        if b"STANDIN_FAULT" in self.image:
            _state["sticky"] = True
            _log("sticky illegal address")
        elif b"STANDIN_HANG" in self.image:
            _log("hang")
            time.sleep(3600)
        elif b"STANDIN_SLOW" in self.image:
            _log("slow")
            time.sleep(2)


#: the last product _emulate_gemm computed: (key of its inputs, C's bytes, seconds it took)
_product: dict = {}


def _emulate_gemm(args) -> float:
    """C = alpha A B + beta C for spaces/kernels/gemm.cl's arguments (m, n, k, alpha, A, lda, B, ldb,
    beta, C, ldc; complex alpha and beta as two reals each), column-major and untransposed, computed
    on the first launch on each C only (later ones are the timed runs, whose output nobody reads);
    the seconds NumPy took to compute this product (what every launch of it costs)."""
    complex_ = len(args) == 13
    m, n, k = (int(a) for a in args[:3])
    if complex_:
        alpha, a, lda, b, ldb = complex(args[3], args[4]), *args[5:8]
        beta, c, ldc = complex(args[8], args[9]), args[10], args[11]
    else:
        alpha, a, lda, b, ldb, beta, c, ldc = args[3:11]
    if (int(lda), int(ldb), int(ldc)) != (m, k, m):
        return MADE_UP_SECONDS  # a transposed layout is not emulated: C is left as it was (a wrong result)
    if getattr(c, "emulated", None) is not None:
        return c.emulated
    real = np.dtype(type(args[3]))
    dtype = np.dtype(np.complex64 if real == np.float32 else np.complex128) if complex_ else real

    def matrix(allocation, rows, columns):  # column-major: element (i, j) at i + j * rows
        return np.frombuffer(bytes(allocation.data[:rows * columns * dtype.itemsize]),
                             dtype).reshape(columns, rows).T

    key = (m, n, k, dtype.str, alpha, beta,
           *(bytes(x.data[::4099]) for x in (a, b, c)))  # a sample of the inputs: a stand-in's key
    if _product.get("key") != key:  # computed once, kept with its time for the next worker process
        path = os.path.join(tempfile.gettempdir(), "beastgen-standin-timed-gemm-"
                            + hashlib.sha256(repr(key).encode()).hexdigest()[:20])
        try:
            with open(path, "rb") as f:
                seconds, value = float(np.frombuffer(f.read(8), np.float64)[0]), f.read()
        except (OSError, IndexError):
            inputs = matrix(a, m, k), matrix(b, k, n), matrix(c, m, n)
            started = time.perf_counter()
            product = alpha * (inputs[0] @ inputs[1]) + beta * inputs[2]
            seconds = time.perf_counter() - started
            value = product.astype(dtype).ravel(order="F").tobytes()
            with open(f"{path}.{os.getpid()}", "wb") as f:
                f.write(np.float64(seconds).tobytes() + value)
            os.replace(f"{path}.{os.getpid()}", path)
        _product.update(key=key, value=value, seconds=seconds)
    c.data[:len(_product["value"])] = _product["value"]
    c.emulated = _product["seconds"]
    return c.emulated


class Module:
    def __init__(self, image: bytes):
        self.image = image

    def get_function(self, name: str) -> Function:
        _check("cuModuleGetFunction")
        found = (b"\0" + name.encode() + b"\0" in self.image if self.image.startswith(b"\x7fELF")
                 else re.search(rb"\.entry\s+" + re.escape(name.encode()) + rb"\s*\(", self.image))
        if not found:
            raise LogicError("cuModuleGetFunction failed: named symbol not found")
        return Function(name, self.image)


def module_from_buffer(image: bytes, options=None, message_handler=None) -> Module:
    _check("cuModuleLoadDataEx")
    if os.environ.get("STANDIN_REJECT_IMAGES"):
        raise LogicError("cuModuleLoadDataEx failed: the provided PTX was compiled with an "
                         "unsupported toolchain.")
    kind = "cubin" if image.startswith(b"\x7fELF") else "ptx" if b".target" in image else None
    if kind is None:
        raise LogicError("cuModuleLoadDataEx failed: device kernel image is invalid")
    _log(f"load {kind}")
    image = bytes(image)
    if b"beastgen_setup_check" in image:  # the set-up check's kernel writes its thread indices
        image += b"STANDIN_THREADS"
    return Module(image)
