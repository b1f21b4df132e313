"""Whether dotted names exist in an unpacked torch_npu package, found by parsing its sources with
ast: nothing of torch_npu is imported (that would need Ascend's CANN libraries).

    torch_npu_names.py DIR NAME...     DIR holds the torch_npu/ package

`torch.npu.X` is looked up as `torch_npu.npu.X`: torch_npu registers that module as torch.npu
(torch._register_device_module("npu", torch_npu.npu)). A name exists when each part is a
subpackage or module file, or, for the last part, a top-level definition, assignment, import or
__all__ entry of the module before it (following `from .x import *`); a top-level `torch_npu.X` also
exists when X is one of the compiled operators the extension puts on the module
(torch_npu.npu_fusion_attention), which torch_npu/_op_plugin_docs.py documents by name. Prints `ok NAME` or
`missing NAME: why` per name; exits 1 when one is missing.
"""
import ast
import os
import sys


def module_file(root, parts):
    base = os.path.join(root, *parts)
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py")
    if os.path.isfile(base + ".py"):
        return base + ".py"
    return None


def _walk_top(body):
    # Top-level statements, including those under if/try (version switches, optional imports).
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            for child in (node.body, node.orelse, getattr(node, "finalbody", []), *[h.body for h in getattr(node, "handlers", [])]):
                yield from _walk_top(child)


def module_names(path, parts, root, seen=None):
    seen = seen if seen is not None else set()
    if path in seen:
        return set()
    seen.add(path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in _walk_top(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                if isinstance(t, ast.Name) and t.id == "__all__" and isinstance(node.value, (ast.List, ast.Tuple)):
                    names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name != "*":
                    names.add(a.asname or a.name)
                    continue
                # from .x import *: the names of x (relative to this package).
                package = parts if path.endswith("__init__.py") else parts[:-1]
                base = package[: len(package) - node.level + 1] if node.level else []
                target = base + (node.module.split(".") if node.module else [])
                star = module_file(root, target)
                if star:
                    names.update(n for n in module_names(star, target, root, seen) if not n.startswith("_"))
    return names


def compiled_operators(root):
    """Names given to _add_torch_npu_docstr("NAME", ...) in torch_npu/_op_plugin_docs.py."""
    path = os.path.join(root, "torch_npu", "_op_plugin_docs.py")
    if not os.path.isfile(path):
        return set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_add_torch_npu_docstr"
            and node.args and isinstance(node.args[0], ast.Constant)}


def exists(root, dotted):
    parts = dotted.split(".")
    if parts[:2] == ["torch", "npu"]:
        parts = ["torch_npu", "npu"] + parts[2:]
    if parts[0] != "torch_npu":
        return False, "not a torch_npu name"
    if not module_file(root, parts[:1]):
        return False, "no torch_npu package in " + root
    for i in range(1, len(parts)):
        if module_file(root, parts[: i + 1]):
            continue
        module = module_file(root, parts[:i])
        known = module_names(module, parts[:i], root)
        if i == 1:
            known |= compiled_operators(root)
        if parts[i] not in known:
            return False, "%s defines no %s" % (os.path.relpath(module, root), parts[i])
        if i + 1 < len(parts):
            return True, "attribute %s of %s not checked" % (".".join(parts[i + 1:]), parts[i])
        return True, ""
    return True, ""


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    root, names = argv[1], argv[2:]
    bad = 0
    for name in names:
        ok, why = exists(root, name)
        print(("ok %s" % name) if ok else ("missing %s: %s" % (name, why)))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
