#!/usr/bin/env python3
"""Docs.ArchitectureDrawnFromTheBuild: docs/architecture.md's table of libraries is the build's.

The build's graph is read from the CMake calls that make it: each hipguard_layer(NAME SOURCES ...
PUBLIC_HEADERS ... DEPENDS ...) in src/CMakeLists.txt, and the add_library / add_executable /
target_link_libraries of the libraries and programs outside the layers (hipguard_core,
hipguard_archive, the CLI `hipguard`, the shim `hipguard_shim`). The table between the markers
<!-- build-graph:begin --> and <!-- build-graph:end --> must name the same targets, each with the
directories of its sources, the hipguard targets it links and its public headers. A layer, an edge
or a header added to the build and not to the page (or the other way round) fails the test.
"""
import os
import re
import sys

CALL = re.compile(r"\b(hipguard_layer|add_library|add_executable|target_link_libraries|target_sources)\(([^()]*)\)",
                  re.S)
KEYWORDS = {"SOURCES", "PUBLIC_HEADERS", "DEPENDS", "PUBLIC", "PRIVATE", "INTERFACE", "STATIC", "SHARED"}


def words(text):
    text = re.sub(r"#[^\n]*", "", text)
    return text.split()


def build_graph(root):
    """{target: {"dirs": set, "links": set, "headers": set}} from the CMake files."""
    graph = {}

    def node(name):
        return graph.setdefault(name, {"dirs": set(), "links": set(), "headers": set()})

    for cmake, base in (("src/CMakeLists.txt", "src"), ("interpose/CMakeLists.txt", "interpose")):
        text = re.sub(r"#[^\n]*", "", open(os.path.join(root, cmake), encoding="utf-8").read())
        for call, args in CALL.findall(text):
            w = words(args)
            w = [x.replace("${CMAKE_CURRENT_SOURCE_DIR}/", "") for x in w]
            if not w:
                continue
            if call == "hipguard_layer":
                name, part = "hipguard_" + w[0], None
                n = node(name)
                for x in w[1:]:
                    if x in KEYWORDS:
                        part = x
                    elif part == "SOURCES" and x.endswith(".cpp") and not x.startswith("$"):
                        n["dirs"].add(os.path.dirname(os.path.join(base, x)))
                    elif part == "PUBLIC_HEADERS":
                        n["headers"].add(os.path.basename(x))
                    elif part == "DEPENDS" and x.startswith("hipguard_"):
                        n["links"].add(x)
            elif call in ("add_library", "add_executable", "target_sources"):
                name = w[0]
                if not (name.startswith("hipguard") and not name.startswith("hipguard_layer")):
                    continue
                if name == "hipguard_internal_headers":
                    continue
                n = node(name)
                for x in w[1:]:
                    if x.endswith(".cpp") and "/" in x and not x.startswith("$"):
                        n["dirs"].add(os.path.dirname(os.path.join(base, x)))
                    elif x.endswith(".cpp") and not x.startswith("$"):
                        n["dirs"].add(base)
            elif call == "target_link_libraries":
                name = w[0]
                if name in graph:
                    graph[name]["links"].update(
                        x for x in w[1:] if x.startswith("hipguard_") and x != "hipguard_internal_headers")
    return graph


def documented_graph(doc):
    """The same shape, from the page's table: | `target` | `dir` ... | `link` ... | `header` ... |."""
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"<!-- build-graph:begin -->(.*?)<!-- build-graph:end -->", text, re.S)
    if not m:
        sys.exit(f"{doc}: no <!-- build-graph:begin --> ... <!-- build-graph:end --> table")
    graph = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        ticks = lambda c: set(re.findall(r"`([^`]+)`", c))
        name = re.match(r"`([^`]+)`", cells[0]).group(1)
        graph[name] = {"dirs": {d.rstrip("/") for d in ticks(cells[1]) if "/" in d}, "links": ticks(cells[2]),
                       "headers": ticks(cells[3])}
    return graph


def main(root):
    built = build_graph(root)
    drawn = documented_graph(os.path.join(root, "docs/architecture.md"))
    problems = []
    for name in sorted(set(built) | set(drawn)):
        if name not in drawn:
            problems.append(f"{name}: built, not in docs/architecture.md's table")
            continue
        if name not in built:
            problems.append(f"{name}: in docs/architecture.md's table, not built")
            continue
        for column in ("dirs", "links", "headers"):
            if built[name][column] != drawn[name][column]:
                problems.append(f"{name} {column}: the build has {sorted(built[name][column])}, "
                                f"the page {sorted(drawn[name][column])}")
    for p in problems:
        print(p)
    print(f"{len(built)} targets built, {len(drawn)} drawn, {len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
