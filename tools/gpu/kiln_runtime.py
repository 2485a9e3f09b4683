"""A ctypes binding of kiln's C API (runtime/include/kiln/runtime.h) for scripts
that run compiled models where only libkiln_runtime is: the GPU machine's
benchmarks (tools/gpu/bench.py) compare kiln with torch in one process this way.

    model = Model("encoder.so", backend="auto")
    (y,) = model.run([x])            # numpy arrays in and out
"""
import ctypes
import os

import numpy as np

MAX_RANK = 8
BACKENDS = {"auto": 0, "cuda": 1, "host": 2}
# kiln_dtype_t, in order; None where numpy has no dtype (bf16, float8, ...).
DTYPES = [np.float16, None, np.float32, np.float64, np.bool_, np.int8, np.int16, np.int32,
          np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p),
                ("size_bytes", ctypes.c_size_t)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class RunOptions(ctypes.Structure):
    # kiln_run_options_t of C API v1: struct_size first, set to the struct's size.
    _fields_ = [("struct_size", ctypes.c_size_t), ("stream", ctypes.c_void_p),
                ("device_buffers", ctypes.c_int), ("profile", ctypes.c_void_p)]


class KilnError(RuntimeError):
    pass


def load_library(path=None):
    """libkiln_runtime from `path`, $KILN_RUNTIME_LIB, or the loader's search path."""
    lib = ctypes.CDLL(path or os.environ.get("KILN_RUNTIME_LIB", "libkiln_runtime.so"))
    lib.kiln_last_error.restype = ctypes.c_char_p
    lib.kiln_runtime_version.restype = ctypes.c_char_p
    lib.kiln_model_load_file.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
    lib.kiln_model_destroy.argtypes = [ctypes.c_void_p]
    lib.kiln_model_backend_description.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
    for f in ("kiln_model_num_inputs", "kiln_model_num_outputs"):
        getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    for f in ("kiln_model_input_info", "kiln_model_output_info"):
        getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(TensorInfo)]
    lib.kiln_model_output_shapes.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_size_t,
                                             ctypes.POINTER(Tensor), ctypes.c_size_t]
    lib.kiln_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_size_t,
                                   ctypes.POINTER(Tensor), ctypes.c_size_t, ctypes.POINTER(RunOptions)]
    lib.kiln_model_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_size_t,
                                      ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    lib.kiln_profile_create.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.kiln_profile_destroy.argtypes = [ctypes.c_void_p]
    lib.kiln_profile_num_events.argtypes = [ctypes.c_void_p]
    lib.kiln_profile_num_events.restype = ctypes.c_size_t
    lib.kiln_profile_event.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_double),
                                       ctypes.POINTER(ctypes.c_double)]
    return lib


def _view(array):
    t = Tensor()
    t.dtype = DTYPES.index(array.dtype.type)
    t.rank = array.ndim
    for i, d in enumerate(array.shape):
        t.dims[i] = d
    t.data = array.ctypes.data
    t.size_bytes = array.nbytes
    return t


class Model:
    def __init__(self, path, backend="auto", lib=None):
        self.lib = lib or load_library()
        self.handle = ctypes.c_void_p()
        self._check(self.lib.kiln_model_load_file(path.encode(), BACKENDS[backend],
                                                  ctypes.byref(self.handle)), f"loading {path}")
        text = ctypes.c_char_p()
        self.lib.kiln_model_backend_description(self.handle, ctypes.byref(text))
        self.backend = text.value.decode()
        n = ctypes.c_size_t()
        self.lib.kiln_model_num_outputs(self.handle, ctypes.byref(n))
        self.num_outputs = n.value

    def _check(self, status, what):
        if status != 0:
            raise KilnError(f"{what}: {self.lib.kiln_last_error().decode()}")

    def run(self, inputs, profile=None):
        """Runs on numpy arrays; returns the outputs as numpy arrays."""
        inputs = [np.ascontiguousarray(a) for a in inputs]
        ins = (Tensor * len(inputs))(*[_view(a) for a in inputs])
        outs = (Tensor * self.num_outputs)()
        self._check(self.lib.kiln_model_output_shapes(self.handle, ins, len(inputs), outs,
                                                      self.num_outputs), "sizing outputs")
        arrays = []
        for o in outs:
            a = np.empty([o.dims[i] for i in range(o.rank)], dtype=DTYPES[o.dtype])
            o.data, o.size_bytes = a.ctypes.data, a.nbytes
            arrays.append(a)
        options = RunOptions(ctypes.sizeof(RunOptions), None, 0, profile)
        self._check(self.lib.kiln_model_run(self.handle, ins, len(inputs), outs, self.num_outputs,
                                            ctypes.byref(options)), "running")
        return arrays

    def memory(self, inputs):
        inputs = [np.ascontiguousarray(a) for a in inputs]
        ins = (Tensor * len(inputs))(*[_view(a) for a in inputs])
        arena, unplanned = ctypes.c_size_t(), ctypes.c_size_t()
        self._check(self.lib.kiln_model_memory(self.handle, ins, len(inputs), ctypes.byref(arena),
                                               ctypes.byref(unplanned)), "memory plan")
        return arena.value, unplanned.value

    def profile(self, inputs, runs=10):
        """Per step name: (kind, calls, total microseconds), from `runs` runs."""
        prof = ctypes.c_void_p()
        self.lib.kiln_profile_create(ctypes.byref(prof))
        try:
            for _ in range(runs):
                self.run(inputs, profile=prof)
            table = {}
            name, kind = ctypes.c_char_p(), ctypes.c_char_p()
            start, duration = ctypes.c_double(), ctypes.c_double()
            for i in range(self.lib.kiln_profile_num_events(prof)):
                self.lib.kiln_profile_event(prof, i, ctypes.byref(name), ctypes.byref(kind),
                                            ctypes.byref(start), ctypes.byref(duration))
                k, calls, total = table.get(name.value.decode(), (kind.value.decode(), 0, 0.0))
                table[name.value.decode()] = (k, calls + 1, total + duration.value)
            return table
        finally:
            self.lib.kiln_profile_destroy(prof)

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.kiln_model_destroy(self.handle)
