"""The layout rule of src/tools/: one folder is one library and one namespace.

    python layout_check.py SRC_TOOLS_DIR

Fails (exit 1, one line per problem) when
  - a source file (.h, .cpp, .cu) lies at the root of SRC_TOOLS_DIR instead of in a folder;
  - a folder has no CMakeLists.txt, or its CMakeLists.txt does not build exactly one C++ library
    (a C library of vendored code, such as migrate's tree-sitter, is not counted);
  - a file of a folder opens, at file scope, a namespace other than crosstrain::<folder> (or one
    inside it) with more in it than forward declarations. Anonymous namespaces are the file's own.
  - folders include each other in a cycle (#include "tools/<folder>/..." makes one folder depend on
    another; a cycle means no folder of it can be read, built or tested without the others);
    each cycle is named once, as the path that closes it;
  - a file includes another folder's header while no library of its own folder links (directly or
    through other libraries of the tree) a library of that folder: the include points against the
    direction the build declares, as an upward include does (the first such file is named).
Subfolders of a folder (a plugin such as dist/npu) are their own business and are not checked,
except that their includes count for the folder they are in.
"""
import pathlib
import re
import sys

SOURCE_SUFFIXES = {".h", ".cpp", ".cu"}
RAW_STRING = re.compile(r'R"([^(\s]{0,16})\((.*?)\)\1"', re.S)
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
NAMESPACE_OPEN = re.compile(r"namespace\s+([A-Za-z_][\w:]*)?\s*\{")
TOOLS_INCLUDE = re.compile(r'^\s*#\s*include\s+"tools/([^/"]+)/', re.M)
FORWARD_DECLARATION = re.compile(r"(?:class|struct|enum\s+class|enum)\s+\w+\s*;")


def code_only(text):
    """The text with comments and string literals blanked, so braces inside them do not count."""
    text = RAW_STRING.sub('""', text)
    return COMMENT_OR_LITERAL.sub(lambda m: " " if m.group(0).startswith("/") else '""', text)


def file_scope_namespaces(text):
    """(name, body) of each namespace block opened at file scope; name "" for an anonymous one."""
    code = code_only(text)
    blocks, depth, i = [], 0, 0
    while i < len(code):
        if depth == 0:
            m = NAMESPACE_OPEN.match(code, i)
            if m and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
                end, inner = m.end(), 1
                while end < len(code) and inner:
                    inner += {"{": 1, "}": -1}.get(code[end], 0)
                    end += 1
                blocks.append((m.group(1) or "", code[m.end():end - 1]))
                i = end
                continue
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return blocks


def only_forward_declarations(body):
    return FORWARD_DECLARATION.sub("", body).strip() == ""


def library_count(cmake_text):
    """C++ libraries built from the folder's sources (.cpp/.cu files or a list variable); a C library
    of vendored code, such as migrate's tree-sitter, is not counted."""
    count = 0
    for args in re.findall(r"^\s*add_library\s*\(([^)]*)\)", re.sub(r"#[^\n]*", "", cmake_text), re.M):
        sources = [a.strip('"') for a in args.split()[1:] if a not in ("STATIC", "SHARED", "OBJECT", "MODULE")]
        if any(a.endswith((".cpp", ".cu")) or re.fullmatch(r"\$\{\w+\}", a) for a in sources):
            count += 1
    return count


def folder_problems(folder):
    problems = []
    cmake = folder / "CMakeLists.txt"
    if not cmake.is_file():
        problems.append(f"{folder.name}/: no CMakeLists.txt (a folder of src/tools is one library)")
    elif library_count(cmake.read_text()) != 1:
        problems.append(f"{folder.name}/CMakeLists.txt: defines {library_count(cmake.read_text())} libraries, not one")
    home = "crosstrain::" + folder.name
    for path in sorted(p for p in folder.iterdir() if p.suffix in SOURCE_SUFFIXES):
        for name, body in file_scope_namespaces(path.read_text(errors="replace")):
            if name == "" or name == home or name.startswith(home + "::"):
                continue
            if only_forward_declarations(body):
                continue
            problems.append(f"{folder.name}/{path.name}: declares in namespace {name}, not {home}")
    return problems


def include_graph(root):
    """folder -> the other folders of root its sources (subfolders included) include."""
    graph = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        deps = set()
        for path in folder.rglob("*"):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                deps.update(TOOLS_INCLUDE.findall(path.read_text(errors="replace")))
        deps.discard(folder.name)
        graph[folder.name] = sorted(d for d in deps if (root / d).is_dir())
    return graph


def include_cycles(graph):
    """Each elementary cycle found by a depth-first walk, once, starting at its smallest name."""
    cycles, seen = [], set()

    def walk(path):
        for nxt in graph.get(path[-1], []):
            if nxt == path[0]:
                key = frozenset(path)
                if key not in seen:
                    seen.add(key)
                    cycles.append(path + [nxt])
            elif nxt not in path and nxt > path[0]:
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return cycles


LINK = re.compile(r"target_link_libraries\s*\(\s*([\w$\{\}]+)([^)]*)\)")
LIBRARY = re.compile(r"^\s*add_library\s*\(\s*(\w+)", re.M)


def folder_libraries(root):
    """folder -> the libraries its CMakeLists files (subfolders included) define, and
    library -> the libraries it links, from every CMakeLists.txt under root."""
    owned, links = {}, {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        owned[folder.name] = set()
        for cmake in folder.rglob("CMakeLists.txt"):
            text = re.sub(r"#[^\n]*", "", cmake.read_text(errors="replace"))
            owned[folder.name].update(LIBRARY.findall(text))
            for target, args in LINK.findall(text):
                words = [w for w in args.split() if w not in ("PUBLIC", "PRIVATE", "INTERFACE")]
                links.setdefault(target, set()).update(words)
    return owned, links


def reachable(start, links):
    seen, todo = set(), list(start)
    while todo:
        lib = todo.pop()
        for nxt in links.get(lib, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def upward_includes(root):
    """One line per (folder, included folder) pair whose include no link of the folder backs."""
    owned, links = folder_libraries(root)
    problems = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        linked = reachable(owned[folder.name], links)
        first = {}
        for path in sorted(folder.rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                for dep in TOOLS_INCLUDE.findall(path.read_text(errors="replace")):
                    if dep != folder.name and (root / dep).is_dir():
                        first.setdefault(dep, path.relative_to(root).as_posix())
        for dep, path in sorted(first.items()):
            if owned[folder.name] and not (owned.get(dep, set()) & linked):
                problems.append(f"{path}: includes tools/{dep}/, which no library of {folder.name}/ links "
                                f"(an include against the build's direction: link it, or move the code)")
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    if not root.is_dir():
        print(f"layout_check: {root} is not a directory", file=sys.stderr)
        return 2
    problems = [f"{p.name}: a source file at the root of {root.name}/ (each belongs to a folder, one library each)"
                for p in sorted(root.iterdir()) if p.is_file() and p.suffix in SOURCE_SUFFIXES]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        problems += folder_problems(folder)
    problems += [f"include cycle: {' -> '.join(c)} (a folder may include only folders that do not include it back)"
                 for c in include_cycles(include_graph(root))]
    problems += upward_includes(root)
    for line in problems:
        print(line)
    print(f"layout_check: {len(problems)} problem(s) in {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
