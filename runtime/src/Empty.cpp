// libkiln_runtime.so is kiln_runtime_core linked whole; this file gives the target a source.
