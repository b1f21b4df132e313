# Loaded by Python at start-up because `crosstrain run` puts this folder first on PYTHONPATH.
# It arms crosstrain's agent (which waits for `torch` to be imported) and then runs the
# sitecustomize this one shadows, if any, so the environment behaves as it did without crosstrain.
import os
import sys


def _arm():
    if not os.environ.get("CROSSTRAIN_AGENT_CONFIG"):
        return
    try:
        _import_package().start_from_environment()
    except Exception as e:  # never stop the user's program
        sys.stderr.write(f"crosstrain: the agent did not load: {type(e).__name__}: {e}\n")


def _import_package():
    """crosstrain's agent from the folder above this one, without adding that folder to sys.path."""
    import importlib.util
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "crosstrain" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "crosstrain", os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules["crosstrain"] = module
        spec.loader.exec_module(module)
    import crosstrain._agent
    return crosstrain._agent


def _chain():
    """Runs the next sitecustomize on sys.path after this folder, as Python would have."""
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # Python itself only warns about a failing sitecustomize
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(e).__name__}: {e}\n")


_arm()
_chain()
