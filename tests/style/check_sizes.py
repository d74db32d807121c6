#!/usr/bin/env python3
"""Style.Sizes: no file of the product (src/, include/, interpose/) over 500 lines, no function over 80.

Functions are found by their braces, after comments and literals are blanked: a '{' that follows a
parameter list ')' (and const, noexcept, override, a trailing return type) outside another function
opens one; lambdas and blocks inside it count as its lines. The count is the lines from the line of
its '{' to the line of its '}'.
"""
import os
import re
import sys

MAX_FILE, MAX_FUNCTION = 500, 80
FN_TAIL = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(final)?\s*(->\s*[\w:<>*&, ]+)?\s*(try)?\s*$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\([^{};]*\)\s*$")
LAMBDA = re.compile(r"\]\s*(\([^{}]*\))?\s*(mutable)?\s*(->\s*[\w:<>*&, ]+)?\s*$")


def blank(src):
    keep_lines = lambda m: "\n" * m.group(0).count("\n")
    src = re.sub(r"//[^\n]*", "", src)
    src = re.sub(r"/\*.*?\*/", keep_lines, src, flags=re.S)
    src = re.sub(r'R"([^(]*)\((.*?)\)\1"', lambda m: '""' + keep_lines(m), src, flags=re.S)
    src = re.sub(r'"(\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", src)


def functions(src):
    """(first line, lines) of each outermost function body."""
    text, stack, line, out = blank(src), [], 1, []
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "{":
            before = text[max(0, i - 300):i]
            in_fn = any(kind == "fn" for kind, _ in stack)
            fn = FN_TAIL.search(before) and not CONTROL.search(before) and not LAMBDA.search(before)
            stack.append(("fn" if fn and not in_fn else "block", line))
        elif ch == "}" and stack:
            kind, start = stack.pop()
            if kind == "fn":
                out.append((start, line - start + 1))
    return out


def main(root):
    problems = []
    for top in ("src", "include", "interpose"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".def")):
                    continue
                path = os.path.join(d, f)
                src = open(path, encoding="utf-8", errors="replace").read()
                rel = os.path.relpath(path, root)
                n = src.count("\n")
                if n > MAX_FILE:
                    problems.append(f"{rel}: {n} lines (at most {MAX_FILE})")
                if f.endswith(".def"):
                    continue
                for start, lines in functions(src):
                    if lines > MAX_FUNCTION:
                        problems.append(f"{rel}:{start}: a function of {lines} lines (at most {MAX_FUNCTION})")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")))
