"""No two modules of jaxmagic import each other, even through others or from inside a
function: each module can be read, and imported, knowing only those below it."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "jaxmagic"


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def imports(name: str, path: Path, is_package: bool, known) -> set[str]:
    """The package's modules `name` imports, at its top or in any function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".")[: None if is_package else -1]
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("jaxmagic") and target != name:
                out.add(target)
    return out


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph`, as the modules along it, or None."""
    state: dict[str, int] = {}           # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_package_has_no_import_cycle():
    known = modules()
    graph = {m: imports(m, p, is_package, known) for m, (p, is_package) in known.items()}
    assert sum(map(len, graph.values())) > 100      # the imports were read
    found = cycle(graph)
    assert found is None, " -> ".join(found)


def test_an_import_inside_a_function_counts():
    known = modules()
    path, is_package = known["jaxmagic.core.libraries"]
    assert "jaxmagic.core.libraries.flax_nnx" in imports("jaxmagic.core.libraries", path,
                                                         is_package, known)


def test_a_cycle_through_other_modules_is_named():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
