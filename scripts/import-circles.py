#!/usr/bin/env python3
"""Finds import circles between the files of a crate.

A file depends on another when it names an item of it: in a `use` line, or inline as
`crate::a::b::Item` / `super::Item`. A name re-exported by a parent's `pub use` is followed to the
file that defines it, so a facade (`agent.rs` re-exporting its children) is not itself a circle;
`mod` declarations are not dependencies. Files that depend on each other, directly or through
others, form a circle (a strongly connected component of more than one file).

Usage: scripts/import-circles.py [-v] CRATE_DIR...
Prints every circle (with -v, the imports that close it) and exits 1 if any crate has one.
"""

import os
import re
import sys

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+)*"
    r"(?:struct|enum|trait|fn|type|const|static|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
MACRO = re.compile(r"^\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", re.M)
USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", re.M | re.S)
INLINE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::(?:[A-Za-z_][A-Za-z0-9_]*))+)")
# Comments, strings and character literals, matched left to right in one pass so that a quote
# inside a comment, a `//` inside a string, a raw string's inner quotes or the character `'"'`
# cannot start or end the wrong one. A lifetime (`'a`) has no closing quote, so is left alone.
LITERAL = re.compile(
    r"//[^\n]*"
    r"|/\*.*?\*/"
    r'|(?<![A-Za-z0-9_])b?r(?P<hashes>#*)".*?"(?P=hashes)'
    r'|(?<![A-Za-z0-9_])b?"(?:\\.|[^"\\])*"'
    r"|(?<![A-Za-z0-9_])b?'(?:\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]{1,6}\}|.)|[^\\'\n])'",
    re.S,
)


def strip(text):
    def blank(match):
        token = match.group(0)
        return "" if token.startswith("/") else '""'

    return LITERAL.sub(blank, text)


def module_files(src):
    """Maps a module path (tuple) to its file, for one crate's src folder."""
    modules = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[0] == "bin":
                continue
            if rel in (["lib"], ["main"]):
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            else:
                key = tuple(rel)
            modules[key] = path
    return modules


def expand(tree):
    """Expands `a::{b, c::{d, e}}` into paths, each a list of segments."""
    tree = re.sub(r"\s*::\s*", "::", re.sub(r"\s+", " ", tree))
    out = []

    def walk(prefix, part):
        brace = part.find("{")
        if brace < 0:
            for piece in split_top(part):
                if piece:
                    out.append(prefix + piece.strip().split(" as ")[0].split("::"))
            return
        head = part[:brace].strip().rstrip(":")
        inner = part[brace + 1 : part.rfind("}")]
        base = prefix + ([s for s in head.split("::") if s] if head else [])
        for piece in split_top(inner):
            if piece.strip():
                walk(base, piece.strip())

    for top in split_top(tree):
        if top.strip():
            walk([], top.strip())
    return out


def split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p]


class Crate:
    def __init__(self, src):
        self.modules = module_files(src)
        self.text = {}
        self.items = {}
        self.reexports = {}
        for key, path in self.modules.items():
            with open(path, encoding="utf-8") as f:
                text = strip(f.read())
            self.text[key] = text
            self.items[key] = set(ITEM.findall(text)) | set(MACRO.findall(text))
            exports = {}
            for vis, tree in USE.findall(text):
                if not vis:
                    continue
                for path_ in expand(tree):
                    absolute = self.absolute(key, path_)
                    if absolute:
                        exports[absolute[-1]] = absolute
            self.reexports[key] = exports

    def absolute(self, here, path):
        """A path's segments from the crate root, or None for another crate's path."""
        path = [s for s in path if s]
        if not path:
            return None
        if path[0] == "crate":
            return path[1:]
        if path[0] in ("super", "self"):
            base = list(here)
            while path and path[0] in ("super", "self"):
                if path[0] == "super":
                    base = base[:-1]
                path = path[1:]
            return base + path
        if tuple(here + (path[0],)) in self.modules:
            return list(here) + path
        return None

    def resolve(self, path, seen=None):
        """The file that defines the item a path names."""
        seen = seen or set()
        key = ()
        i = 0
        while i < len(path) and tuple(path[: i + 1]) in self.modules:
            i += 1
            key = tuple(path[:i])
        rest = path[i:]
        if not rest or rest[0] == "*":
            return key
        name = rest[0]
        if name in self.items[key]:
            return key
        target = self.reexports[key].get(name)
        if target and tuple(target) not in seen:
            seen.add(tuple(target))
            return self.resolve(target + rest[1:], seen)
        return key

    def edges(self):
        graph = {key: set() for key in self.modules}
        for key, text in self.text.items():
            paths = []
            for vis, tree in USE.findall(text):
                if vis:
                    continue
                paths.extend(expand(tree))
            body = USE.sub("", text)
            for inline in INLINE.findall(body):
                paths.append(inline.split("::"))
            in_tests = "mod tests" in text
            for path in paths:
                absolute = self.absolute(key, path)
                if absolute is None:
                    continue
                target = self.resolve(absolute)
                if target != key and not (in_tests and target == key[:-1] and path[:1] == ["super"] and path[-1] == "*"):
                    graph[key].add(target)
        return graph


def circles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def main(argv):
    verbose = argv[:1] == ["-v"]
    argv = argv[1:] if verbose else argv
    status = 0
    for crate in argv:
        found = Crate(os.path.join(crate, "src"))
        graph = found.edges()
        parts = circles(graph)
        for part in parts:
            files = [os.path.relpath(found.modules[k]) for k in part]
            print(f"{crate}: circle of {len(files)} files: {' '.join(files)}")
            if verbose:
                for k in part:
                    for t in sorted(graph[k] & set(part)):
                        print(f"    {'::'.join(k)} -> {'::'.join(t)}")
        if parts:
            status = 1
        elif not parts:
            print(f"{crate}: no import circle")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
