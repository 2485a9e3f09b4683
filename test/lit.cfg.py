# lit configuration for kiln's FileCheck tests. test/<part>/<feature>.mlir mirrors
# the code; each file's RUN lines name the tool they drive.
import os

import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "runtime", "unit", "tools", "make_model.py"]

# %python runs the interpreter that has onnx and numpy (model generators).
config.substitutions.append(("%python", config.python_executable))

# Kernels that tests compile for host emulation and NVRTC are cached in the build
# tree, never in the user's home.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.kiln_obj_root, "kernel-cache")

# %fake-cuda runs a command on the fake CUDA driver (test/runtime/fake_cuda), which
# executes launches through the kernels' host launchers, and the cuBLASLt/cuDNN
# doubles beside it: through scripts/with-fake-cuda.sh, as users run it.
config.substitutions.append((
    "%fake-cuda",
    "env KILN_BUILD=%s %s" % (config.kiln_obj_root,
                              os.path.join(config.kiln_src_root, "scripts", "with-fake-cuda.sh"))))

# %ort-python: a Python with onnxruntime (scripts/install-onnxruntime-deps.sh),
# for the tests checked against onnxruntime's own ops. Only the ctest entry
# onnx.onnxruntime-ops makes one and names it; the plain lit run leaves those
# tests unsupported.
ort_python = os.environ.get("KILN_ORT_PYTHON")
if ort_python:
    config.available_features.add("onnxruntime")
    config.substitutions.append(("%ort-python", ort_python))

# %kiln_tools_dir: where kiln's tools are (a test copies one elsewhere).
config.substitutions.append(("%kiln_tools_dir", config.kiln_tools_dir))

# kiln's tools first, then FileCheck and not from LLVM.
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
