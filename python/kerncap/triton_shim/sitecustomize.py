# kerncap's Triton compile-metadata shim. `kerncap extract` puts this folder first on
# PYTHONPATH, so Python runs this file at startup in the application and in every Python
# process it starts (Inductor's compile workers too). It does nothing unless
# KERNCAP_TRITON_OUT is set, never raises into the application, and then hands over to the
# sitecustomize module this one shadows, if there is one.
import os as _os
import sys as _sys


def _kerncap_triton_shim():
    here = _os.path.dirname(_os.path.abspath(__file__))
    out = _os.environ.get("KERNCAP_TRITON_OUT")
    if out:
        try:
            import importlib.util

            spec = importlib.util.spec_from_file_location("_kerncap_triton_shim",
                                                          _os.path.join(here, "_kerncap_triton_shim.py"))
            mod = importlib.util.module_from_spec(spec)
            _sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            mod.install(out)
        except Exception as e:  # the application must run on regardless
            _sys.stderr.write(f"kerncap: the Triton shim could not start ({e!r}); Triton metadata is not recorded\n")
    # Chain to the sitecustomize this file shadows (one found later on sys.path).
    try:
        from importlib.machinery import PathFinder

        rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = PathFinder.find_spec("sitecustomize", rest)
        if spec is not None and spec.loader is not None and spec.origin != __file__:
            import importlib.util

            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
    except Exception as e:
        _sys.stderr.write(f"kerncap: the application's own sitecustomize failed: {e!r}\n")


_kerncap_triton_shim()
del _kerncap_triton_shim
