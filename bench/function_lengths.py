#!/usr/bin/env python3
"""Function lengths in include/ and examples/ (issue 27: none over 100 lines, at most 8 over 60).

A function is a definition at namespace or class level: a line ending in '{' whose text holds a parameter list
and is not a namespace, class, struct, enum, union, control statement or initialiser; it runs from its first
signature line to the matching '}' (lambdas inside count towards it). A definition whose comment says it is
"A data table" is listed apart, as the issue allows. Files must be clang-formatted (one definition per line).
Usage: bench/function_lengths.py [--over N] [--check] [PATH ...]   (default: include examples)
"""
import re
import sys
from pathlib import Path

NOT_FUNCTION = re.compile(r"^\s*(namespace|class|struct|enum|union|if|for|while|switch|do|else|try|catch|return)\b")


def strip_code(line):
    """The line without string and char literals and // comments (braces inside them do not count)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def functions(path):
    lines = path.read_text().splitlines()
    code = [strip_code(l) for l in lines]
    out, depth, i = [], 0, 0
    scopes = []  # brace depths that are namespaces or classes (definitions may start inside them)
    while i < len(lines):
        text = code[i]
        at_scope = depth == 0 or (scopes and scopes[-1] == depth)
        stripped = text.strip()
        start = i
        while start > 0 and code[start - 1].strip() and not code[start - 1].strip().endswith((";", "}", "{", ":")) \
                and not code[start - 1].strip().startswith(("template", "#")):
            start -= 1
        signature = " ".join(c.strip() for c in code[start:i + 1])
        if at_scope and stripped.endswith("{") and not NOT_FUNCTION.match(code[start]) and "(" in signature \
                and not re.search(r"=\s*\{$", stripped) and not stripped.startswith("#"):
            d, j = 0, i
            while j < len(lines):
                d += code[j].count("{") - code[j].count("}")
                if d <= 0:
                    break
                j += 1
            table = any("data table" in lines[k].lower() for k in range(max(0, start - 3), start + 1))
            name = re.search(r"([A-Za-z_][A-Za-z0-9_:~]*)\s*\(", signature)
            out.append((j - start + 1, f"{path}:{start + 1}", name.group(1) if name else "?", table))
            i = j + 1
            continue
        opens, closes = text.count("{"), text.count("}")
        if opens > closes and (re.match(r"^\s*(namespace|class|struct|union)\b", text) or
                               re.match(r"^\s*(template\s*<.*>\s*)?(class|struct)\b", text)):
            scopes.append(depth + 1)
        depth += opens - closes
        while scopes and depth < scopes[-1]:
            scopes.pop()
        i += 1
    return out


def main(argv):
    over, check, paths = 60, False, []
    it = iter(argv)
    for a in it:
        if a == "--over":
            over = int(next(it))
        elif a == "--check":
            check = True
        else:
            paths.append(a)
    files = [f for p in (paths or ["include", "examples"]) for f in sorted(Path(p).rglob("*.[ch]pp"))]
    found = sorted((f for p in files for f in functions(p)), reverse=True)
    code = [f for f in found if not f[3]]
    long60 = [f for f in code if f[0] > 60]
    long100 = [f for f in code if f[0] > 100]
    for n, where, name, table in found:
        if n > over:
            print(f"{n:5d}  {name:<40} {where}{'  (data table)' if table else ''}")
    print(f"functions: {len(found)}; over 100 lines: {len(long100)}; over 60 lines: {len(long60)} "
          f"(data tables apart: {sum(1 for f in found if f[3])})")
    if check and (long100 or len(long60) > 8):
        print("over the budget: none over 100 lines, at most 8 over 60")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
