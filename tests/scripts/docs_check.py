"""README lists every document in docs/, every picture a document shows exists and stays small, and
every picture in docs/img/ is shown somewhere. usage: docs_check.py REPO"""
import os
import re
import sys

MAX_PICTURE_BYTES = 150 * 1024


def main(repo):
    problems = []
    readme = open(os.path.join(repo, "README.md"), encoding="utf-8").read()
    docs = sorted(f for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    problems += [f"README.md: docs/{d} is not in its list of documents" for d in docs if f"docs/{d}" not in readme]
    shown = set()
    for name, base in [("README.md", repo)] + [(f"docs/{d}", os.path.join(repo, "docs")) for d in docs]:
        text = open(os.path.join(repo, name), encoding="utf-8").read()
        for target in re.findall(r'!\[[^\]]*\]\(([^)]+\.png)\)|<img src="([^"]+\.png)"', text):
            path = os.path.normpath(os.path.join(base, target[0] or target[1]))
            shown.add(path)
            if not os.path.isfile(path):
                problems.append(f"{name}: shows {target[0] or target[1]}, which does not exist")
            elif os.path.getsize(path) > MAX_PICTURE_BYTES:
                problems.append(f"{name}: {target[0] or target[1]} is {os.path.getsize(path) // 1024} KiB (> 150)")
    img = os.path.join(repo, "docs", "img")
    for f in sorted(os.listdir(img)) if os.path.isdir(img) else []:
        if os.path.normpath(os.path.join(img, f)) not in shown:
            problems.append(f"docs/img/{f}: shown by no document")
    for p in problems:
        print(p)
    print(f"docs_check: {len(problems)} problem(s), {len(docs)} documents, {len(shown)} pictures")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
