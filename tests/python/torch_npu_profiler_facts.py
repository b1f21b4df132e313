"""Checks the recorded facts about torch_npu's profiler output (folder and file names, CSV columns,
JSON keys) against an unpacked torch_npu wheel, by parsing its sources with ast (no import).

    torch_npu_profiler_facts.py WHEEL_DIR FACTS_JSON

Each fact names a file under torch_npu/profiler/, and either a class attribute (its literal value,
with names of the same class resolved) or a string literal the file must contain. Exits 0 when
every fact holds, 1 listing those that do not, 77 (skip) when the wheel is absent.
"""
import ast
import json
import os
import sys


def class_attrs(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            attrs = {}
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    attrs[stmt.targets[0].id] = stmt.value
            return attrs
    raise KeyError("no class " + name)


def value_of(expr, attrs):
    if isinstance(expr, ast.Name) and expr.id in attrs:
        return value_of(attrs[expr.id], attrs)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [value_of(e, attrs) for e in expr.elts]
    if isinstance(expr, ast.Dict):
        # Keys like CANNDataEnum.NIC are kept as their source text.
        return {ast.unparse(k): value_of(v, attrs) for k, v in zip(expr.keys, expr.values)}
    return ast.literal_eval(expr)


def string_literals(tree):
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def main(argv):
    wheel, facts_path = argv[1], argv[2]
    base = os.path.join(wheel, "torch_npu", "profiler")
    if not os.path.isdir(base):
        print("skip: no torch_npu wheel unpacked at " + wheel)
        return 77
    with open(facts_path, encoding="utf-8") as f:
        facts = json.load(f)
    failures, checked = [], 0
    for fact in facts["facts"]:
        path = os.path.join(base, fact["file"])
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        where = fact["file"] + (":" + fact["class"] + "." + fact["attr"] if "attr" in fact else "")
        try:
            if "attr" in fact:
                attrs = class_attrs(tree, fact["class"])
                got = value_of(attrs[fact["attr"]], attrs)
                if got != fact["value"]:
                    failures.append("%s is %r, recorded %r" % (where, got, fact["value"]))
            else:
                if fact["literal"] not in string_literals(tree):
                    failures.append("%s has no string %r" % (where, fact["literal"]))
            checked += 1
        except KeyError as e:
            failures.append("%s: %s" % (where, e))
    for f in failures:
        print("mismatch: " + f)
    print("%d facts checked against torch_npu %s, %d mismatches" % (checked, facts["torch_npu"], len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
